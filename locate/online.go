package locate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/recovery"

	"golang.org/x/time/rate"
)

// maxBody bounds what is read from the online API.
const maxBody = 64 << 10

// onlineAnswer is the online API's JSON schema:
//
//	{"ip": "1.2.3.4", "network": "1.2.3.0/24", "country": "CN", "province": "HB",
//	 "city": "Wuhan", "isp": "telecom", "lat": 30.59, "lon": 114.30}
type onlineAnswer struct {
	IP       string   `json:"ip"`
	Network  string   `json:"network"`
	Country  string   `json:"country"`
	Province string   `json:"province"`
	City     string   `json:"city"`
	ISP      string   `json:"isp"`
	ASN      uint32   `json:"asn"`
	Lat      *float64 `json:"lat"`
	Lon      *float64 `json:"lon"`
}

// ipAPIAnswer is ip-api.com's JSON (http://ip-api.com/json/{ip}).
type ipAPIAnswer struct {
	Status      string   `json:"status"`
	Message     string   `json:"message"`
	Query       string   `json:"query"`
	CountryCode string   `json:"countryCode"`
	Region      string   `json:"region"`
	RegionName  string   `json:"regionName"`
	City        string   `json:"city"`
	Lat         *float64 `json:"lat"`
	Lon         *float64 `json:"lon"`
	ISP         string   `json:"isp"`
	AS          string   `json:"as"` // "AS4134 CHINANET-BACKBONE"
}

func (a *ipAPIAnswer) answer() (onlineAnswer, error) {
	if a.Status != "" && a.Status != "success" {
		return onlineAnswer{}, fmt.Errorf("ip-api status %q: %s", a.Status, a.Message)
	}
	o := onlineAnswer{IP: a.Query, Country: a.CountryCode, Province: a.Region,
		City: a.City, ISP: a.ISP, Lat: a.Lat, Lon: a.Lon}
	if a.Region == "" {
		o.Province = a.RegionName
	}
	if as, _, _ := strings.Cut(a.AS, " "); len(as) > 2 && strings.EqualFold(as[:2], "AS") {
		if n, err := strconv.ParseUint(as[2:], 10, 32); err == nil {
			o.ASN = uint32(n)
		}
	}
	return o, nil
}

// errInvalid marks an answer that was received but cannot be trusted.
var errInvalid = errors.New("invalid answer")

// sameOrigin follows a redirect only to the same scheme and host: the
// request's headers (an API key) must never reach another host.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("too many redirects")
	}
	if o := via[0].URL; req.URL.Scheme != o.Scheme || req.URL.Host != o.Host {
		return fmt.Errorf("redirect to another host %s refused", req.URL.Host)
	}
	return nil
}

// redactURL drops the query and user information of a URL, where API keys
// live, so that no log line shows them.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		s, _, _ := strings.Cut(raw, "?")
		return s
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	u.Fragment = ""
	return u.String()
}

// hostOf is the host of a URL, for a log line without the path or keys.
func hostOf(raw string) string {
	if u, err := url.Parse(strings.ReplaceAll(raw, "{ip}", "0.0.0.0")); err == nil {
		return u.Host
	}
	return "?"
}

// redactErr redacts the URL an HTTP client error carries.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		c := *ue
		c.URL = redactURL(c.URL)
		return &c
	}
	return err
}

