package locate

import (
	"context"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/overrides"
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
		t.Errorf("Expected Trace not to fill the cache, got %+v", got.Location)
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

// fixedSource is a source that is not a Tracer: it places every address
// in Shanghai on AS4134.
type fixedSource struct{}

func (fixedSource) Name() string { return "fixed" }

func (fixedSource) Locate(_ context.Context, q *Query) bool {
	q.Loc = geo.Location{Country: "CN", Province: "SH", ASN: 4134, Bits: 24}
	return true
}

// A source that is not a Tracer is still in the trace, under its name,
// with its carrier mapped.
func TestTraceOtherSource(t *testing.T) {
	l := newLocator(t, Config{DB: testDB(t)})
	l.sources = append(l.sources, fixedSource{})
	r, steps := l.Trace(context.Background(), netip.MustParseAddr("36.0.5.1"))
	if len(steps) != 2 || steps[0].Source != "geoip" || steps[0].Final ||
		steps[1].Source != "fixed" || !steps[1].Final || !steps[1].Found || steps[1].Location.ISP != "telecom" {
		t.Fatalf("Expected geoip then fixed, final, on telecom, got %+v", steps)
	}
	if r.Province != "SH" || r.ISP != "telecom" {
		t.Errorf("Expected the fixed source's answer, SH telecom, got %+v", r.Location)
	}
}

// An override that is final stays final past the cache: the databases are
// reported, not asked.
func TestTraceOverrideFinal(t *testing.T) {
	l := newLocator(t, Config{DB: testDB(t)})
	ov, err := overrides.Parse("overrides.yaml", []byte("overrides:\n  - {cidr: 1.0.1.0/24, location: {country: CN, province: BJ}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.SetOverrides(ov)
	r, steps := l.Trace(context.Background(), netip.MustParseAddr("1.0.1.9"))
	if len(steps) != 2 || steps[0].Source != "override" || !steps[0].Final || steps[1].Source != "geoip" || steps[1].Final {
		t.Fatalf("Expected a final override, then geoip not final, got %+v", steps)
	}
	if r.Province != "BJ" {
		t.Errorf("Expected the override's province BJ, got %+v", r.Location)
	}
}
