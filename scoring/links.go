package scoring

// Links is the network-quality matrix for one node table: what probes
// inside the carriers measured from a province's carrier to each node.
// It is immutable once built.
type Links struct {
	m map[linkKey]Link
}

// Link is one row: a round trip and a loss rate.
type Link struct {
	RTTMs float64
	Loss  float64 // 0..1
}

type linkKey struct {
	province, isp string // either may be "": a wider row
	node          int32
}

// NewLinks returns an empty matrix.
func NewLinks() *Links { return &Links{m: map[linkKey]Link{}} }

// Set records the row from province's carrier isp (either may be "") to
// node i.
func (l *Links) Set(province, isp string, i int, link Link) {
	l.m[linkKey{province, isp, int32(i)}] = link
}

// Len is the number of rows.
func (l *Links) Len() int {
	if l == nil {
		return 0
	}
	return len(l.m)
}

// Link returns the most specific row for a client of province and isp to
// node i: province and carrier, then the carrier, then the province.
func (l *Links) Link(province, isp string, i int) (Link, bool) {
	if l == nil || len(l.m) == 0 {
		return Link{}, false
	}
	n := int32(i)
	if province != "" && isp != "" {
		if r, ok := l.m[linkKey{province, isp, n}]; ok {
			return r, true
		}
	}
	if isp != "" {
		if r, ok := l.m[linkKey{"", isp, n}]; ok {
			return r, true
		}
	}
	if province != "" {
		if r, ok := l.m[linkKey{province, "", n}]; ok {
			return r, true
		}
	}
	return Link{}, false
}
