package geo

import (
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"

	"github.com/gslbdns/gslb/internal/suggest"
)

// Normalized carrier names.
const (
	Telecom = "telecom"
	Unicom  = "unicom"
	Mobile  = "mobile"
	Edu     = "edu"
	CBN     = "cbn" // China Broadcast Network (广电)
)

// Carriers maps ASNs and ISP/organisation names to carriers. Build it before
// sharing it: Carrier is safe for concurrent use, AddASN and AddName are not.
type Carriers struct {
	asn    map[uint32]string
	names  []namePattern // checked last-added first, so extensions win
	digest uint64
}

type namePattern struct {
	sub     string // ASCII lower-cased
	carrier string
}

var defaultASNs = map[string][]uint32{
	Telecom: {4134, 4809, 4811, 4812, 4813, 4816, 4835, 23724, 17633, 17638, 17785, 58461, 58466, 58563,
		134756, 134774, 136188, 136190, 140061, 140292},
	Unicom: {4837, 4808, 9800, 9929, 10099, 17621, 17622, 17623, 17816, 135061},
	Mobile: {9808, 9231, 9394, 24400, 24444, 24445, 24547, 38019, 56040, 56041, 56042, 56043, 56044, 56045,
		56046, 56047, 56048, 58453, 58807, 132525, 134810},
	Edu: {4538, 4565, 23910},
}

// Built-in name patterns, matched as case-insensitive substrings, the
// generic ones first (later patterns are checked first).
var defaultNames = []namePattern{
	{"unicom", Unicom},
	{"chinanet", Telecom},
	{"china telecom", Telecom},
	{"chinatelecom", Telecom},
	{"china unicom", Unicom},
	{"chinaunicom", Unicom},
	{"china169", Unicom},
	{"china netcom", Unicom},
	{"cnc group", Unicom},
	{"cncgroup", Unicom},
	{"china mobile", Mobile},
	{"chinamobile", Mobile},
	{"cmnet", Mobile},
	{"china tietong", Mobile},
	{"cernet", Edu},
	{"china education and research network", Edu},
	{"中国电信", Telecom},
	{"中国联通", Unicom},
	{"中国移动", Mobile},
	{"教育网", Edu},
	// The carrier names of Chinese databases (IPIP.net's isp_domain):
	// 电信DNS服务器, 中移铁通, 广电网 and the like.
	{"电信", Telecom},
	{"联通", Unicom},
	{"网通", Unicom},
	{"移动", Mobile},
	{"铁通", Mobile},
	{"广电", CBN},
}

// DefaultCarriers returns the built-in table of the big Chinese carriers'
// ASNs and ISP names; the result may be extended.
func DefaultCarriers() *Carriers {
	c := &Carriers{asn: make(map[uint32]string, 64), names: make([]namePattern, len(defaultNames))}
	for carrier, asns := range defaultASNs {
		for _, a := range asns {
			c.asn[a] = carrier
		}
	}
	copy(c.names, defaultNames)
	return c.seal()
}

// Clone returns an independent copy, for extending a shared table.
func (c *Carriers) Clone() *Carriers {
	n := &Carriers{asn: make(map[uint32]string, len(c.asnMap()))}
	for k, v := range c.asnMap() {
		n.asn[k] = v
	}
	if c != nil {
		n.names = append([]namePattern(nil), c.names...)
	}
	return n.seal()
}

func (c *Carriers) asnMap() map[uint32]string {
	if c == nil {
		return nil
	}
	return c.asn
}

// AddASN maps asn to carrier (normalized), replacing any earlier mapping.
func (c *Carriers) AddASN(asn uint32, carrier string) {
	if c.asn == nil {
		c.asn = make(map[uint32]string)
	}
	c.asn[asn] = NormalizeCarrier(carrier)
	c.seal()
}

