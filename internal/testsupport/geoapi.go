package testsupport

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Behaviours of GeoAPI.
const (
	APIGood         int32 = iota
	APISlow               // blocks until Unblock, or the request is cancelled
	APIFail               // HTTP 500
	APIGarbage            // not JSON
	APIWrongRange         // a network that does not contain the address
	APIDefault            // one fixed answer for every address
	APIBadCoords          // latitude 95
	APIZeroCoords         // 0,0
	APINoCountry          // country missing
	APIWrongCountry       // disagrees with the local database
	APIBadProvince        // a province that does not exist
)

// Place is where GeoAPI puts every address it is asked about.
type Place struct {
	Province, City, ISP string
	Lat, Lon            float64
}

// Hangzhou is a Zhejiang, China Telecom place, in Chinese spellings.
var Hangzhou = Place{Province: "浙江", City: "Hangzhou", ISP: "电信", Lat: 30.2, Lon: 120.1}

// GeoAPI is an online geo API on 127.0.0.1: GET /v1/{ip} answers with the
// address's /24 (/48) in China, at Place, or as Mode says.
type GeoAPI struct {
	*httptest.Server
	Place Place
	Mode  atomic.Int32
	Calls atomic.Int32

	mu      sync.Mutex
	release chan struct{}
}

// NewGeoAPI starts an API that places every address at p.
func NewGeoAPI(t testing.TB, p Place) *GeoAPI {
	a := &GeoAPI{Place: p, release: make(chan struct{})}
	a.Server = httptest.NewServer(a)
	t.Cleanup(a.Close)
	t.Cleanup(a.Unblock)
	return a
}

// URL is the Corefile's online URL.
func (a *GeoAPI) URL() string { return a.Server.URL + "/v1/{ip}" }

// Unblock releases the requests APISlow holds.
func (a *GeoAPI) Unblock() {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.release:
	default:
		close(a.release)
	}
}

func (a *GeoAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.Calls.Add(1)
	ip, err := netip.ParseAddr(strings.TrimPrefix(r.URL.Path, "/v1/"))
	if err != nil {
		http.Error(w, "bad ip", http.StatusBadRequest)
		return
	}
	bits := 48
	if ip.Is4() {
		bits = 24
	}
	p, _ := ip.Prefix(bits)
	ans := map[string]any{"ip": ip.String(), "network": p.String(), "country": "CN",
		"province": a.Place.Province, "city": a.Place.City, "isp": a.Place.ISP, "lat": a.Place.Lat, "lon": a.Place.Lon}
	switch a.Mode.Load() {
	case APISlow:
		a.mu.Lock()
		ch := a.release
		a.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	case APIFail:
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	case APIGarbage:
		w.Write([]byte("<html>rate limited</html>"))
		return
	case APIWrongRange:
		ans["network"] = "1.2.3.0/24"
		delete(ans, "ip")
	case APIDefault:
		ans = map[string]any{"ip": "1.2.3.4", "country": "CN", "province": "BJ", "lat": 39.9, "lon": 116.4}
	case APIBadCoords:
		ans["lat"] = 95.0
	case APIZeroCoords:
		ans["lat"], ans["lon"] = 0.0, 0.0
	case APINoCountry:
		delete(ans, "country")
	case APIWrongCountry:
		ans["country"], ans["province"] = "US", "CA"
	case APIBadProvince:
		ans["province"] = "Atlantis"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
}
