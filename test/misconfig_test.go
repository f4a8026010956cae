package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testredis"

	"github.com/miekg/dns"
)

// TestOrderAfterCache: a build that puts gslb after cache (plugin.cfg with
// gslb appended) must refuse to start a block with both, naming the fix.
func TestOrderAfterCache(t *testing.T) {
	cf := strings.Replace(demoCorefile(t, ""), "metadata", "metadata\n    cache 30", 1)
	mu.Lock()
	saved := dnsserver.Directives
	dirs := slices.DeleteFunc(slices.Clone(saved), func(d string) bool { return d == "gslb" })
	dnsserver.Directives = append(dirs, "gslb")
	caddy.Quiet, dnsserver.Quiet = true, true
	inst, err := caddy.Start(input(cf))
	dnsserver.Directives = saved
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
		t.Fatal("Expected the start to fail with gslb after cache")
	}
	want := `plugin/gslb: the plugin chain runs cache before gslb, so cached answers would ignore where clients are: rebuild CoreDNS with the plugin.cfg line "gslb:github.com/gslbdns/gslb" before "cache:cache"`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Expected %q, got %v", want, err)
	}
	// Our build's order, and a block without cache in the other order, start.
	startServer(t, cf)
	mu.Lock()
	dnsserver.Directives = append(slices.DeleteFunc(slices.Clone(saved), func(d string) bool { return d == "gslb" }), "gslb")
	inst, err = caddy.Start(input(demoCorefile(t, "")))
	dnsserver.Directives = saved
	mu.Unlock()
	if err != nil {
		t.Fatalf("A block without cache: %v", err)
	}
	inst.ShutdownCallbacks()
	inst.Stop()
}

// TestCheckLikeServer: gslb check fails exactly where a start from the
// same Corefile fails: an unknown directive, a directive the build lacks,
// gslb after cache; with root, relative paths resolve as the server
// resolves them.
func TestCheckLikeServer(t *testing.T) {
	dir, _, text := toolSetup(t, toolNodes, "")
	city := filepath.Join(dir, "city.mmdb")
	if _, err := os.Stat(city); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	relative := strings.NewReplacer(dir+string(filepath.Separator), "").Replace(text)
	if relative == text {
		t.Fatal("fixture paths are not under the temp dir")
	}
	rooted := strings.Replace(relative, "bind 127.0.0.1", "bind 127.0.0.1\n    root "+dir, 1)
	elsewhere := strings.Replace(relative, "bind 127.0.0.1", "bind 127.0.0.1\n    root "+t.TempDir(), 1)
	key, _ := writeZoneKey(t, dir, "example.org.", 257)
	otherKey, _ := writeZoneKey(t, dir, "example.net.", 257)
	for _, tc := range []struct {
		name, corefile string
		ok             bool
		want           string
	}{
		{"root", rooted, true, ""},
		{"root elsewhere", elsewhere, false, "nodes.yaml"},
		{"unknown directive", strings.Replace(text, "metadata", "metadata\n    gslbb", 1), false, "Unknown directive 'gslbb'"},
		{"plugin not built", strings.Replace(text, "metadata", "metadata\n    kubernetes", 1), false, "no action found for directive 'kubernetes'"},
		{"bad stock plugin", strings.Replace(text, "metadata", "metadata\n    tls "+filepath.Join(dir, "missing.pem")+" "+filepath.Join(dir, "missing.key"), 1), false, "missing.pem"},
		{"stock plugins", strings.Replace(text, "metadata", "metadata\n    any\n    chaos\n    nsid gslb\n    root "+dir, 1), true, ""},
		{"dnssec key missing", strings.Replace(text, "nodes ", "dnssec "+filepath.Join(dir, "Kmissing")+"\n        nodes ", 1), false, "Kmissing"},
		{"dnssec key of another zone", strings.Replace(text, "nodes ", "dnssec "+otherKey+"\n        nodes ", 1), false, "is none of the zones"},
		{"dnssec", strings.Replace(text, "nodes ", "dnssec "+key+"\n        nodes ", 1), true, ""},
		{"dnssec nsec3", strings.Replace(text, "nodes ", "dnssec "+key+" {\n            denial nsec3\n        }\n        nodes ", 1), true, ""},
		{"dnssec nsec with fallthrough", strings.Replace(text, "nodes ", "dnssec "+key+" {\n            denial nsec\n        }\n        fallthrough\n        nodes ", 1), false, "dnssec denial nsec with fallthrough"},
		{"dnssec default with fallthrough", strings.Replace(text, "nodes ", "dnssec "+key+"\n        fallthrough\n        nodes ", 1), true, ""},
	} {
		conf := writeFile(t, dir, "Corefile."+strings.ReplaceAll(tc.name, " ", "-"), tc.corefile)
		out, stderr, code := runTool(t, "check", "-conf", conf)
		mu.Lock()
		inst, err := startFile(conf)
		if err == nil {
			inst.ShutdownCallbacks()
		}
		mu.Unlock()
		if tc.ok {
			if err != nil || code != 0 || out != "ok\n" {
				t.Errorf("%s: expected both to start, got server %v, check %d %q %q", tc.name, err, code, out, stderr)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: CoreDNS started", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: expected the server's error to contain %q, got %v", tc.name, tc.want, err)
		}
		if code != 1 || strings.TrimSpace(stderr) != err.Error() {
			t.Errorf("%s: expected exit 1 and the server's error\n%q, got %d\n%q", tc.name, err.Error(), code, stderr)
		}
	}
}