// fetch asks the online API about addr. An error wraps errInvalid when the
// answer was unusable, context.DeadlineExceeded on a timeout.
func (o *onlineSource) fetch(ctx context.Context, addr netip.Addr, known geo.Location) (geo.Location, error) {
	cfg := &o.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.ReplaceAll(cfg.URL, "{ip}", addr.String()), nil)
	if err != nil {
		return geo.Location{}, redactErr(err)
	}
	for k, v := range cfg.Headers {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.http.Do(req)
	if err != nil {
		return geo.Location{}, redactErr(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return geo.Location{}, redactErr(err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return geo.Location{}, fmt.Errorf("%w: status %d", errAuth, resp.StatusCode)
	case resp.StatusCode >= 500:
		return geo.Location{}, fmt.Errorf("status %d", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return geo.Location{}, fmt.Errorf("%w: status %d", errInvalid, resp.StatusCode)
	}
	return decodeAnswer(cfg.Format, body, addr, known)
}

// decodeAnswer reads an API answer about addr in format and validates it;
// every error wraps errInvalid.
func decodeAnswer(format string, body []byte, addr netip.Addr, known geo.Location) (geo.Location, error) {
	var a onlineAnswer
	if format == FormatIPAPI {
		var ia ipAPIAnswer
		if err := json.Unmarshal(body, &ia); err != nil {
			return geo.Location{}, fmt.Errorf("%w: %v", errInvalid, err)
		}
		var err error
		if a, err = ia.answer(); err != nil {
			return geo.Location{}, fmt.Errorf("%w: %v", errInvalid, err)
		}
	} else if err := json.Unmarshal(body, &a); err != nil {
		return geo.Location{}, fmt.Errorf("%w: %v", errInvalid, err)
	}
	loc, err := validate(addr, &a, known)
	if err != nil {
		return geo.Location{}, fmt.Errorf("%w: %v", errInvalid, err)
	}
	return loc, nil
}

// validate turns an answer into a Location, or rejects it: a paid API is
// still wrong at times, and one bad answer would reach every instance
// through Redis. The answer must be about addr, carry a country and a known
// province, have possible coordinates, and agree with the local database's
// country.
func validate(addr netip.Addr, a *onlineAnswer, known geo.Location) (geo.Location, error) {
	bits := KeyOf(addr).Bits()
	if a.IP == "" && a.Network == "" {
		return geo.Location{}, errors.New("neither ip nor network")
	}
	if a.IP != "" {
		ip, err := netip.ParseAddr(strings.TrimSpace(a.IP))
		if err != nil || ip.Unmap() != addr {
			return geo.Location{}, fmt.Errorf("ip %q is not %s", a.IP, addr)
		}
	}
	if a.Network != "" {
		p, err := netip.ParsePrefix(strings.TrimSpace(a.Network))
		if err != nil || !p.Contains(addr) {
			return geo.Location{}, fmt.Errorf("network %q does not contain %s", a.Network, addr)
		}
		// We cache per /24 (/48): a wider network still only vouches for that.
		bits = max(bits, uint8(p.Bits()))
	}
	country := strings.ToUpper(strings.TrimSpace(a.Country))
	if len(country) != 2 || country[0] < 'A' || country[0] > 'Z' || country[1] < 'A' || country[1] > 'Z' {
		return geo.Location{}, fmt.Errorf("country %q", a.Country)
	}
	if known.Country != "" && known.Country != country {
		return geo.Location{}, fmt.Errorf("country %s, local database says %s", country, known.Country)
	}
	prov, ok := geo.NormalizeProvince(country, a.Province)
	if !ok {
		return geo.Location{}, fmt.Errorf("province %q of %s", a.Province, country)
	}
	loc := geo.Location{
		Country:   country,
		Continent: geo.ContinentOf(country),
		Province:  prov,
		City:      strings.TrimSpace(a.City),
		ISP:       strings.TrimSpace(a.ISP), // the carrier table maps it
		ASN:       a.ASN,
		Bits:      bits,
		Source:    geo.SourceOnline,
	}
	if (a.Lat == nil) != (a.Lon == nil) {
		return geo.Location{}, errors.New("lat without lon")
	}
	if a.Lat != nil {
		if !validCoords(*a.Lat, *a.Lon) {
			return geo.Location{}, fmt.Errorf("coordinates %v,%v", *a.Lat, *a.Lon)
		}
		loc.HasCoords, loc.Lat, loc.Lon = true, *a.Lat, *a.Lon
	}
	if loc.ISP == "" {
		loc.ISP, loc.ASN = known.ISP, known.ASN
	}
	if loc.Continent == "" {
		loc.Continent = known.Continent
	}
	return loc, nil
}

// onlineSource is the online API's link. It never answers a query: it asks
// the API about the /24 (/48) in the background, at most once at a time per
// /24, within max_qps and while the breaker allows, and lets the earlier
// links learn the answer for the next queries.
type onlineSource struct {
	l           *Locator
	index       int // the link's place in the chain: the ones before it learn
	cfg         OnlineConfig
	http        *http.Client
	limiter     *rate.Limiter
	breaker     breaker
	maxInflight int
	authLog     ratelog.Limit

	ctx    context.Context // cancelled by close: aborts online calls
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight map[Key]struct{} // /24s being asked
	closed   bool
}

func newOnlineSource(l *Locator, cfg OnlineConfig, index int) *onlineSource {
	cfg.Headers = cfg.Headers.Clone()
	o := &onlineSource{l: l, index: index, cfg: cfg, inflight: make(map[Key]struct{})}
	o.maxInflight = int(2*cfg.MaxQPS) + 1
	o.limiter = rate.NewLimiter(rate.Limit(cfg.MaxQPS), max(1, int(cfg.MaxQPS)))
	o.breaker = breaker{
		threshold: cfg.BreakerFailures,
		window:    cfg.BreakerWindow,
		onChange: func(open bool) {
			if open {
				OnlineBreakerOpen.Set(1)
				log.Warningf("Online geo API breaker open for %v after %d failures", cfg.BreakerWindow, cfg.BreakerFailures)
			} else {
				OnlineBreakerOpen.Set(0)
				log.Infof("Online geo API breaker closed")
			}
		},
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = o.maxInflight
	o.http = &http.Client{Transport: tr, Timeout: cfg.Timeout, CheckRedirect: sameOrigin}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	return o
}

func (o *onlineSource) Name() string { return "online" }

// Locate sets off a lookup of q's /24 and is never final: the query is
// answered at once with what is known.
func (o *onlineSource) Locate(_ context.Context, q *Query) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return false
	}
	if _, busy := o.inflight[q.Key]; busy {
		o.mu.Unlock()
		return false
	}
	now := o.l.now()
	if len(o.inflight) >= o.maxInflight || !o.limiter.AllowN(now, 1) || !o.breaker.allow(now) {
		o.mu.Unlock()
		onlineRefused.Inc()
		return false
	}
	o.inflight[q.Key] = struct{}{}
	o.wg.Add(1)
	o.mu.Unlock()

	job := Query{Addr: q.Addr, Key: q.Key, list: q.list, tag: q.tag}
	known := q.Loc
	go o.ask(&job, known)
	return false
}

func (o *onlineSource) ask(q *Query, known geo.Location) {
	defer o.wg.Done()
	defer o.release(q.Key)
	defer recovery.Guard("online")
	loc, err := o.fetch(o.ctx, q.Key.Prefix().Addr(), known)
	if o.ctx.Err() != nil { // closing: the answer no longer matters
		return
	}
	// Only an unreachable or failing API trips the breaker: an answer
	// that can't be used says nothing about the API's health, and
	// counting it would let any client switch the layer off.
	o.breaker.done(o.l.now(), err == nil || errors.Is(err, errInvalid))
	switch {
	case err == nil:
		onlineOK.Inc()
		onlineHit.Inc()
		q.Loc = loc
		o.l.learn(o.ctx, q, o.index)
	case errors.Is(err, errAuth):
		onlineAuth.Inc()
		onlineLookupAuth.Inc()
		if ok, _ := o.authLog.Allow(authLogEvery); ok {
			log.Warningf("Online geo API at %s refused the credentials (check the online block's header): %v", hostOf(o.cfg.URL), err)
		}
	case errors.Is(err, errInvalid):
		onlineInvalid.Inc()
		onlineMiss.Inc()
		log.Debugf("Online geo API answer for %s rejected: %v", q.Key.Prefix(), err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		onlineTimeout.Inc()
		onlineLookupError.Inc()
		log.Debugf("Online geo API timeout for %s: %v", q.Key.Prefix(), err)
	default:
		onlineRequestError.Inc()
		onlineLookupError.Inc()
		log.Debugf("Online geo API error for %s: %v", q.Key.Prefix(), err)
	}
}

func (o *onlineSource) release(k Key) {
	o.mu.Lock()
	delete(o.inflight, k)
	o.mu.Unlock()
}

// close cancels the calls in flight and waits for them.
func (o *onlineSource) close() error {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
	o.http.CloseIdleConnections()
	if o.breaker.isOpen() {
		OnlineBreakerOpen.Set(0)
	}
	return nil
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
