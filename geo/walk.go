package geo

// Walk remembers the MaxMind records a walk of many addresses decoded,
// by their offset in the database: neighbouring networks mostly share
// them, and decoding is most of a lookup's cost. One walk's, of one DB;
// not safe for concurrent use.
type Walk struct {
	cities, asns map[uintptr]walked
}

// walkMax bounds each of a Walk's maps (about 170 bytes an entry): past
// it, a map starts over; neighbours share records, far networks rarely.
const walkMax = 1 << 16

// walked is what a record gave: the fields it fills, its spread units.
type walked struct {
	loc   Location
	found bool
}

// NewWalk starts a walk.
func NewWalk() *Walk {
	return &Walk{cities: map[uintptr]walked{}, asns: map[uintptr]walked{}}
}

func (w *Walk) city(off uintptr) (walked, bool) {
	if w == nil {
		return walked{}, false
	}
	c, ok := w.cities[off]
	return c, ok
}

func (w *Walk) setCity(off uintptr, c walked) {
	if w != nil {
		if len(w.cities) >= walkMax {
			clear(w.cities)
		}
		w.cities[off] = c
	}
}

func (w *Walk) asn(off uintptr) (walked, bool) {
	if w == nil {
		return walked{}, false
	}
	a, ok := w.asns[off]
	return a, ok
}

func (w *Walk) setASN(off uintptr, a walked) {
	if w != nil {
		if len(w.asns) >= walkMax {
			clear(w.asns)
		}
		w.asns[off] = a
	}
}
