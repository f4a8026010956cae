package locate

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
)

func fp(f float64) *float64 { return &f }

func TestValidate(t *testing.T) {
	v4 := netip.MustParseAddr("36.0.5.7")
	v6 := netip.MustParseAddr("2400:3200:1:2::1")
	cn := geo.Location{Country: "CN", ISP: "telecom", ASN: 4134}
	good := onlineAnswer{IP: "36.0.5.7", Network: "36.0.5.0/24", Country: "cn", Province: "浙江",
		City: "Hangzhou", ISP: "电信", Lat: fp(30.2), Lon: fp(120.1)}
	tests := []struct {
		name   string
		addr   netip.Addr
		edit   func(a *onlineAnswer)
		known  geo.Location
		hasErr bool
		bits   uint8
	}{
		{"good", v4, func(*onlineAnswer) {}, cn, false, 24},
		{"only ip", v4, func(a *onlineAnswer) { a.Network = "" }, cn, false, 24},
		{"only network", v4, func(a *onlineAnswer) { a.IP = "" }, cn, false, 24},
		{"wide network clamped", v4, func(a *onlineAnswer) { a.Network = "36.0.0.0/12" }, cn, false, 24},
		{"narrow network", v4, func(a *onlineAnswer) { a.Network = "36.0.5.0/26" }, cn, false, 26},
		{"no coordinates", v4, func(a *onlineAnswer) { a.Lat, a.Lon = nil, nil }, cn, false, 24},
		{"unknown db country", v4, func(*onlineAnswer) {}, geo.Location{}, false, 24},
		{"v6", v6, func(a *onlineAnswer) { a.IP, a.Network = "2400:3200:1:2::1", "2400:3200::/32" }, cn, false, 48},
		{"wrong ip", v4, func(a *onlineAnswer) { a.IP = "36.0.5.8" }, cn, true, 0},
		{"wrong network", v4, func(a *onlineAnswer) { a.Network = "1.2.3.0/24" }, cn, true, 0},
		{"bad network", v4, func(a *onlineAnswer) { a.Network = "nonsense" }, cn, true, 0},
		{"neither ip nor network", v4, func(a *onlineAnswer) { a.IP, a.Network = "", "" }, cn, true, 0},
		{"no country", v4, func(a *onlineAnswer) { a.Country = "" }, cn, true, 0},
		{"bad country", v4, func(a *onlineAnswer) { a.Country = "China" }, cn, true, 0},
		{"country disagrees", v4, func(a *onlineAnswer) { a.Country, a.Province = "US", "CA" }, cn, true, 0},
		{"no province", v4, func(a *onlineAnswer) { a.Province = "" }, cn, true, 0},
		{"unknown province", v4, func(a *onlineAnswer) { a.Province = "Atlantis" }, cn, true, 0},
		{"latitude 95", v4, func(a *onlineAnswer) { a.Lat = fp(95) }, cn, true, 0},
		{"longitude -181", v4, func(a *onlineAnswer) { a.Lon = fp(-181) }, cn, true, 0},
		{"zero coordinates", v4, func(a *onlineAnswer) { a.Lat, a.Lon = fp(0), fp(0) }, cn, true, 0},
		{"NaN", v4, func(a *onlineAnswer) { a.Lat = fp(math.NaN()) }, cn, true, 0},
		{"lat without lon", v4, func(a *onlineAnswer) { a.Lon = nil }, cn, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := good
			tc.edit(&a)
			loc, err := validate(tc.addr, &a, tc.known)
			geo.DefaultCarriers().Apply(&loc) // as the chain does
			if (err != nil) != tc.hasErr {
				t.Fatalf("Got error %v, want error %v", err, tc.hasErr)
			}
			if err != nil {
				return
			}
			if loc.Country != "CN" || loc.Province != "ZJ" || loc.ISP != "telecom" || loc.Continent != "AS" ||
				loc.Bits != tc.bits || loc.Source != geo.SourceOnline {
				t.Errorf("Got %+v, want CN/ZJ telecom AS bits %d from online", loc, tc.bits)
			}
		})
	}
}

