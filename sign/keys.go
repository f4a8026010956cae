package sign

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/coredns/coredns/plugin/dnssec"

	"github.com/miekg/dns"
)

// maxKeyFile bounds a key file's size; a BIND key file is well under 4 KiB.
const maxKeyFile = 64 << 10

// key is one parsed key pair and the digest of its files' contents.
type key struct {
	base string
	k    *dnssec.DNSKEY
	sum  [sha256.Size]byte
}

// keyBase strips the .key or .private suffix: a key is named by its base,
// as dnssec-keygen writes it (Kexample.org.+013+12345).
func keyBase(f string) string {
	if b, ok := strings.CutSuffix(f, ".key"); ok {
		return b
	}
	if b, ok := strings.CutSuffix(f, ".private"); ok {
		return b
	}
	return f
}

// loadKey reads base.key and base.private.
func loadKey(f string) (*key, error) {
	base := keyBase(f)
	h := sha256.New()
	for _, p := range []string{base + ".key", base + ".private"} {
		if err := digest(h, p); err != nil {
			return nil, err
		}
	}
	k, err := dnssec.ParseKeyFile(base+".key", base+".private")
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", base, err)
	}
	if k.K.Flags&dns.ZONE == 0 {
		return nil, fmt.Errorf("key %s.key: flags %d: not a zone key (flag 256 unset)", base, k.K.Flags)
	}
	if k.K.Flags&dns.REVOKE != 0 {
		return nil, fmt.Errorf("key %s.key: flags %d: key is revoked", base, k.K.Flags)
	}
	kk := &key{base: base, k: k}
	h.Sum(kk.sum[:0])
	return kk, nil
}

// digest adds file p's contents to h, refusing files over maxKeyFile.
func digest(h io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(h, io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if n > maxKeyFile {
		return fmt.Errorf("%s: larger than %d bytes, not a key file", p, maxKeyFile)
	}
	return nil
}

func isKSK(k *dnssec.DNSKEY) bool { return k.K.Flags&dns.SEP != 0 }

var errNoKeys = errors.New("dnssec: no key files")
