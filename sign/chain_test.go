package sign

import (
	"encoding/base32"
	"encoding/hex"
	"testing"

	"github.com/miekg/dns"
)

func TestHashMatchesLibrary(t *testing.T) {
	for _, salt := range []string{"", "aabbccdd"} {
		for _, iter := range []uint16{0, 1, 5} {
			ch := &Chain{iter: iter, salt: salt}
			ch.saltRaw, _ = hex.DecodeString(salt)
			for _, n := range []string{"example.org.", "WWW.Example.org.", "a.b.c.example.org.", "."} {
				h, ok := ch.hash(n, "")
				want := dns.HashName(n, dns.SHA1, iter, salt)
				if got := base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:]); !ok || got != want {
					t.Errorf("%s %d %q: %s, want %s", n, iter, salt, got, want)
				}
				h, _ = ch.hash(n, "*")
				want = dns.HashName("*."+n, dns.SHA1, iter, salt)
				if n == "." {
					want = dns.HashName("*.", dns.SHA1, iter, salt)
				}
				if got := base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:]); got != want {
					t.Errorf("*.%s: %s, want %s", n, got, want)
				}
			}
		}
	}
}
