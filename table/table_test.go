package table

import (
	"strings"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"
)

var testZones = []string{"example.org."}

func TestParseTableErrors(t *testing.T) {
	const node = "  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30, lon: 120}\n"
	const rec = "records:\n  - name: www.example.org\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top key", "nodes:\n" + node + rec + "colour: blue\n", `line 5: unknown key "colour"`},
		{"unknown node key", "nodes:\n  - id: a\n    ipv4: [192.0.2.1]\n    colour: red\n", `line 4: nodes[0]: unknown key "colour"`},
		{"unknown probe key", "nodes:\n  - id: a\n    probe:\n      kind: tcp\n", `nodes[0].probe: unknown key "kind"`},
		{"unknown record key", "nodes:\n" + node + "records:\n  - name: www.example.org\n    weight: 3\n", `records[0]: unknown key "weight"`},
		{"duplicate id", "nodes:\n" + node + node + rec, `line 3: nodes[1] (id a): field id: duplicate id "a", first at line 2`},
		{"missing id", "nodes:\n  - {ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1}\n" + rec, "nodes[0]: field id: missing"},
		{"unknown node reference", "nodes:\n" + node + "records:\n  - name: www.example.org\n    nodes: [a, b]\n", `records[0] (name www.example.org.): field nodes: unknown node "b"`},
		{"bad ipv4", "nodes:\n  - {id: a, ipv4: [192.0.2.300], country: CN, lat: 1, lon: 1}\n" + rec, `(id a): field ipv4[0]: "192.0.2.300" is not an IPv4 address`},
		{"v6 in ipv4", "nodes:\n  - {id: a, ipv4: [\"2001:db8::1\"], country: CN, lat: 1, lon: 1}\n" + rec, "field ipv4[0]"},
		{"bad ipv6", "nodes:\n  - {id: a, ipv6: [192.0.2.1], country: CN, lat: 1, lon: 1}\n" + rec, "field ipv6[0]"},
		{"no address", "nodes:\n  - {id: a, country: CN, lat: 1, lon: 1}\n" + rec, "has no address"},
		{"bad latitude", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 91, lon: 1}\n" + rec, "field lat: 91 is outside -90..90"},
		{"bad longitude", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: -181}\n" + rec, "field lon"},
		{"missing coordinates", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN}\n" + rec, "coordinates are required"},
		{"bad country", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: XX, lat: 1, lon: 1}\n" + rec, "field country"},
		{"bad province", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, province: Atlantis, lat: 1, lon: 1}\n" + rec, "field province"},
		{"negative cost", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, cost: -1}\n" + rec, "field cost"},
		{"load above 1", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, load: 1.5}\n" + rec, "field load"},
		{"record outside zones", "nodes:\n" + node + "records:\n  - name: www.example.net\n", "outside the zones"},
		{"duplicate record", "nodes:\n" + node + "records:\n  - name: www.example.org\n  - name: WWW.example.org.\n", "duplicate record"},
		{"zero record ttl", "nodes:\n" + node + "records:\n  - name: www.example.org\n    ttl: 0\n", "field ttl"},
		{"no records", "nodes:\n" + node, "at least one record"},
		{"no nodes", rec, "at least one node"},
		{"bad neighbor key", "nodes:\n" + node + rec + "neighbors:\n  Atlantis: [ZJ]\n", "neighbors: key"},
		{"neighbor abroad", "nodes:\n" + node + rec + "neighbors:\n  ZJ: [US-CA]\n", "another country"},
		{"region mixes countries", "nodes:\n" + node + rec + "regions:\n  mixed: [ZJ, US-CA]\n", "another country"},
		{"bad probe", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {type: icmp}}\n" + rec, "(id a): probe"},
		{"bad cname", "nodes:\n  - {id: a, cname: \"a..b\", country: CN}\n" + rec, `field cname: "a..b" is not a domain name`},
		{"cname node with lat alone", "nodes:\n  - {id: a, cname: edge.cdn.example, country: CN, lat: 1}\n" + rec, "coordinates are required"},
		{"cname-only node probed by address", "nodes:\n  - {id: a, cname: edge.cdn.example, country: CN, probe: {type: tcp}}\n" + rec, "a cname-only node has no address to probe"},
		{"bad fallback", "nodes:\n" + node + rec + "    fallback: \"a..b\"\n", `field fallback: "a..b" is not a domain name`},
		{"fallback loops", "nodes:\n" + node + rec + "    fallback: WWW.example.org\n", "field fallback: the record's own name would loop"},
		{"https hint", "nodes:\n" + node + rec + "    https: {ipv4hint: [192.0.2.1]}\n", "field https: ipv4hint: the hints are the answer's addresses"},
		{"https bad key", "nodes:\n" + node + rec + "    https: {colour: red}\n", "field https:"},
		{"https bad port", "nodes:\n" + node + rec + "    https: {port: http}\n", "field https:"},
		{"not yaml", "nodes: [", "line 1: not valid YAML"},
		{"empty", "", "empty file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.yaml), testZones, 60)
			if err == nil {
				t.Fatalf("Expected an error containing %q, got none", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Expected an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestParseTable(t *testing.T) {
	const y = `
nodes:
  - {id: hz, ipv4: [192.0.2.1], ipv6: ["2001:db8::1"], country: cn, province: 浙江省, isp: 电信, lat: 30, lon: 120, cost: 0.5, load: 0.25}
  - {id: bj, ipv4: [192.0.2.2], country: CN, province: CN-BJ, isp: Unicom, lat: 39.9, lon: 116.4}
  - {id: sf, ipv6: ["2001:db8::3"], country: US, province: US-CA, lat: 37.7, lon: -122.4}
records:
  - name: www.example.org
  - name: API.example.org.
    ttl: 30
    nodes: [bj, sf]
neighbors:
  US-CA: [NV, OR]
regions:
  West: [US-CA, US-NV]
carriers:
  asn: {64500: telecom}
  names: {"Example Net": unicom}
probe_defaults:
  interval: 10s
`
	tb, err := parse([]byte(y), testZones, 60)
	if err != nil {
		t.Fatal(err)
	}
	hz := tb.Nodes[0]
	if hz.Country != "CN" || hz.Province != "ZJ" || hz.ISP != "telecom" || hz.Continent != "AS" || hz.Cost != 0.5 || hz.Load != 0.25 {
		t.Errorf("Unexpected normalized node: %+v", hz.Node)
	}
	if tb.Nodes[1].Province != "BJ" || tb.Nodes[1].ISP != "unicom" || tb.Nodes[2].Province != "CA" || tb.Nodes[2].Continent != "NA" {
		t.Errorf("Unexpected nodes: %+v %+v", tb.Nodes[1].Node, tb.Nodes[2].Node)
	}
	www := tb.Records["www.example.org."]
	if www == nil || www.TTL != 60 || len(www.V4) != 2 || len(www.V6) != 2 {
		t.Fatalf("Unexpected www record: %+v", www)
	}
	api := tb.Records["api.example.org."]
	if api == nil || api.TTL != 30 || len(api.V4) != 1 || api.V4[0] != 1 || len(api.V6) != 1 || api.V6[0] != 2 {
		t.Fatalf("Unexpected api record: %+v", api)
	}
	if !tb.Topology.Neighbors("US", "CA", "NV") || tb.Topology.Region("US", "NV") != "West" {
		t.Errorf("Expected the file's neighbours and regions for US")
	}
	if !tb.Topology.Neighbors("CN", "ZJ", "SH") || tb.Topology.Region("CN", "ZJ") != "华东" {
		t.Errorf("Expected the built-in topology for CN to remain")
	}
	if got := tb.Carriers.Carrier(64500, ""); got != "telecom" {
		t.Errorf("Expected the file's ASN carrier, got %q", got)
	}
	if got := tb.Carriers.Carrier(64501, "Example Net Ltd"); got != "unicom" {
		t.Errorf("Expected the file's name carrier, got %q", got)
	}
}

// TestParseTableHostile: input that once crashed the server or was
// accepted although it makes no sense.
// TestParseTableFieldLine: an error in a block-style entry cites the line of
// the field, not the entry's first line.
func TestParseTableFieldLine(t *testing.T) {
	const head = "nodes:\n  - id: a\n    ipv4: [192.0.2.1]\n    country: CN\n"
	const rec = "records:\n  - name: www.example.org\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"lat", head + "    lat: 91\n    lon: 1\n" + rec, "line 5: nodes[0] (id a): field lat: 91 is outside"},
		{"lon", head + "    lat: 1\n    lon: 181\n" + rec, "line 6: nodes[0] (id a): field lon"},
		{"ipv4 item", "nodes:\n  - id: a\n    country: CN\n    ipv4:\n      - 192.0.2.300\n    lat: 1\n    lon: 1\n" + rec, "line 4: nodes[0] (id a): field ipv4[0]"},
		{"province", head + "    province: Atlantis\n    lat: 1\n    lon: 1\n" + rec, "line 5: nodes[0] (id a): field province"},
		{"cost", head + "    lat: 1\n    lon: 1\n    cost: -1\n" + rec, "line 7: nodes[0] (id a): field cost"},
		{"probe key", head + "    lat: 1\n    lon: 1\n    probe:\n      address: 192.0.2.1:80\n      interval: 1ms\n" + rec, "line 9: nodes[0] (id a): probe.interval"},
		{"probe key from defaults", head + "    lat: 1\n    lon: 1\n    probe:\n      address: 192.0.2.1:80\n" + rec + "probe_defaults: {interval: 1ms}\n", "line 11: probe_defaults.interval, in the probe of nodes[0] (id a): 1ms is shorter"},
		{"probe key from defaults, set by the node", head + "    lat: 1\n    lon: 1\n    probe:\n      address: 192.0.2.1:80\n      interval: 1ms\n" + rec + "probe_defaults: {interval: 1ms}\n", "line 9: nodes[0] (id a): probe.interval"},
		{"no coordinates: the entry", head + rec, "line 2: nodes[0] (id a): field lat/lon"},
		{"duplicate id", head + "    lat: 1\n    lon: 1\n  - lat: 1\n    lon: 1\n    id: a\n    ipv4: [192.0.2.2]\n    country: CN\n" + rec, "line 9: nodes[1] (id a): field id: duplicate"},
		{"record ttl", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1}\nrecords:\n  - name: www.example.org\n    ttl: 0\n", "line 5: records[0] (name www.example.org.): field ttl"},
		{"record node", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1}\nrecords:\n  - name: www.example.org\n    ttl: 5\n    nodes: [b]\n", "line 6: records[0] (name www.example.org.): field nodes: unknown node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.yaml), testZones, 60)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Expected an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestParseTableHostile(t *testing.T) {
	const node = "  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30, lon: 120}\n"
	const rec = "records:\n  - name: www.example.org\n"
	tests := []struct {
		name, yaml, want string // want "" = valid
	}{
		{"nodes aliased as records", "nodes: &n\n" + node + "records: *n\n", "line 3: an alias (*n) is not allowed"},
		{"records aliased as nodes", "records: &r\n  - name: www.example.org\nnodes: *r\n", "line 3: an alias (*r) is not allowed"},
		{"aliased probe", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: &p {address: \"192.0.2.1:80\"}}\n" +
			"  - {id: b, ipv4: [192.0.2.2], country: CN, lat: 1, lon: 1, probe: *p}\n" + rec, "line 3: an alias (*p) is not allowed"},
		{"alias to a scalar", "nodes: &n 3\nrecords: *n\n", "line 2: an alias (*n) is not allowed"},
		{"alias bomb as a key", "nodes:\n" + node + rec + "nameservers: [&k bogus]\n" + testsupport.AliasBomb(""), "line 6: an alias (*k) is not allowed"},
		{"unknown key in a probe", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1,\n     probe: {address: \"192.0.2.1:80\", kind: tcp}}\n" + rec, `line 3: nodes[0].probe: unknown key "kind"`},
		{"explicit empty node list", "nodes:\n" + node + "records:\n  - name: www.example.org\n    nodes: []\n", `line 5: records[0] (name www.example.org.): field nodes: an empty list`},
		{"ttl above 2^31-1", "nodes:\n" + node + "records:\n  - name: www.example.org\n    ttl: 4000000000\n", "field ttl: 4000000000 is not in 1..2147483647"},
		{"probe interval too short", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {address: \"192.0.2.1:80\", interval: 1ms}}\n" + rec, "line 2: nodes[0] (id a): probe.interval: 1ms is shorter than 100ms"},
		{"probe timeout at the interval", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {address: \"192.0.2.1:80\", interval: 1s, timeout: 1s}}\n" + rec, "probe.timeout"},
		{"probe timeout too short", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {address: \"192.0.2.1:80\", timeout: 1ms}}\n" + rec, "probe.timeout: 1ms must be at least 10ms"},
		{"http-only defaults with a tcp probe", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {address: \"192.0.2.1:80\"}}\n" +
			"  - {id: b, ipv4: [192.0.2.2], country: CN, lat: 1, lon: 1, probe: {url: \"http://192.0.2.2/\"}}\n" + rec +
			"probe_defaults: {expect_body: ok, load_field: load, url: \"http://192.0.2.9/health\", host: www.example.org, expect_status: [200]}\n", ""},
		{"tcp defaults with an http probe", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {url: \"http://192.0.2.1/\"}}\n" + rec +
			"probe_defaults: {address: \"192.0.2.9:80\"}\n", ""},
		{"bad name server", "nodes:\n" + node + rec + "nameservers: [\"bad name..\"]\n", "nameservers[0]"},
		// A short interval alone lowers the built-in timeout instead of conflicting with it.
		{"interval 1s in probe_defaults alone", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {address: \"192.0.2.1:80\"}}\n" + rec +
			"probe_defaults: {interval: 1s}\n", ""},
		{"interval 100ms in the probe alone", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, probe: {address: \"192.0.2.1:80\", interval: 100ms}}\n" + rec, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.yaml), testZones, 60)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Expected no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Expected an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// TestParseTableCarriers: a carrier word nothing defines is a typo that
// would never match a client; aliases and the table's own carriers pass.
func TestParseTableCarriers(t *testing.T) {
	const rec = "records:\n  - name: www.example.org\n"
	node := func(isp string) string {
		return "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: " + isp + ", lat: 30, lon: 120}\n"
	}
	bad := []struct{ isp, want string }{
		{"telcom", `line 2: nodes[0] (id a): field isp: unknown carrier "telcom" (did you mean telecom?)`},
		{"unicon", `unknown carrier "unicon" (did you mean unicom?)`},
		{"examplenet", `unknown carrier "examplenet"`},
	}
	for _, tc := range bad {
		_, err := Parse("nodes.yaml", []byte(node(tc.isp)+rec), testZones, 60)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nodes.yaml") {
			t.Errorf("isp %s: expected an error with %q, got %v", tc.isp, tc.want, err)
		}
	}
	good := map[string]string{"ctcc": "telecom", "CUCC": "unicom", "cmcc": "mobile", "chinanet": "telecom",
		"CMNET": "mobile", "cernet": "edu", "电信": "telecom", "cbn": "cbn"}
	for isp, want := range good {
		tb, err := Parse("nodes.yaml", []byte(node(isp)+rec), testZones, 60)
		if err != nil {
			t.Errorf("isp %s: %v", isp, err)
			continue
		}
		if got := tb.Nodes[0].ISP; got != want {
			t.Errorf("isp %s: carrier %q, want %q", isp, got, want)
		}
	}
	// A word the table's carriers: maps to is a carrier.
	ext := node("examplenet") + rec + "carriers:\n  asn: {64500: examplenet}\n"
	if _, err := Parse("nodes.yaml", []byte(ext), testZones, 60); err != nil {
		t.Errorf("a carrier of carriers.asn: %v", err)
	}
	ext = node("examplenet") + rec + "carriers:\n  names: {Example Net: examplenet}\n"
	if _, err := Parse("nodes.yaml", []byte(ext), testZones, 60); err != nil {
		t.Errorf("a carrier of carriers.names: %v", err)
	}
}

// TestCNAMENodes: a cname node may have no address and no coordinates; it
// is a candidate for A and AAAA, and may be probed by url.
func TestCNAMENodes(t *testing.T) {
	y := "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30, lon: 120}\n" +
		"  - {id: v, cname: Edge.CDN.example, country: CN, province: SC, probe: {type: http, url: \"http://edge.cdn.example/health\"}}\n" +
		"records:\n  - name: www.example.org\n"
	tb, err := parse([]byte(y), testZones, 60)
	if err != nil {
		t.Fatal(err)
	}
	v := tb.Nodes[1]
	if v.CNAME != "edge.cdn.example." || !v.NoCoords || len(v.V4)+len(v.V6) != 0 {
		t.Errorf("Node v: %+v, want cname edge.cdn.example. without coordinates or addresses", v)
	}
	if r := tb.Records["www.example.org."]; len(r.V4) != 2 || len(r.V6) != 1 || r.V6[0] != 1 {
		t.Errorf("Candidates v4 %v v6 %v, want [0 1] and [1]", r.V4, r.V6)
	}
	if len(tb.Probes) != 1 || tb.Probes[0].ID != "v" {
		t.Errorf("Probes %+v, want v's", tb.Probes)
	}
}

// TestRecordHash: a record's Hash is its name's, the same in every table
// (a reload's too), and differs between the records of a table.
func TestRecordHash(t *testing.T) {
	const nodes = "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30, lon: 120}\n"
	one, err := Parse("nodes.yaml", []byte(nodes+"records:\n  - name: www.example.org\n  - name: api.example.org\n"), testZones, 60)
	if err != nil {
		t.Fatal(err)
	}
	two, err := Parse("nodes.yaml", []byte(nodes+"records:\n  - name: api.example.org\n    ttl: 30\n"), testZones, 60)
	if err != nil {
		t.Fatal(err)
	}
	www, api := one.Records["www.example.org."], one.Records["api.example.org."]
	if www.Hash == api.Hash || !one.HashesUnique || !two.HashesUnique {
		t.Errorf("Hashes %x and %x, unique %v and %v", www.Hash, api.Hash, one.HashesUnique, two.HashesUnique)
	}
	if api2 := two.Records["api.example.org."]; api2.Hash != api.Hash || api2 == api {
		t.Errorf("api's Hash is %x in one table and %x in the other", api.Hash, api2.Hash)
	}
}
