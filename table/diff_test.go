package table

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	const base = `nodes:
  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30, lon: 120, probe: {address: "192.0.2.1:80"}}
  - {id: b, ipv4: [192.0.2.2], country: CN, province: SH, lat: 31, lon: 121}
records:
  - name: www.example.org
neighbors:
  ZJ: [SH]
carriers:
  asn: {64500: telecom}
`
	old, err := parse([]byte(base), testZones, 60)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		from string
		to   string
		want Change
	}{
		{"reformatted", "{id: b, ipv4: [192.0.2.2],", "{ id: b,   ipv4: [ 192.0.2.2 ],", 0},
		{"node address", "192.0.2.2]", "192.0.2.3]", ChangeNodes},
		{"probe interval", `probe: {address: "192.0.2.1:80"}`, `probe: {address: "192.0.2.1:80", interval: 4s}`, ChangeProbes},
		{"record ttl", "  - name: www.example.org\n", "  - name: www.example.org\n    ttl: 30\n", ChangeRecords},
		{"name servers", "records:", "nameservers: [ns1.example.net]\nrecords:", ChangeRecords},
		{"neighbours", "ZJ: [SH]", "ZJ: [SH, JS]", ChangeTopology},
		{"carriers", "64500: telecom", "64500: unicom", ChangeCarriers},
		{"node and probe", "isp: telecom, lat: 30, lon: 120, probe: {", "isp: unicom, lat: 30, lon: 120, probe: {interval: 3s, ", ChangeNodes | ChangeProbes},
	}
	for _, tc := range tests {
		cur, err := parse([]byte(strings.Replace(base, tc.from, tc.to, 1)), testZones, 60)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cur.Diff(old); got != tc.want {
			t.Errorf("%s: Diff = %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := old.Diff(nil); got != ChangeNodes|ChangeProbes|ChangeRecords|ChangeTopology|ChangeCarriers {
		t.Errorf("Diff(nil) = %s, want everything", got)
	}
}
