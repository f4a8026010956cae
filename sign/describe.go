package sign

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// Describe names the zone's keys by tag for the startup log: those that
// sign, and those only published in the DNSKEY RRset.
func (s *Signer) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "DNSSEC for %s: signing with %s", s.zone, keyList(s.dnskey[:len(s.keys)]))
	if pub := s.dnskey[len(s.keys):]; len(pub) > 0 {
		fmt.Fprintf(&b, "; published, not signing: %s", keyList(pub))
	}
	return b.String()
}

// keyList lists keys as "key 12345 (KSK, ECDSAP256SHA256)".
func keyList(keys []dns.DNSKEY) string {
	parts := make([]string, len(keys))
	for i := range keys {
		role := "ZSK"
		if keys[i].Flags&dns.SEP != 0 {
			role = "KSK"
		}
		parts[i] = fmt.Sprintf("key %d (%s, %s)", keys[i].KeyTag(), role, dns.AlgorithmToString[keys[i].Algorithm])
	}
	return strings.Join(parts, ", ")
}