// AddName maps organisation names containing substring (case-insensitive) to
// carrier; it takes precedence over earlier patterns.
func (c *Carriers) AddName(substring, carrier string) {
	sub := strings.ToLower(strings.TrimSpace(substring))
	if sub == "" {
		return
	}
	c.names = append(c.names, namePattern{sub: sub, carrier: NormalizeCarrier(carrier)})
	c.seal()
}

// Carrier returns the normalized carrier of an ASN or organisation name: the
// ASN table first, then the name patterns, else the normalized org name ("" if
// both are empty). A nil table only normalizes org.
func (c *Carriers) Carrier(asn uint32, org string) string {
	if c != nil && asn != 0 {
		if s, ok := c.asn[asn]; ok {
			return s
		}
	}
	if s, ok := c.byName(org); ok {
		return s
	}
	return NormalizeCarrier(org)
}

// byName maps an organisation name by the name patterns.
func (c *Carriers) byName(org string) (string, bool) {
	if c == nil || org == "" {
		return "", false
	}
	for i := len(c.names) - 1; i >= 0; i-- {
		if containsFold(org, c.names[i].sub) {
			return c.names[i].carrier, true
		}
	}
	if s, ok := carrierAliases[strings.ToLower(strings.TrimSpace(org))]; ok {
		return s, true
	}
	return "", false
}

// Extend returns a copy of c with the node table's additions: ASNs and
// organisation-name substrings mapped to carriers. Errors name the entry.
func (c *Carriers) Extend(asns map[uint32]string, names map[string]string) (*Carriers, error) {
	n := c.Clone()
	for _, asn := range slices.Sorted(maps.Keys(asns)) {
		carrier := NormalizeCarrier(asns[asn])
		if carrier == "" {
			return nil, fmt.Errorf("carriers.asn: %d: empty carrier", asn)
		}
		if near, typo := builtinTypo(carrier); typo {
			return nil, fmt.Errorf("carriers.asn: %d: carrier %q looks like a typo of %s: its clients would match no %s node", asn, asns[asn], near, NormalizeCarrier(near))
		}
		n.AddASN(asn, carrier)
	}
	for _, sub := range slices.Sorted(maps.Keys(names)) {
		carrier := NormalizeCarrier(names[sub])
		if strings.TrimSpace(sub) == "" || carrier == "" {
			return nil, fmt.Errorf("carriers.names: %q: empty name or carrier", sub)
		}
		if near, typo := builtinTypo(carrier); typo {
			return nil, fmt.Errorf("carriers.names: %q: carrier %q looks like a typo of %s: its clients would match no %s node", sub, names[sub], near, NormalizeCarrier(near))
		}
		n.AddName(sub, carrier)
	}
	return n, nil
}

// Apply maps a source's raw ASN and organisation name in loc.ISP to the
// carrier. Every source's answer goes through it, once, so that one table
// decides the carrier whichever database or API placed the client. An
// IPIP.net or ip2region answer's carrier name decides over the ASN: those
// databases are the authorities for the carriers of the addresses they
// place in China.
func (c *Carriers) Apply(loc *Location) {
	if overBase[loc.Source] {
		if s, ok := c.byName(loc.ISP); ok {
			loc.ISP = s
			return
		}
	}
	if loc.ISP != "" || loc.ASN != 0 {
		loc.ISP = c.Carrier(loc.ASN, loc.ISP)
	}
}

// Digest identifies the table's content.
func (c *Carriers) Digest() uint64 {
	if c == nil {
		return 0
	}
	return c.digest
}

// seal computes the digest; the table must not change afterwards.
func (c *Carriers) seal() *Carriers {
	c.digest = maphash.String(digestSeed, c.signature())
	return c
}

// signature is the table's content in a canonical form.
func (c *Carriers) signature() string {
	if c == nil {
		return ""
	}
	asns := make([]uint32, 0, len(c.asn))
	for a := range c.asn {
		asns = append(asns, a)
	}
	slices.Sort(asns)
	var b strings.Builder
	for _, a := range asns {
		fmt.Fprintf(&b, "%d=%s;", a, c.asn[a])
	}
	for _, n := range c.names {
		fmt.Fprintf(&b, "%q=%s;", n.sub, n.carrier)
	}
	return b.String()
}

