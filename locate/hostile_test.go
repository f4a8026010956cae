package locate

import (
	"fmt"
	golog "log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// A redirect to another host is not followed: the API key stays home and
// the other host's answer is not used.
func TestOnlineRedirectToAnotherHost(t *testing.T) {
	var leaked atomic.Int32
	other := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "" {
			leaked.Add(1)
		}
		other.ServeHTTP(w, r)
	}))
	defer evil.Close()
	var sameHost atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/36.0.7."):
			sameHost.Add(1)
			http.Redirect(w, r, "/v2/"+strings.TrimPrefix(r.URL.Path, "/v1/"), http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/v2/"):
			r.URL.Path = "/v1/" + strings.TrimPrefix(r.URL.Path, "/v2/")
			other.ServeHTTP(w, r)
		default:
			http.Redirect(w, r, evil.URL+r.URL.Path, http.StatusFound)
		}
	}))
	defer api.Close()
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL + "/v1/{ip}",
		Headers: http.Header{"X-Api-Key": []string{"secret"}}}})

	a := netip.MustParseAddr("36.0.5.1")
	l.Locate(ctx, a)
	l.idle(t)
	if loc := l.Locate(ctx, a); loc.Province != "" {
		t.Errorf("Answer from another host accepted: %+v", loc)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("The API key reached another host %d times", n)
	}
	// A redirect within the same host is followed.
	b := netip.MustParseAddr("36.0.7.1")
	l.Locate(ctx, b)
	l.idle(t)
	if loc := l.Locate(ctx, b); loc.Province != "ZJ" || sameHost.Load() != 1 {
		t.Errorf("Same-host redirect: got %+v after %d calls, want ZJ", loc, sameHost.Load())
	}
}

// Answers that can't be used (an unknown province, another country, a 4xx)
// are counted as invalid and never open the breaker, so that clients whose
// subnets the API can't place cannot switch the layer off for everyone.
func TestOnlineInvalidDoesNotTripBreaker(t *testing.T) {
	clk := testsupport.NewClock()
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	l := newLocatorClock(t, Config{DB: testDB(t),
		Online: &OnlineConfig{URL: api.URL(), BreakerFailures: 3, MaxQPS: 1000}}, clk)
	before := snapshot()
	for i, mode := range []int32{testsupport.APIBadProvince, testsupport.APIWrongCountry, testsupport.APIGarbage, testsupport.APINoCountry, testsupport.APIBadProvince, testsupport.APIWrongCountry} {
		api.Mode.Store(mode)
		l.Locate(ctx, netip.MustParseAddr(fmt.Sprintf("36.0.%d.1", 10+i)))
		l.idle(t)
	}
	if gauge(OnlineBreakerOpen) != 0 {
		t.Fatalf("Breaker opened on invalid answers")
	}
	api.Mode.Store(testsupport.APIGood)
	a := netip.MustParseAddr("36.0.20.1")
	l.Locate(ctx, a)
	l.idle(t)
	if loc := l.Locate(ctx, a); loc.Province != "ZJ" {
		t.Errorf("After invalid answers, a placeable subnet got %+v, want ZJ", loc)
	}
	if d := before.delta(); d["online:invalid"] != 6 || d["online:ok"] != 1 || d["online:refused"] != 0 {
		t.Errorf("Got deltas %v, want 6 invalid and 1 ok", d)
	}
}

// The API is asked about the network the answer is cached for, never about
// the client's full address.
func TestOnlineAsksForTheNetwork(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: srv.URL + "/v1/{ip}"}})
	for _, a := range []string{"36.0.9.77", "2400:3200:1234:5678::9"} {
		l.Locate(ctx, netip.MustParseAddr(a))
		l.idle(t)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(paths, " "); got != "/v1/36.0.9.0 /v1/2400:3200:1234::" {
		t.Errorf("API asked for %s, want the /24 and the /48", got)
	}
}

// No log line shows the URL's query string, where API keys live.
func TestOnlineLogsRedactKeys(t *testing.T) {
	var buf testsupport.LogBuffer
	golog.SetOutput(&buf)
	clog.D.Set()
	defer func() { clog.D.Clear(); clog.Discard() }()

	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	api.Mode.Store(testsupport.APIFail)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	for _, u := range []string{api.Server.URL + "/v1/{ip}?key=TOPSECRET", closedURL + "/{ip}?key=TOPSECRET"} {
		l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: u}})
		l.Locate(ctx, netip.MustParseAddr("36.0.30.1"))
		l.idle(t)
	}
	out := buf.String()
	if !strings.Contains(out, "Online geo API") {
		t.Fatalf("Expected debug log lines about the API, got %q", out)
	}
	if strings.Contains(out, "TOPSECRET") {
		t.Errorf("A log line shows the API key: %q", out)
	}
}
