package testredis

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// StartTLS starts redis-server answering TLS only, with a certificate for
// 127.0.0.1 from a CA of its own, whose PEM file is CAFile.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	ca, cert, key := writeCerts(t, dir)
	pool := x509.NewCertPool()
	data, err := os.ReadFile(ca)
	if err != nil || !pool.AppendCertsFromPEM(data) {
		t.Fatalf("Cannot read the test CA %s: %v", ca, err)
	}
	s := &Server{t: t, bin: serverBin(t), dir: dir, CAFile: ca, tls: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	t.Cleanup(s.Stop)
	for range 3 {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("Cannot find a free port: %v", err)
		}
		// --port 0 turns plain TCP off; the TLS port is the server's port.
		s.extra = []string{"--port", "0", "--tls-port", strconv.Itoa(s.port),
			"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients", "no"}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("Cannot start redis-server with TLS: %v", err)
	return nil
}

// writeCerts writes a CA and a certificate for 127.0.0.1 it signed, as
// PEM files in dir.
func writeCerts(t testing.TB, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testredis CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caTmpl, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{ca, "CERTIFICATE", caDER}, {cert, "CERTIFICATE", srvDER}, {key, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, cert, key
}
