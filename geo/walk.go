package geo

// Walk remembers the MaxMind records a walk of many addresses decoded,
// by their offset in the database: neighbouring networks mostly share
// them, and decoding is most of a lookup's cost. One walk's, of one DB;
// not safe for concurrent use.
type Walk struct{ cities, asns walkMemo }

// walkMax bounds each of a Walk's memos (about 170 bytes an entry): past
// it, a memo starts over; neighbours share records, far networks rarely.
const walkMax = 1 << 16

// walked is what a record gave: the fields it fills, its spread units.
type walked struct {
	loc   Location
	found bool
}

// walkMemo is one database's records by offset; nil remembers nothing.
type walkMemo map[uintptr]walked

func (m walkMemo) get(off uintptr) (walked, bool) {
	r, ok := m[off]
	return r, ok
}

func (m walkMemo) put(off uintptr, r walked) {
	if m == nil {
		return
	}
	if len(m) >= walkMax {
		clear(m)
	}
	m[off] = r
}

// NewWalk starts a walk.
func NewWalk() *Walk { return &Walk{cities: walkMemo{}, asns: walkMemo{}} }

// memos are w's memos; none without a walk.
func (w *Walk) memos() (cities, asns walkMemo) {
	if w == nil {
		return nil, nil
	}
	return w.cities, w.asns
}
