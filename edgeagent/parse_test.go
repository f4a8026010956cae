package edgeagent

import (
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		format, line string
		want         Entry
		err          string
	}{
		{FormatJSON, `{"remote_addr":"1.2.3.4","status":"200","body_bytes_sent":"512","request_time":"0.050","upstream_response_time":"0.020","upstream_cache_status":"MISS"}`,
			Entry{Status: 200, Bytes: 512, TTFBMs: 20}, ""},
		{FormatJSON, `{"remote_addr":"1.2.3.4","status":"200","body_bytes_sent":"512","request_time":"0.003","upstream_response_time":"","upstream_cache_status":"HIT"}`,
			Entry{Status: 200, Bytes: 512, TTFBMs: 3, Hit: true}, ""},
		{FormatJSON, `{"remote_addr":"1.2.3.4","status":"502","body_bytes_sent":"0","request_time":"1.5","upstream_response_time":"1.000, 0.400","upstream_cache_status":"-"}`,
			Entry{Status: 502, TTFBMs: 1400}, ""},
		{FormatCombined, `1.2.3.4 - - [02/Dec/2026:03:00:00 +0000] "GET /a?\"q\" HTTP/1.1" 200 512 "-" "curl/8.0 \"x\"" 0.050 0.020 MISS`,
			Entry{Status: 200, Bytes: 512, TTFBMs: 20}, ""},
		{FormatCombined, `1.2.3.4 - - [02/Dec/2026:03:00:00 +0000] "GET / HTTP/1.1" 304 0 "https://example.org/" "Mozilla/5.0 (X11)" 0.004 - HIT`,
			Entry{Status: 304, TTFBMs: 4, Hit: true}, ""},
		{FormatCombined, `1.2.3.4 - - [02/Dec/2026:03:00:00 +0000] "GET / HTTP/1.1" 503 0 "-" "ua" 2.000 1.000, 0.900 : 0.050 -`,
			Entry{Status: 503, TTFBMs: 1950}, ""},
		{FormatCombined, `1.2.3.4 - - [02/Dec/2026:03:00:00 +0000] "GET / HTTP/1.1" 200 0 "-" "ua"`, Entry{}, "no $request_time"},
		{FormatCombined, `nonsense`, Entry{}, "no remote address"},
		{FormatJSON, `{"remote_addr":"x","status":"200","request_time":"0"}`, Entry{}, "not an address"},
		{FormatJSON, `{"remote_addr":"1.2.3.4","status":"ok","request_time":"0"}`, Entry{}, "not an HTTP status"},
		{FormatJSON, `{"remote_addr":"1.2.3.4","status":"200","request_time":"-1"}`, Entry{}, "not a time"},
	} {
		got, err := ParseLine(tc.format, []byte(tc.line))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: %v, want %q", tc.format, tc.line, err, tc.err)
			}
			continue
		}
		got.Addr = got.Addr.Unmap()
		if err != nil || got.Addr.String() != "1.2.3.4" || got.Status != tc.want.Status || got.Bytes != tc.want.Bytes ||
			got.Hit != tc.want.Hit || got.TTFBMs < tc.want.TTFBMs-1e-6 || got.TTFBMs > tc.want.TTFBMs+1e-6 {
			t.Errorf("%s %q: %+v %v, want %+v", tc.format, tc.line, got, err, tc.want)
		}
	}
}
