package locate

import (
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gslbdns/gslb/geo"
)

// randomValue is a location with every field but Special set from small
// pools (so that values share places, carriers and strings) and what
// MaxMind said.
func randomValue(r *rand.Rand) (geo.Location, geo.Other) {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	loc := geo.Location{
		Country:        pick("CN", "US", "", "DE"),
		Continent:      pick("AS", "NA", "", "EU"),
		Province:       pick("ZJ", "BJ", "", "CA"),
		City:           pick("Hangzhou", "Beijing", "", "Zürich", "北京"),
		HasCoords:      r.IntN(2) == 0,
		Lat:            []float64{0, 30.2936, -33.8688, 39.9042, 1e-9}[r.IntN(5)],
		Lon:            []float64{0, 120.1614, 151.2093, -122.1, 179.999999}[r.IntN(5)],
		ProvinceCoords: r.IntN(2) == 0,
		Radius:         uint16(r.IntN(3) * 500),
		ISP:            pick("CHINANET", "China Unicom", "", "Google LLC", "电信"),
		ASN:            []uint32{0, 4134, 4837, 4294967295}[r.IntN(4)],
		Bits:           uint8(r.IntN(33)),
		SpreadBits:     uint8(r.IntN(25)),
		Source:         []geo.Source{geo.SourceDB, geo.SourceIPDB, geo.SourceIP2Region, geo.SourceNone}[r.IntN(4)],
	}
	var other geo.Other
	if r.IntN(3) == 0 {
		other = geo.Other{Province: pick("ZJ", "GD", ""), ISP: pick("CHINANET", ""), ASN: uint32(r.IntN(3)), OK: r.IntN(2) == 0}
	}
	return loc, other
}

// TestTableEncodingRoundTrip: every field of a location and of MaxMind's
// view comes back from the compact encoding as it went in, Bits from the
// range's word; equal values share an id, and the normalized carrier is
// the carrier table's.
func TestTableEncodingRoundTrip(t *testing.T) {
	// Every field of Location but Special is encoded: a new one must be too.
	if n := reflect.TypeFor[geo.Location]().NumField(); n != 15 {
		t.Fatalf("geo.Location has %d fields: encode the new ones in tplace or tcarrier", n)
	}
	if n := reflect.TypeFor[geo.Other]().NumField(); n != 4 {
		t.Fatalf("geo.Other has %d fields", n)
	}
	r := rand.New(rand.NewPCG(5, 6))
	e := newEncoder()
	type kept struct {
		loc   geo.Location
		other geo.Other
		id    uint32
	}
	var all []kept
	for range 20000 {
		loc, other := randomValue(r)
		if r.IntN(4) == 0 && len(all) > 0 { // the same value again, with other Bits
			k := all[r.IntN(len(all))]
			loc, other = k.loc, k.other
			loc.Bits = uint8(r.IntN(33))
		}
		id := e.id(loc, other)
		if id == noVal {
			t.Fatal("No id")
		}
		all = append(all, kept{loc, other, id})
	}
	e.done()
	d := e.d
	carriers := geo.DefaultCarriers()
	tb := (&netTable{d: d}).normalized(carriers)
	ids := map[memoValue]uint32{}
	// location writes into a Location that held another: every field it
	// leaves is wrong.
	dirty := geo.Location{Country: "X", Continent: "X", Province: "X", City: "X", HasCoords: true, Lat: 1, Lon: 1,
		ProvinceCoords: true, Radius: 1, ISP: "X", ASN: 1, Bits: 1, SpreadBits: 1, Source: geo.SourceOnline, Special: true}
	for i, f := range reflect.VisibleFields(reflect.TypeOf(dirty)) {
		if reflect.ValueOf(dirty).Field(i).IsZero() {
			t.Fatalf("dirty leaves Location.%s zero: location would not be seen to skip it", f.Name)
		}
	}
	at := func(id uint32, bits uint8, isp *string) geo.Location {
		got := dirty
		d.location(id, bits, isp, &got)
		return got
	}
	for _, k := range all {
		if got := at(k.id, k.loc.Bits, nil); got != k.loc {
			t.Fatalf("Round trip:\n got %+v\nwant %+v", got, k.loc)
		}
		if got := d.others[d.vals[k.id].other]; got != k.other {
			t.Fatalf("Other: got %+v, want %+v", got, k.other)
		}
		want := k.loc
		carriers.Apply(&want)
		name := tb.normISP(d.vals[k.id].carrier)
		if got := at(k.id, k.loc.Bits, &name); got != want {
			t.Fatalf("Normalized:\n got %+v\nwant %+v", got, want)
		}
		noBits := k.loc
		noBits.Bits = 0
		v := memoValue{noBits, k.other}
		if id, ok := ids[v]; ok && id != k.id {
			t.Fatalf("%+v: ids %d and %d", v, id, k.id)
		}
		ids[v] = k.id
	}
	if len(d.vals) != len(ids) || d.strs.len() > 40 {
		t.Errorf("%d values for %d distinct, %d strings", len(d.vals), len(ids), d.strs.len())
	}
}

// TestHashIndexCollision: a record whose hash another holds is found by
// the record itself.
func TestHashIndexCollision(t *testing.T) {
	x := newHashIndex[tplace]()
	all := []tplace{{city: 1}, {city: 2}}
	x.put(all[0], 0)
	x.ids[maphash.Comparable(x.seed, all[1])] = 0 // all[1] collides with all[0]
	if _, ok := x.get(all[1], all); ok {
		t.Fatal("Found a record never put")
	}
	x.put(all[1], 1)
	for i, k := range all {
		if id, ok := x.get(k, all); !ok || id != uint32(i) {
			t.Errorf("%+v: %d %v, want %d", k, id, ok, i)
		}
	}
}
