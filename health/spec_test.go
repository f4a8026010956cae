package health

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestSpecYAML(t *testing.T) {
	tests := []struct {
		in      string
		want    Spec
		wantErr bool
	}{
		{
			in: `{type: http, url: "http://127.0.0.1:8080/health", host: www.example.org, expect_status: [200, 204],
expect_body: ok, load_field: load, interval: 5s, timeout: 1500ms, rise: 2, fall: 3, hold_down: 2m}`,
			want: Spec{Type: "http", URL: "http://127.0.0.1:8080/health", Host: "www.example.org", ExpectStatus: []int{200, 204},
				ExpectBody: "ok", LoadField: "load", Interval: Duration(5 * time.Second), Timeout: Duration(1500 * time.Millisecond),
				Rise: 2, Fall: 3, HoldDown: durp(2 * time.Minute)},
		},
		{in: `{address: "10.0.0.1:80"}`, want: Spec{Address: "10.0.0.1:80"}},
		{in: `{interval: 5}`, wantErr: true},
		{in: `{interval: fast}`, wantErr: true},
		{in: `{timeout: [1s]}`, wantErr: true},
	}
	for i, tc := range tests {
		var got Spec
		err := yaml.Unmarshal([]byte(tc.in), &got)
		if (err != nil) != tc.wantErr {
			t.Fatalf("Test %d: expected error %t, got %v", i, tc.wantErr, err)
		}
		if err == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Test %d: expected %+v, got %+v", i, tc.want, got)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	builtin := Spec{Interval: Duration(DefaultInterval), Timeout: Duration(DefaultTimeout), Rise: DefaultRise,
		Fall: DefaultFall, HoldDown: durp(DefaultHoldDown)}
	with := func(s Spec) Spec {
		s.Interval, s.Timeout, s.Rise, s.Fall, s.HoldDown = builtin.Interval, builtin.Timeout, builtin.Rise, builtin.Fall, builtin.HoldDown
		return s
	}
	tests := []struct {
		name     string
		spec     Spec
		defaults Spec
		want     Spec
	}{
		{"empty is tcp", Spec{}, Spec{}, with(Spec{Type: "tcp"})},
		{"address is tcp", Spec{Address: "1.2.3.4:80"}, Spec{Type: "http"}, with(Spec{Type: "tcp", Address: "1.2.3.4:80"})},
		{"url is http", Spec{URL: "http://a/"}, Spec{}, with(Spec{Type: "http", URL: "http://a/"})},
		{"https url is https", Spec{URL: "HTTPS://a/"}, Spec{}, with(Spec{Type: "https", URL: "HTTPS://a/"})},
		{"type from defaults", Spec{}, Spec{Type: "http", ExpectBody: "ok"}, with(Spec{Type: "http", ExpectBody: "ok"})},
		{"url from defaults", Spec{}, Spec{URL: "https://a/"}, with(Spec{Type: "https", URL: "https://a/"})},
		{"explicit type kept", Spec{Type: "tcp", URL: "http://a/"}, Spec{}, with(Spec{Type: "tcp", URL: "http://a/"})},
		{
			"defaults fill zero fields",
			Spec{URL: "http://a/", Rise: 5},
			Spec{Host: "h", ExpectStatus: []int{200}, LoadField: "load", Interval: Duration(time.Second),
				Timeout: Duration(time.Second), Rise: 3, Fall: 4, HoldDown: durp(time.Minute)},
			Spec{Type: "http", URL: "http://a/", Host: "h", ExpectStatus: []int{200}, LoadField: "load",
				Interval: Duration(time.Second), Timeout: Duration(time.Second), Rise: 5, Fall: 4, HoldDown: durp(time.Minute)},
		},
		{
			"own fields win",
			Spec{Type: "tcp", Address: "a:1", Interval: Duration(time.Second), Timeout: Duration(time.Millisecond), Fall: 1},
			Spec{Interval: Duration(time.Hour), Timeout: Duration(time.Minute), Fall: 9},
			Spec{Type: "tcp", Address: "a:1", Interval: Duration(time.Second), Timeout: Duration(time.Millisecond),
				Rise: DefaultRise, Fall: 1, HoldDown: durp(DefaultHoldDown)},
		},
	}
	// The built-in timeout follows a short interval: at most half of it.
	short := Spec{Type: "tcp", Interval: Duration(time.Second), Timeout: Duration(500 * time.Millisecond),
		Rise: DefaultRise, Fall: DefaultFall, HoldDown: durp(DefaultHoldDown)}
	tests = append(tests, []struct {
		name     string
		spec     Spec
		defaults Spec
		want     Spec
	}{
		{"short interval in the defaults", Spec{}, Spec{Interval: Duration(time.Second)}, short},
		{"short interval in the spec", Spec{Interval: Duration(time.Second)}, Spec{}, short},
		{"a set timeout wins", Spec{Interval: Duration(time.Second)}, Spec{Timeout: Duration(300 * time.Millisecond)},
			Spec{Type: "tcp", Interval: Duration(time.Second), Timeout: Duration(300 * time.Millisecond),
				Rise: DefaultRise, Fall: DefaultFall, HoldDown: durp(DefaultHoldDown)}},
	}...)
	for _, interval := range []time.Duration{MinInterval, time.Second, 4 * time.Second, time.Hour} {
		s := Spec{Address: "a:1", Interval: Duration(interval)}.WithDefaults(Spec{})
		if err := s.Validate(); err != nil {
			t.Errorf("interval %s with the default timeout: %v", interval, err)
		}
	}
	for _, tc := range tests {
		got := tc.spec.WithDefaults(tc.defaults)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Test %q: expected %+v, got %+v", tc.name, tc.want, got)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		spec     Spec
		nodeAddr string
		wantAddr string
		errField string // "" means no error
	}{
		{"tcp default address", Spec{}, "192.0.2.1:80", "192.0.2.1:80", ""},
		{"tcp own address", Spec{Address: "[2001:db8::1]:443"}, "192.0.2.1:80", "[2001:db8::1]:443", ""},
		{"tcp needs port", Spec{}, "192.0.2.1", "", "probe.address"},
		{"tcp needs port v6", Spec{}, "2001:db8::1", "", "probe.address"},
		{"tcp needs address", Spec{}, "", "", "probe.address"},
		{"tcp no host", Spec{Address: ":80"}, "", "", "probe.address"},
		{"tcp no url", Spec{Type: "tcp", Address: "a:1", URL: "http://a/"}, "", "", "probe.url"},
		{"tcp no load_field", Spec{Address: "a:1", LoadField: "load"}, "", "", "probe.load_field"},
		{"tcp no expect_body", Spec{Address: "a:1", ExpectBody: "ok"}, "", "", "probe.expect_body"},
		{"http ok", Spec{URL: "http://127.0.0.1:8080/health", LoadField: "load", ExpectStatus: []int{200}}, "192.0.2.1:80", "", ""},
		{"https ok", Spec{URL: "https://example.org/health", Host: "www.example.org"}, "", "", ""},
		{"http needs url", Spec{Type: "http"}, "", "", "probe.url"},
		{"http no address", Spec{Type: "http", URL: "http://a/", Address: "a:1"}, "", "", "probe.address"},
		{"scheme mismatch", Spec{Type: "https", URL: "http://a/"}, "", "", "probe.url"},
		{"bad url", Spec{URL: "http://a b/%zz"}, "", "", "probe.url"},
		{"url without host", Spec{URL: "http:///health"}, "", "", "probe.url"},
		{"unknown type", Spec{Type: "icmp"}, "", "", "probe.type"},
		{"timeout above interval", Spec{Address: "a:1", Interval: Duration(time.Second), Timeout: Duration(2 * time.Second)}, "", "", "probe.timeout"},
		{"negative timeout", Spec{Address: "a:1", Timeout: -1}, "", "", "probe.timeout"},
		{"negative interval", Spec{Address: "a:1", Interval: -1}, "", "", "probe.interval"},
		{"negative rise", Spec{Address: "a:1", Rise: -1}, "", "", "probe.rise"},
		{"negative fall", Spec{Address: "a:1", Fall: -2}, "", "", "probe.fall"},
		{"negative hold_down", Spec{Address: "a:1", HoldDown: durp(-1)}, "", "", "probe.hold_down"},
		{"status too low", Spec{URL: "http://a/", ExpectStatus: []int{200, 99}}, "", "", "probe.expect_status"},
		{"status too high", Spec{URL: "http://a/", ExpectStatus: []int{600}}, "", "", "probe.expect_status"},
	}
	for _, tc := range tests {
		s := tc.spec.WithDefaults(Spec{}).ForNode(tc.nodeAddr)
		err := s.Validate()
		if tc.errField == "" {
			if err != nil {
				t.Errorf("Test %q: expected no error, got %v", tc.name, err)
			}
			if tc.wantAddr != "" && s.Address != tc.wantAddr {
				t.Errorf("Test %q: expected address %q, got %q", tc.name, tc.wantAddr, s.Address)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.errField+": ") {
			t.Errorf("Test %q: expected an error naming %s, got %v", tc.name, tc.errField, err)
		}
	}
}

func TestStatusOK(t *testing.T) {
	tests := []struct {
		expect []int
		code   int
		want   bool
	}{
		{nil, 200, true}, {nil, 399, true}, {nil, 199, false}, {nil, 400, false}, {nil, 503, false},
		{[]int{}, 302, true}, {[]int{204}, 204, true}, {[]int{204}, 200, false}, {[]int{503}, 503, true},
	}
	for i, tc := range tests {
		s := Spec{ExpectStatus: tc.expect}
		if got := s.statusOK(tc.code); got != tc.want {
			t.Errorf("Test %d: expected statusOK(%d) = %t with %v, got %t", i, tc.code, tc.want, tc.expect, got)
		}
	}
}

func durp(d time.Duration) *Duration { x := Duration(d); return &x }

// An explicit "hold_down: 0s" switches hold-down off; leaving it out takes
// probe_defaults, then the built-in 2m.
func TestSpecHoldDownZero(t *testing.T) {
	tests := []struct {
		yaml, defaults string
		want           time.Duration
	}{
		{"url: http://a/\nhold_down: 0s\n", "", 0},
		{"url: http://a/\n", "", DefaultHoldDown},
		{"url: http://a/\n", "hold_down: 0s\n", 0},
		{"url: http://a/\nhold_down: 30s\n", "hold_down: 0s\n", 30 * time.Second},
	}
	for _, tc := range tests {
		var s, d Spec
		if err := yaml.Unmarshal([]byte(tc.yaml), &s); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(tc.defaults), &d); err != nil {
			t.Fatal(err)
		}
		m := s.WithDefaults(d)
		if got := m.holdDown(); got != tc.want {
			t.Errorf("Expected hold_down %s for %q with defaults %q, got %s", tc.want, tc.yaml, tc.defaults, got)
		}
	}
}
