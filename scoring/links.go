package scoring

// Links is the network-quality matrix for one node table: what probes
// inside the carriers measured from a province's carrier to each node.
// It is immutable once built.
type Links struct {
	m map[linkKey]Link
}

// Link is one row: a round trip and a loss rate, and what the edges'
// feed measured when a fresh cell stands behind it.
type Link struct {
	RTTMs float64 // the file's round trip, or the cell's TTFB p50; < 0: neither
	Loss  float64 // 0..1
	// Feed: a fresh feed cell; ErrRate is its 5xx ratio, Hit its cache
	// hit ratio (< 0: unknown), Shed the share of its place's subnets it
	// still turns away while coming back from max_error_rate.
	Feed    bool
	ErrRate float64
	Hit     float64
	Shed    float64
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

// Clone returns a copy that can be added to.
func (l *Links) Clone() *Links {
	out := NewLinks()
	if l != nil {
		for k, v := range l.m {
			out.m[k] = v
		}
	}
	return out
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
