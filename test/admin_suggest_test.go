package test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAdminNodeDidYouMean: a mistyped node id in a drain or a pin is
// refused with the nearest id of the node table; an id near none gets no
// guess.
func TestAdminNodeDidYouMean(t *testing.T) {
	e := startAdmin(t, "")
	tests := []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/v1/nodes/hz-b/drain", "", 404, `node "hz-b": not found (did you mean "hz-a"?)`},
		{"POST", "/v1/nodes/bjj/undrain", "", 404, `(did you mean "bj"?)`},
		{"POST", "/v1/pins", `{"cidr": "1.2.3.0/24", "nodes": ["shh"]}`, 400, `unknown node "shh" (did you mean "sh"?)`},
		{"POST", "/v1/nodes/guangzhou-mobile/drain", "", 404, `node "guangzhou-mobile": not found`},
	}
	for _, tc := range tests {
		code, raw := e.call(t, tc.method, tc.path, e.token, tc.body)
		var reply struct{ Error string }
		json.Unmarshal([]byte(raw), &reply)
		body := reply.Error
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: expected %d with %s, got %d %s", tc.method, tc.path, tc.code, tc.want, code, body)
		}
		if strings.Contains(tc.path, "guangzhou") && strings.Contains(body, "did you mean") {
			t.Errorf("%s: expected no guess for an id near none, got %s", tc.path, body)
		}
	}
}