// containsFold reports whether s contains the lower-case pattern sub,
// folding ASCII upper case in s; it does not allocate.
func containsFold(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

var carrierAliases = map[string]string{
	"telecom": Telecom, "ct": Telecom, "ctcc": Telecom, "chinatelecom": Telecom, "china telecom": Telecom, "chinanet": Telecom,
	"电信": Telecom, "中国电信": Telecom,
	"unicom": Unicom, "cu": Unicom, "chinaunicom": Unicom, "china unicom": Unicom, "cuc": Unicom, "cucc": Unicom,
	"netcom": Unicom, "cnc": Unicom, "联通": Unicom, "中国联通": Unicom, "网通": Unicom,
	"mobile": Mobile, "cm": Mobile, "cmcc": Mobile, "cmnet": Mobile, "chinamobile": Mobile, "china mobile": Mobile,
	"移动": Mobile, "中国移动": Mobile, "tietong": Mobile, "铁通": Mobile, "crtc": Mobile,
	"edu": Edu, "cernet": Edu, "education": Edu, "教育网": Edu, "中国教育网": Edu, "教育": Edu,
	"中国教育和科研计算机网": Edu,
	"cbn":         CBN, "广电": CBN, "广电网": CBN, "中国广电": CBN,
}

// Known reports whether carrier (normalized) is one a client can be placed
// on: a built-in carrier or one the table's additions map to.
func (c *Carriers) Known(carrier string) bool {
	switch carrier {
	case Telecom, Unicom, Mobile, Edu, CBN:
		return true
	}
	if c == nil {
		return false
	}
	for _, v := range c.asn {
		if v == carrier {
			return true
		}
	}
	for _, n := range c.names {
		if n.carrier == carrier {
			return true
		}
	}
	return false
}

// CheckCarrier returns an error when word, which maps to carrier, names no
// carrier the table knows: a node or an override with a typo would never
// match a client. The error suggests the nearest known word.
func (c *Carriers) CheckCarrier(word, carrier string) error {
	if strings.TrimSpace(word) == "" || c.Known(carrier) {
		return nil
	}
	hint := ""
	if near, ok := c.nearest(strings.ToLower(strings.TrimSpace(word))); ok {
		hint = " (did you mean " + near + "?)"
	}
	return fmt.Errorf("unknown carrier %q%s: known are telecom, unicom, mobile, edu, cbn, their aliases, and the carriers the node table's carriers: adds",
		word, hint)
}

// nearest is the known carrier word closest to w in edit distance, when
// it is close enough to be a typo of it.
func (c *Carriers) nearest(w string) (string, bool) {
	words := slices.Sorted(maps.Keys(carrierAliases))
	if c != nil {
		for _, v := range c.asn {
			words = append(words, v)
		}
		for _, n := range c.names {
			words = append(words, n.carrier)
		}
	}
	slices.Sort(words)
	return suggest.Nearest(w, words)
}

// builtinTypo returns the built-in carrier word that carrier, which is not
// one, looks like a typo of.
func builtinTypo(carrier string) (string, bool) {
	switch carrier {
	case Telecom, Unicom, Mobile, Edu, CBN:
		return "", false
	}
	if _, alias := carrierAliases[carrier]; alias {
		return "", false
	}
	return suggest.Nearest(carrier, slices.Sorted(maps.Keys(carrierAliases)))
}

// NormalizeCarrier maps a carrier spelling to telecom, unicom, mobile or edu
// ("电信", "China Telecom", "ct" -> telecom, ...); anything else comes back
// lower-cased and trimmed.
func NormalizeCarrier(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if c, ok := carrierAliases[s]; ok {
		return c
	}
	return s
}
