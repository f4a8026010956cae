package locate

import (
	"errors"
	"math"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo"
)

// FuzzOnlineAnswer: any body the online API sends is either a valid
// location about the asked address or an invalid answer, never a panic.
func FuzzOnlineAnswer(f *testing.F) {
	f.Add(false, []byte(`{"ip":"1.0.1.0","network":"1.0.1.0/24","country":"CN","province":"HB","city":"Wuhan","isp":"telecom","lat":30.59,"lon":114.3}`))
	f.Add(true, []byte(`{"status":"success","query":"1.0.1.0","countryCode":"CN","region":"ZJ","city":"Hangzhou","lat":30.29,"lon":120.16,"isp":"Chinanet","as":"AS4134 CHINANET"}`))
	f.Fuzz(func(t *testing.T, ipAPI bool, body []byte) {
		format := ""
		if ipAPI {
			format = FormatIPAPI
		}
		addr := netip.MustParseAddr("1.0.1.0")
		loc, err := decodeAnswer(format, body, addr, geo.Location{Country: "CN"})
		if err != nil {
			if !errors.Is(err, errInvalid) {
				t.Fatalf("Error %v does not wrap errInvalid", err)
			}
			return
		}
		if loc.Country != "CN" || loc.Province == "" || loc.Bits < 24 || loc.Bits > 32 {
			t.Fatalf("Accepted an answer that breaks the rules: %+v", loc)
		}
		if loc.HasCoords && (math.IsNaN(loc.Lat) || math.Abs(loc.Lat) > 90 || math.Abs(loc.Lon) > 180) {
			t.Fatalf("Accepted impossible coordinates: %+v", loc)
		}
	})
}

// FuzzRedisValue: a value read from Redis (written by any version, or by
// anyone with access) decodes to a sane location or an error.
func FuzzRedisValue(f *testing.F) {
	f.Add("1|CN|AS|HB|Wuhan|telecom|4134|30.5900|114.3000|50|24")
	f.Add("1|US|NA||||15169|||1000|16")
	f.Fuzz(func(t *testing.T, v string) {
		loc, err := decode(v)
		if err != nil {
			return
		}
		if loc.Bits > 128 || (loc.HasCoords && !validCoords(loc.Lat, loc.Lon)) {
			t.Fatalf("Decoded an impossible location from %q: %+v", v, loc)
		}
		if again, err := decode(encode(&loc)); err != nil || again.Country != loc.Country || again.Province != loc.Province {
			t.Fatalf("Round trip of %q: %+v then %+v (%v)", v, loc, again, err)
		}
	})
}
