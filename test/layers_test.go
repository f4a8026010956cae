package test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
	"github.com/redis/go-redis/v9"
)

// hubei is where the online API of these tests places every address.
var hubei = testsupport.Place{Province: "HB", City: "Wuhan", ISP: "telecom", Lat: 30.59, Lon: 114.30}

// layersNodes: wh-telecom serves Hubei; bj-unicom is cheaper and less
// loaded, so it wins for a client known only as "CN".
const layersNodes = `nodes:
  - id: wh-telecom
    ipv4: [192.0.2.30]
    country: CN
    province: HB
    isp: telecom
    lat: 30.59
    lon: 114.30
    load: 0.5
    cost: 0.8
  - id: bj-unicom
    ipv4: [198.51.100.10]
    country: CN
    province: BJ
    isp: unicom
    lat: 39.90
    lon: 116.41
    load: 0.1
    cost: 0.1
records:
  - name: www.example.org
`

// TestLocationLayers: instance A learns a province from the online API and
// shares it through Redis; instance B, without an online API, answers from
// Redis. With Redis gone both keep answering.
func TestLocationLayers(t *testing.T) {
	const (
		wuhan, beijing = "192.0.2.30", "198.51.100.10"
		learned        = "1.80.5.0/24" // CN in the database, no province
	)
	logs := captureLog(t)
	rs := testredis.Start(t)
	api := testsupport.NewGeoAPI(t, hubei)
	dir := t.TempDir()
	city := filepath.Join(dir, "City.mmdb")
	if err := mmdbgen.WriteCity(city, []mmdbgen.City{{Network: "1.80.0.0/16", Country: "CN"}}); err != nil {
		t.Fatal(err)
	}
	nodes := writeFile(t, dir, "nodes.yaml", layersNodes)
	withRedis := func(online string) string {
		return corefile(city, "", nodes, fmt.Sprintf("redis %s {\n timeout 2s\n}\n%s", rs.Addr(), online))
	}
	a := startServer(t, withRedis(fmt.Sprintf(`online %s/v1/{ip} {
            timeout 1s
            max_qps 100
            breaker 3 1s
        }`, api.Server.URL)))

	// The first query is answered at once at country level.
	q := newQuery(t, "www.example.org", dns.TypeA, learned)
	r, l := queryLabels(t, a, logs, q)
	if got := answerOf(r); got != beijing {
		t.Errorf("First answer %q, want %s (country level)", got, beijing)
	}
	checkLabels(t, l, map[string]string{"country": "CN", "province": "-", "tier": "country", "geo_source": "db"})
	checkReplyECS(t, q, r, 16)

	// The online answer serves the next queries.
	waitFor(t, "the online province in A's answers", func() (bool, string) {
		r, l := queryLabels(t, a, logs, newQuery(t, "www.example.org", dns.TypeA, learned))
		return answerOf(r) == wuhan, answerOf(r) + " " + l["gslb/geo_source"]
	})
	for range 3 {
		r, l := queryLabels(t, a, logs, newQuery(t, "www.example.org", dns.TypeA, learned))
		if got := answerOf(r); got != wuhan {
			t.Errorf("Answer %q after the online lookup, want %s", got, wuhan)
		}
		checkLabels(t, l, map[string]string{"province": "HB", "city": "Wuhan", "isp": "telecom", "tier": "province_isp"})
		if s := l["gslb/geo_source"]; s != "lru" && s != "online" {
			t.Errorf("Label gslb/geo_source = %q, want lru or online", s)
		}
	}
	if n := api.Calls.Load(); n != 1 {
		t.Errorf("Online API called %d times for one /24, want 1", n)
	}

	// A wrote it to Redis (after its LRU): wait for the key before asking B,
	// which would otherwise cache its own country-level answer.
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rc.Close()
	waitFor(t, "the /24 in Redis", func() (bool, string) {
		n, err := rc.HLen(context.Background(), "gslb:geo:v1:1.80").Result()
		return err == nil && n > 0, fmt.Sprint(n, err)
	})

	// B stands for another process: in one process, instances with the
	// same cache_size share the LRU.
	b := startServer(t, withRedis("cache_size 999999"))
	r, l = queryLabels(t, b, logs, newQuery(t, "www.example.org", dns.TypeA, learned))
	if got := answerOf(r); got != wuhan {
		t.Errorf("Instance B answer %q, want %s from Redis", got, wuhan)
	}
	checkLabels(t, l, map[string]string{"province": "HB", "geo_source": "redis", "tier": "province_isp"})
	if n := api.Calls.Load(); n != 1 {
		t.Errorf("Online API called %d times, want 1: B has no online API", n)
	}

	// Redis dies: every query still gets an answer.
	rs.Stop()
	tests := []struct {
		srv  *server
		ecs  string
		want string // "" = any address
	}{
		{b, learned, wuhan},    // B's LRU
		{b, "1.80.6.0/24", ""}, // B: database, then a dead Redis
		{a, learned, wuhan},    // A's LRU
		{a, "1.80.7.0/24", ""}, // A: database, a dead Redis, online in the background
	}
	for _, tc := range tests {
		r := ask(t, tc.srv, "www.example.org", dns.TypeA, tc.ecs)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			t.Errorf("With Redis down, %s got %s %v", tc.ecs, dns.RcodeToString[r.Rcode], r.Answer)
			continue
		}
		if tc.want != "" && answerOf(r) != tc.want {
			t.Errorf("With Redis down, %s got %q, want %s", tc.ecs, answerOf(r), tc.want)
		}
	}
	// The online API still refines A without Redis.
	waitFor(t, "the online province for 1.80.7.0/24 with Redis down", func() (bool, string) {
		r := ask(t, a, "www.example.org", dns.TypeA, "1.80.7.0/24")
		return r.Rcode == dns.RcodeSuccess && answerOf(r) == wuhan, dns.RcodeToString[r.Rcode] + " " + answerOf(r)
	})
}

// checkLabels compares the given gslb/ labels of a log line.
func checkLabels(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if v := got["gslb/"+k]; v != w {
			t.Errorf("Label gslb/%s = %q, want %q", k, v, w)
		}
	}
}
