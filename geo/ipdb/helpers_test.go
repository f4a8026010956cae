package ipdb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo/ipdbgen"
)

var testFields = []string{
	"country_name", "region_name", "city_name", "owner_domain", "isp_domain",
	"latitude", "longitude", "country_code", "continent_code", "idd_code",
}

// cnEN returns a record with Chinese and English values for testFields.
func cnEN(network string, cn, en []string) ipdbgen.Rec {
	return ipdbgen.Rec{
		Network: netip.MustParsePrefix(network),
		Values:  map[string][]string{"CN": cn, "EN": en},
	}
}

// testRecs are nested IPv4 and IPv6 networks in two languages.
var testRecs = []ipdbgen.Rec{
	cnEN("202.101.0.0/16",
		[]string{"中国", "浙江", "", "", "电信", "", "", "CN", "AP", "86"},
		[]string{"China", "Zhejiang", "", "", "ChinaTelecom", "", "", "CN", "AP", "86"}),
	cnEN("202.101.172.0/24",
		[]string{"中国", "浙江", "杭州", "", "电信", "30.29", "120.16", "CN", "AP", "86"},
		[]string{"China", "Zhejiang", "Hangzhou", "", "ChinaTelecom", "30.29", "120.16", "CN", "AP", "86"}),
	cnEN("202.106.0.20/32",
		[]string{"中国", "北京", "北京", "", "联通", "39.90", "116.40", "CN", "AP", "86"},
		[]string{"China", "Beijing", "Beijing", "", "ChinaUnicom", "39.90", "116.40", "CN", "AP", "86"}),
	cnEN("8.8.8.0/24",
		[]string{"美国", "加利福尼亚州", "", "google.com", "google.com", "", "", "US", "NA", "1"},
		[]string{"United States", "California", "", "google.com", "google.com", "", "", "US", "NA", "1"}),
	cnEN("240e::/20",
		[]string{"中国", "", "", "", "电信", "", "", "CN", "AP", "86"},
		[]string{"China", "", "", "", "ChinaTelecom", "", "", "CN", "AP", "86"}),
	cnEN("2001:da8::/32",
		[]string{"中国", "", "", "edu.cn", "教育网", "", "", "CN", "AP", "86"},
		[]string{"China", "", "", "edu.cn", "CERNET", "", "", "CN", "AP", "86"}),
	cnEN("2001:da8:8000::/48",
		[]string{"中国", "北京", "北京", "edu.cn", "教育网", "", "", "CN", "AP", "86"},
		[]string{"China", "Beijing", "Beijing", "edu.cn", "CERNET", "", "", "CN", "AP", "86"}),
}

var testMeta = ipdbgen.Meta{Build: 1735689600, Languages: []string{"CN", "EN"}, Fields: testFields}

func buildDB(t testing.TB, m ipdbgen.Meta, recs []ipdbgen.Rec) []byte {
	t.Helper()
	b, err := ipdbgen.Build(m, recs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func openDB(t testing.TB, b []byte) *Reader {
	t.Helper()
	r, err := FromBytes("test.ipdb", b)
	if err != nil {
		t.Fatalf("FromBytes: %v", err)
	}
	return r
}

// dataStart is where the trie starts in a well-formed file.
func dataStart(b []byte) int { return 4 + int(binary.BigEndian.Uint32(b)) }

// setChild overwrites child bit of node in a copy of b.
func setChild(b []byte, node, bit int, v uint32) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[dataStart(c)+node*8+bit*4:], v)
	return c
}

// editMeta re-encodes the metadata of b after edit, keeping the data.
func editMeta(t testing.TB, b []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b[4:dataStart(b)]))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("Decode metadata: %v", err)
	}
	edit(m)
	return rawFile(t, m, b[dataStart(b):])
}

// rawFile assembles a file from metadata and a data section.
func rawFile(t testing.TB, meta any, data []byte) []byte {
	t.Helper()
	j, err := json.Marshal(meta)
	if err != nil {
		t.Fatalf("Marshal metadata: %v", err)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(j)))
	out = append(out, j...)
	return append(out, data...)
}

// nodesFile makes a file from hand-made nodes and records, each record
// pointed at by value len(nodes)+8+offset as the generator lays them out.
func nodesFile(t testing.TB, nodes [][2]uint32, records ...string) []byte {
	t.Helper()
	var data []byte
	for _, n := range nodes {
		data = binary.BigEndian.AppendUint32(data, n[0])
		data = binary.BigEndian.AppendUint32(data, n[1])
	}
	data = binary.BigEndian.AppendUint32(data, uint32(len(nodes)))
	data = binary.BigEndian.AppendUint32(data, uint32(len(nodes)))
	for _, r := range records {
		data = binary.BigEndian.AppendUint16(data, uint16(len(r)))
		data = append(data, r...)
	}
	return rawFile(t, map[string]any{
		"build": 1, "ip_version": 2, "languages": map[string]int{"CN": 0},
		"node_count": len(nodes), "total_size": len(data), "fields": []string{"country_name", "city_name"},
	}, data)
}
