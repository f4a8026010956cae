package sign

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/miekg/dns"
)

// maxKeyFile bounds a key file's size; a BIND key file is well under 4 KiB.
const maxKeyFile = 64 << 10

// key is one parsed key pair and the digest of its files' contents.
type key struct {
	base string
	pub  *dns.DNSKEY
	priv crypto.Signer
	tag  uint16
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

// loadKey reads base.key and base.private, as plugin/dnssec's ParseKeyFile
// does, but keeps the private key: plugin/dnssec's is unexported, and the
// signing here sets the RRSIG's original TTL itself (see signSet). The
// digest is over the very bytes parsed.
func loadKey(f string) (*key, error) {
	base := keyBase(f)
	pubText, err := readKeyFile(base + ".key")
	if err != nil {
		return nil, err
	}
	privText, err := readKeyFile(base + ".private")
	if err != nil {
		return nil, err
	}
	rr, err := dns.ReadRR(bytes.NewReader(pubText), base+".key")
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", base, err)
	}
	pub, ok := rr.(*dns.DNSKEY)
	if !ok {
		return nil, fmt.Errorf("key %s.key: no public key found", base)
	}
	p, err := pub.ReadPrivateKey(bytes.NewReader(privText), base+".private")
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", base, err)
	}
	priv, ok := p.(crypto.Signer) // RSA, ECDSA and Ed25519 keys are
	if !ok {
		return nil, fmt.Errorf("key %s.private: no private key found", base)
	}
	if pub.Flags&dns.ZONE == 0 {
		return nil, fmt.Errorf("key %s.key: flags %d: not a zone key (flag 256 unset)", base, pub.Flags)
	}
	if pub.Flags&dns.REVOKE != 0 {
		return nil, fmt.Errorf("key %s.key: flags %d: key is revoked", base, pub.Flags)
	}
	k := &key{base: base, pub: pub, priv: priv, tag: pub.KeyTag()}
	h := sha256.New()
	h.Write(pubText)
	h.Write(privText)
	h.Sum(k.sum[:0])
	return k, nil
}

// readKeyFile reads file p, refusing files over maxKeyFile.
func readKeyFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a key file", p, maxKeyFile)
	}
	return b, nil
}

func (k *key) ksk() bool { return k.pub.Flags&dns.SEP != 0 }

var errNoKeys = errors.New("dnssec: no key files")
