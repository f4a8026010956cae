package locate

import (
	"context"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// Trace asks every source, the online API synchronously, and reports what
// each said; it learns nothing.
func TestTrace(t *testing.T) {
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL(), MaxQPS: 1000}})
	ctx := context.Background()

	// Province level in the database: final there, the API not asked.
	r, steps := l.Trace(ctx, netip.MustParseAddr("1.0.1.9"))
	if r.Province != "ZJ" || r.ISP != "telecom" || len(steps) != 1 || steps[0].Source != "geoip" || !steps[0].Final ||
		steps[0].Location.ISP != "telecom" {
		t.Errorf("Expected the database to place 1.0.1.9 in ZJ on telecom, got %+v, %+v", r, steps)
	}

	// Country level: the online API is asked, and waited for.
	r, steps = l.Trace(ctx, netip.MustParseAddr("36.0.5.1"))
	if len(steps) != 2 || steps[0].Source != "geoip" || steps[0].Final || steps[0].Location.Province != "" ||
		steps[1].Source != "online" || !steps[1].Final || !steps[1].Found {
		t.Fatalf("Expected geoip then online, got %+v", steps)
	}
	if r.Province != "ZJ" || r.ISP != "telecom" {
		t.Errorf("Expected the API's answer, ZJ telecom, got %+v", r.Location)
	}
	if api.Calls.Load() != 1 {
		t.Errorf("Expected one API call, got %d", api.Calls.Load())
	}
	// It learned nothing: Locate still has only the database's answer,
	// and sets off its own lookup.
	if got := l.Locate(ctx, netip.MustParseAddr("36.0.5.1")); got.Province != "" {
		t.Errorf("Expected Trace not to fill the LRU, got %+v", got.Location)
	}

	// A failing API is reported, not fatal.
	api.Mode.Store(testsupport.APIFail)
	_, steps = l.Trace(ctx, netip.MustParseAddr("36.0.9.1"))
	if len(steps) != 2 || steps[1].Err == "" || steps[1].Found {
		t.Errorf("Expected the API's failure in the steps, got %+v", steps)
	}

	// Special ranges have no sources.
	if r, steps := l.Trace(ctx, netip.MustParseAddr("10.1.2.3")); !r.Special || len(steps) != 0 {
		t.Errorf("Expected a special range without steps, got %+v %+v", r, steps)
	}
}