// TestSecrets: an unset secret is a startup error; a password Redis
// refuses and a key the API refuses (401) are warned about, once per
// period, and counted under result "auth".
func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	city := filepath.Join(dir, "City.mmdb")
	if err := mmdbgen.WriteCity(city, []mmdbgen.City{{Network: "1.80.0.0/16", Country: "CN"}}); err != nil {
		t.Fatal(err)
	}
	nodes := writeFile(t, dir, "nodes.yaml", layersNodes)
	os.Unsetenv("GSLB_TEST_UNSET_SECRET")
	for _, tc := range []struct{ extra, want string }{
		{"redis 127.0.0.1:6379 {\n password {$GSLB_TEST_UNSET_SECRET}\n}", "redis: password is empty"},
		{"online http://127.0.0.1:1/v1/{ip} {\n header X-Api-Key {$GSLB_TEST_UNSET_SECRET}\n}", "online: header X-Api-Key is empty"},
	} {
		if err := startFails(t, corefile(city, "", nodes, tc.extra)); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Expected %q, got %v", tc.want, err)
		}
	}

	rs := testredis.StartAuth(t, "the-right-password")
	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("X-Api-Key") != "the-right-key" {
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"country":"CN"}`))
	}))
	t.Cleanup(api.Close)
	logs := captureLog(t)
	redisAuth := map[string]string{"layer": "redis", "result": "auth"}
	onlineAuth := map[string]string{"result": "auth"}
	r0 := seriesValue(t, "coredns_gslb_geo_lookups_total", redisAuth)
	o0 := seriesValue(t, "coredns_gslb_online_requests_total", onlineAuth)
	s := startServer(t, corefile(city, "", nodes, fmt.Sprintf(`redis %s {
            password a-wrong-password
            timeout 2s
        }
        online %s/v1/{ip} {
            header X-Api-Key a-wrong-key
            timeout 1s
            max_qps 100
        }`, rs.Addr(), api.URL)))
	for i := range 3 {
		ask(t, s, "www.example.org", dns.TypeA, fmt.Sprintf("1.80.%d.0/24", i))
	}
	waitFor(t, "auth failures counted", func() (bool, string) {
		r, o := seriesValue(t, "coredns_gslb_geo_lookups_total", redisAuth)-r0, seriesValue(t, "coredns_gslb_online_requests_total", onlineAuth)-o0
		return r >= 3 && o >= 3, fmt.Sprintf("redis %v, online %v, API calls %d", r, o, calls.Load())
	})
	for _, w := range []string{"[WARNING] plugin/gslb: Redis refused the password", "[WARNING] plugin/gslb: Online geo API at " + strings.TrimPrefix(api.URL, "http://") + " refused the credentials"} {
		logs.line(t, w)
		if n := strings.Count(logs.String(), w); n != 1 {
			t.Errorf("Expected one warning %q for 3 failures, got %d:\n%s", w, n, logs.String())
		}
	}
}

// TestReloadSwappedDB: an ASN database written over the geoip file is
// rejected on reload, naming the option, the file and the type found,
// and the previous database keeps serving.
func TestReloadSwappedDB(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city := filepath.Join(dir, "City.mmdb")
	writeCity(t, city, "ZJ", "Hangzhou")
	nodes := writeFile(t, dir, "nodes.yaml", reloadNodes("192.0.2.10", ""))
	s := startServer(t, fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    gslb {
        geoip %s
        nodes %s
        reload 1s
    }
}`, city, nodes))
	const zj = "202.101.172.0/24"
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, zj)); got != "192.0.2.10" {
		t.Fatalf("Answer %q, want 192.0.2.10", got)
	}
	if err := mmdbgen.WriteASN(city, []mmdbgen.ASN{{Network: "202.101.172.0/24", ASN: 4134, Org: "Chinanet"}}); err != nil {
		t.Fatal(err)
	}
	want := "geoip: geo: " + city + ` is a database of type "GeoLite2-ASN", not a MaxMind City or Country database: give it to asn`
	if l := logs.line(t, "Rejected reload"); !strings.Contains(l, want) {
		t.Errorf("Expected the rejection to say %q, got %s", want, l)
	}
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, zj)); got != "192.0.2.10" {
		t.Errorf("Answer %q after a rejected database, want the previous 192.0.2.10", got)
	}
}

// TestPinCarrier: a pin whose location names no known carrier is refused
// with 400 and the nearest word; an alias is taken.
func TestPinCarrier(t *testing.T) {
	e := startAdmin(t, "")
	code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr":"1.2.3.0/24","location":{"country":"CN","province":"ZJ","isp":"telcom"}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, `location.isp: unknown carrier \"telcom\" (did you mean telecom?)`) {
		t.Errorf("Expected 400 naming the carrier, got %d %s", code, body)
	}
	if code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr":"1.2.3.0/24","location":{"country":"CN","province":"ZJ","isp":"CTCC"}}`); code != http.StatusOK {
		t.Errorf("Expected an alias to be taken, got %d %s", code, body)
	}
}
