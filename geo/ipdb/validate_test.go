package ipdb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/ipdbgen"
)

func TestFromBytesErrors(t *testing.T) {
	good := buildDB(t, testMeta, testRecs)
	n := int(binary.BigEndian.Uint32(good))
	meta := func(edit func(m map[string]any)) []byte { return editMeta(t, good, edit) }
	del := func(key string) []byte { return meta(func(m map[string]any) { delete(m, key) }) }
	set := func(key string, v any) []byte { return meta(func(m map[string]any) { m[key] = v }) }
	var nodes int
	if err := json.Unmarshal(good[4:4+n], &struct {
		N *int `json:"node_count"`
	}{&nodes}); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	// A chain of 129 nodes, one bit each, is one too deep.
	deep := make([][2]uint32, 129)
	for i := range deep {
		deep[i] = [2]uint32{uint32(i + 1), 129}
	}
	deep[128][0] = 129 + 8

	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"Empty", nil, "too short (0 bytes)"},
		{"Three bytes", []byte{0, 0, 0}, "too short (3 bytes)"},
		{"Zero metadata length", []byte{0, 0, 0, 0, '{', '}'}, "metadata length 0"},
		{"Metadata length past the end", append(binary.BigEndian.AppendUint32(nil, 100), "{}"...), "metadata length 100 does not fit the 2 bytes"},
		{"Truncated metadata", good[:4+n/2], "does not fit"},
		{"Truncated data", good[:len(good)-1], "total_size"},
		{"Extra byte", append(bytes.Clone(good), 0), "total_size"},
		{"Bad JSON", append(binary.BigEndian.AppendUint32(nil, 5), "{nope"...), "bad metadata JSON"},
		{"JSON array", append(binary.BigEndian.AppendUint32(nil, 2), "[]"...), "bad metadata JSON"},
		{"No build", del("build"), `lacks "build"`},
		{"No ip_version", del("ip_version"), `lacks "ip_version"`},
		{"No languages", del("languages"), `lacks "languages"`},
		{"No node_count", del("node_count"), `lacks "node_count"`},
		{"No total_size", del("total_size"), `lacks "total_size"`},
		{"No fields", del("fields"), `lacks "fields"`},
		{"Negative build", set("build", -1), "build -1"},
		{"String build", set("build", "2024"), "bad metadata JSON"},
		{"ip_version 0", set("ip_version", 0), "ip_version 0"},
		{"ip_version 4", set("ip_version", 4), "ip_version 4"},
		{"Fractional ip_version", set("ip_version", 1.5), "bad metadata JSON"},
		{"Empty fields", set("fields", []string{}), "fields is empty"},
		{"Unnamed field", set("fields", []string{"a", ""}), "field 1 has no name"},
		{"Repeated field", set("fields", []string{"a", "b", "a"}), `field "a" is listed twice`},
		{"Empty languages", set("languages", map[string]int{}), "languages is empty"},
		{"Unnamed language", set("languages", map[string]int{"": 0}), "language with no name"},
		{"Negative language offset", set("languages", map[string]int{"CN": -1, "EN": 10}), `language "CN" offset -1`},
		{"Language offset too big", set("languages", map[string]int{"CN": 0, "EN": 11}), `language "EN" offset 11 is out of range 0..10`},
		{"total_size too small", set("total_size", 8), "total_size 8 does not match"},
		{"Negative total_size", set("total_size", -1), "total_size -1"},
		{"node_count 0", set("node_count", 0), "node_count 0 does not fit"},
		{"Negative node_count", set("node_count", -3), "node_count -3 does not fit"},
		{"node_count too big", set("node_count", len(good)), "does not fit"},
		{"Child past the data", setChild(good, 0, 0, 0xffffffff), "node 0 child 0: record pointer 4294967295 is past the data"},
		{"Record length past the data", setChild(good, nodes-1, 1, uint32(nodes+len(good)-dataStart(good)-nodes*8-1)), "past the data"},
		{"Loop to the root", setChild(good, 5, 0, 0), "loop back to node 0"},
		{"Self loop", setChild(good, 3, 1, 3), "loop back to node 3"},
		{"Too deep", nodesFile(t, deep, "x\ty"), "deeper than 128 bits"},
	}
	for _, tc := range tests {
		r, err := FromBytes("test.ipdb", tc.b)
		if err == nil {
			t.Errorf("%s: FromBytes succeeded, want an error with %q", tc.name, tc.want)
			// Whatever got through must still be safe to query.
			r.Lookup(netip.MustParseAddr("202.101.172.35"))
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ipdb: test.ipdb: ") {
			t.Errorf("%s: error %q, want \"ipdb: test.ipdb: ...%s...\"", tc.name, err, tc.want)
		}
	}
}

