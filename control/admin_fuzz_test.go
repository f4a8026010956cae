package control

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/overrides"
)

// FuzzAdminAPI: whatever body or path a request carries, the admin API
// answers 200, 400 or 404 (never a 5xx or a panic), and after every 200
// the state file loads and holds exactly the pins and drains the API
// shows.
func FuzzAdminAPI(f *testing.F) {
	dir := testsupport.Fixture(f, testsupport.FixtureNodes)
	state := filepath.Join(dir, "state.yaml")
	c := newTestControl(f, dir, "gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\nadmin 127.0.0.1:0 {\n state "+state+"\n}\n}")
	if err := c.Start(); err != nil {
		f.Fatal(err)
	}
	base := "http://" + c.admin.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, s := range []struct {
		op   uint8
		arg  string
		body string
	}{
		{0, "", `{"cidr":"58.208.0.0/16","nodes":["sh"],"note":" ticket 4711\nmoved by oncall"}`},
		{0, "", `{"cidr":"1.0.0.0/8","location":{"country":"CN","province":"ZJ","city":"# x: y","isp":"telecom","lat":30.2,"lon":120.1},"ttl":"2h"}`},
		{0, "", `{"cidr":"::ffff:0.0.0.0/1","nodes":["sh"]}`},
		{0, "", `{"cidr":"10.0.0.0/8","nodes":["bj"],"note":"\u0000\t\u0085"}`},
		{1, "58.208.0.0/16", ""},
		{2, "hz-a", ""},
		{2, "nope", ""},
		{3, "", `{"percent":5}`},
	} {
		f.Add(s.op, s.arg, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, op uint8, arg string, body []byte) {
		var method, path string
		switch op % 4 {
		case 0:
			method, path = "POST", "/v1/pins"
		case 1:
			method, path = "DELETE", "/v1/pins/"+url.PathEscape(arg)
		case 2:
			method, path = "POST", "/v1/nodes/"+url.PathEscape(arg)+[]string{"/drain", "/undrain"}[len(body)%2]
		case 3:
			method, path = "POST", "/v1/canary"
		}
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
		case 400, 404, 405:
			return
		default:
			t.Fatalf("%s %s %q: %d %s", method, path, body, resp.StatusCode, out)
		}
		st, err := admin.LoadState(state, 0, knownIn(c.table))
		if err != nil {
			t.Fatalf("%s %s %q: 200, and the state file does not load: %v", method, path, body, err)
		}
		var pins []overrides.EntryYAML
		pins = append(pins, c.pinsForTest()...)
		want, _ := json.Marshal(pins)
		got, _ := json.Marshal(st.Pins)
		if !bytes.Equal(want, got) {
			t.Fatalf("%s %s %q: the API holds pins\n%s\nthe state file\n%s", method, path, body, want, got)
		}
		var drained []string
		for _, n := range (&adminBackend{c: c}).Nodes() {
			if n.Drained {
				drained = append(drained, n.ID)
			}
		}
		var saved []string
		for _, d := range st.Drains {
			saved = append(saved, d.Node)
		}
		slices.Sort(drained)
		slices.Sort(saved)
		if !slices.Equal(drained, saved) {
			t.Fatalf("%s %s: the API has %v drained, the state file %v", method, path, drained, saved)
		}
	})
}

func (c *Control) pinsForTest() []overrides.EntryYAML {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pins)
}