func TestIPAPIAdapter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := strings.TrimPrefix(r.URL.Path, "/json/")
		if r.Header.Get("X-Key") != "secret" {
			http.Error(w, "no key", http.StatusForbidden)
			return
		}
		if ip == "36.0.6.0" { // the /24 of 36.0.6.1: the API is asked about the network
			json.NewEncoder(w).Encode(map[string]any{"status": "fail", "message": "reserved range", "query": ip})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"status": "success", "query": ip, "country": "China",
			"countryCode": "CN", "region": "ZJ", "regionName": "Zhejiang", "city": "Hangzhou",
			"lat": 30.29, "lon": 120.16, "isp": "Chinanet", "as": "AS4134 CHINANET-BACKBONE"})
	}))
	defer srv.Close()
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: srv.URL + "/json/{ip}", Format: FormatIPAPI,
		Headers: http.Header{"X-Key": []string{"secret"}}}})
	tests := []struct {
		addr     string
		province string
	}{{"36.0.5.1", "ZJ"}, {"36.0.6.1", ""}}
	for _, tc := range tests {
		a := netip.MustParseAddr(tc.addr)
		l.Locate(ctx, a)
		l.idle(t)
		if loc := l.Locate(ctx, a); loc.Province != tc.province {
			t.Errorf("%s: got province %q, want %q", tc.addr, loc.Province, tc.province)
		} else if tc.province != "" && (loc.ASN != 4134 || !loc.HasCoords) {
			t.Errorf("%s: got ASN %d coords %v, want 4134 and coordinates", tc.addr, loc.ASN, loc.HasCoords)
		}
	}
}

func TestOnlineConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		cfg    OnlineConfig
		hasErr bool
	}{
		{"defaults", OnlineConfig{URL: "https://geo.example.net/v1/{ip}"}, false},
		{"query", OnlineConfig{URL: "http://geo.example.net/q?ip={ip}&k=1", Format: FormatIPAPI}, false},
		{"no ip", OnlineConfig{URL: "https://geo.example.net/v1/"}, true},
		{"ftp", OnlineConfig{URL: "ftp://geo.example.net/{ip}"}, true},
		{"no host", OnlineConfig{URL: "http:///{ip}"}, true},
		{"bad url", OnlineConfig{URL: "http://[::1/{ip}"}, true},
		{"negative timeout", OnlineConfig{URL: "http://a/{ip}", Timeout: -time.Second}, true},
		{"negative qps", OnlineConfig{URL: "http://a/{ip}", MaxQPS: -1}, true},
		{"negative failures", OnlineConfig{URL: "http://a/{ip}", BreakerFailures: -1}, true},
		{"negative window", OnlineConfig{URL: "http://a/{ip}", BreakerWindow: -1}, true},
		{"unknown format", OnlineConfig{URL: "http://a/{ip}", Format: "xml"}, true},
	}
	for _, tc := range tests {
		cfg := tc.cfg.WithDefaults()
		err := cfg.Validate()
		if (err != nil) != tc.hasErr {
			t.Errorf("%s: got error %v, want error %v", tc.name, err, tc.hasErr)
		}
		if err == nil && (cfg.Timeout != DefaultOnlineTimeout || cfg.MaxQPS != DefaultMaxQPS ||
			cfg.BreakerFailures != DefaultBreakerFailures || cfg.BreakerWindow != DefaultBreakerWindow) {
			t.Errorf("%s: defaults not filled: %+v", tc.name, cfg)
		}
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"negative cache size", Config{CacheSize: -1}},
		{"negative cache ttl", Config{CacheTTL: -1}},
		{"bad redis", Config{Redis: &RedisConfig{}}},
		{"bad online", Config{Online: &OnlineConfig{URL: "x"}}},
	}
	for _, tc := range tests {
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("%s: New succeeded, want an error", tc.name)
		}
	}
}