// Hand-made tries: shared subtrees are fine, as is a path of exactly 128
// bits; a record with fewer values than fields is not found.
func TestHandMadeTries(t *testing.T) {
	full := make([][2]uint32, 128)
	for i := range full {
		full[i] = [2]uint32{uint32(i + 1), 128}
	}
	full[127] = [2]uint32{128, 128 + 8}
	shared := [][2]uint32{{1, 1}, {2, 3}, {3 + 8, 3 + 8 + 5}}
	tests := []struct {
		name  string
		nodes [][2]uint32
		recs  []string
		addr  string
		city  string
		bits  int
		ok    bool
	}{
		// Node 1 is the child of both halves of the root.
		{"Shared subtree", shared, []string{"a\tb", "c\td"}, "8000::", "b", 3, true},
		{"Shared subtree other half", shared, []string{"a\tb", "c\td"}, "2000::", "d", 3, true},
		{"Shared subtree miss", shared, []string{"a\tb", "c\td"}, "4000::", "", 0, false},
		{"128 bits", full, []string{"x\ty"}, "::1", "y", 128, true},
		{"128 bits miss", full, []string{"x\ty"}, "::", "", 0, false},
		{"Short record", [][2]uint32{{1 + 8, 1 + 8}}, []string{"only"}, "::", "", 0, false},
		{"Empty record", [][2]uint32{{1 + 8, 1 + 8}}, []string{""}, "::", "", 0, false},
		{"Empty values", [][2]uint32{{1 + 8, 1 + 8}}, []string{"\t"}, "::", "", 1, true},
		{"Extra values", [][2]uint32{{1 + 8, 1 + 8}}, []string{"a\tb\tc"}, "::", "b", 1, true},
		{"Pointer into the padding node", [][2]uint32{{1 + 2, 1}}, nil, "::", "", 0, false},
	}
	for _, tc := range tests {
		r, err := FromBytes("test.ipdb", nodesFile(t, tc.nodes, tc.recs...))
		if err != nil {
			t.Errorf("%s: FromBytes: %v", tc.name, err)
			continue
		}
		rec, bits, ok := r.Lookup(netip.MustParseAddr(tc.addr))
		if ok != tc.ok || bits != tc.bits || rec.CityName() != tc.city {
			t.Errorf("%s: Lookup(%s) = %q, %d, %v; want %q, %d, %v", tc.name, tc.addr, rec.CityName(), bits, ok, tc.city, tc.bits, tc.ok)
		}
		if _, _, ok := r.Lookup(netip.MustParseAddr("1.2.3.4")); ok {
			t.Errorf("%s: IPv4 lookup succeeded in an IPv6-only file", tc.name)
		}
	}
}

// A trie whose shared subtrees stand for 2^31 paths is walked in bounded
// steps: Networks4 gives up and says so.
func TestNetworks4Bounded(t *testing.T) {
	const n = 128
	nodes := make([][2]uint32, n)
	for i := range nodes {
		switch {
		case i < 80:
			nodes[i] = [2]uint32{uint32(i + 1), n}
		case i < 96:
			nodes[i] = [2]uint32{n, uint32(i + 1)}
		case i < n-1:
			nodes[i] = [2]uint32{uint32(i + 1), uint32(i + 1)} // both halves share the rest
		default:
			nodes[i] = [2]uint32{n, n}
		}
	}
	var data []byte
	for _, nd := range nodes {
		data = binary.BigEndian.AppendUint32(data, nd[0])
		data = binary.BigEndian.AppendUint32(data, nd[1])
	}
	data = binary.BigEndian.AppendUint32(data, n)
	data = binary.BigEndian.AppendUint32(data, n)
	r, err := FromBytes("bomb.ipdb", rawFile(t, map[string]any{
		"build": 1, "ip_version": 1, "languages": map[string]int{"CN": 0},
		"node_count": n, "total_size": len(data), "fields": []string{"country_name", "city_name"},
	}, data))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	if r.Networks4(func(netip.Prefix, uint32) bool { calls++; return true }) || calls != 0 {
		t.Errorf("Networks4 finished (%d networks), want it cut short", calls)
	}
}

// Networks4 gives the generator's IPv4 networks in address order.
func TestNetworks4(t *testing.T) {
	m := ipdbgen.Meta{Build: 1, Languages: []string{"CN"}, Fields: []string{"country_name", "city_name"}}
	var recs []ipdbgen.Rec
	for _, p := range []string{"36.0.2.0/24", "36.0.0.0/23", "1.0.0.0/8", "2001:db8::/32"} {
		recs = append(recs, ipdbgen.Rec{Network: netip.MustParsePrefix(p), Values: map[string][]string{"CN": {"中国", p}}})
	}
	r := openDB(t, buildDB(t, m, recs))
	var got []string
	r.Networks4(func(p netip.Prefix, id uint32) bool {
		rec, ok := r.RecordOf(id)
		if !ok {
			t.Fatalf("%s: no record", p)
		}
		got = append(got, p.String()+"="+rec.CityName())
		return true
	})
	want := "[1.0.0.0/8=1.0.0.0/8 36.0.0.0/23=36.0.0.0/23 36.0.2.0/24=36.0.2.0/24]"
	if fmt.Sprint(got) != want {
		t.Errorf("Got %v, want %s", got, want)
	}
}
