// Package testsupport holds what the tests of several packages share: a
// bounded poll, a manual clock, a log buffer, database fixtures, and an
// online geo API on loopback.
package testsupport

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo/ip2regiongen"
	"github.com/gslbdns/gslb/geo/ipdbgen"
	"github.com/gslbdns/gslb/geo/mmdbgen"
)

// Bounds of WaitFor. The timeout is generous: it only costs time when a
// test fails, and a machine loaded by other builds can be slow to get there.
const (
	PollEvery   = 20 * time.Millisecond
	WaitTimeout = 30 * time.Second
)

// WaitFor polls cond until it holds, and fails t after WaitTimeout with
// what cond said last.
func WaitFor(t testing.TB, what string, cond func() (ok bool, last string)) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Timed out after %v waiting for %s; last: %s", WaitTimeout, what, last)
		}
		time.Sleep(PollEvery)
	}
}

// Clock is a manual clock for TTLs, breakers, rate limits and hold-downs.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock {
	c := &Clock{}
	c.ns.Store(time.Unix(1700000000, 0).UnixNano())
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// LogBuffer collects what loggers write, from any goroutine.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset empties the buffer.
func (b *LogBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// WriteDBs writes a City and, when asns is not nil, an ASN database into dir
// with the project's generator, and returns their paths ("" for no ASN).
func WriteDBs(t testing.TB, dir string, cities []mmdbgen.City, asns []mmdbgen.ASN) (city, asn string) {
	t.Helper()
	city = filepath.Join(dir, "city.mmdb")
	if err := mmdbgen.WriteCity(city, cities); err != nil {
		t.Fatalf("WriteCity: %v", err)
	}
	if asns == nil {
		return city, ""
	}
	asn = filepath.Join(dir, "asn.mmdb")
	if err := mmdbgen.WriteASN(asn, asns); err != nil {
		t.Fatalf("WriteASN: %v", err)
	}
	return city, asn
}

// IPDBRow is one network of an IPIP.net test database, in its fields.
type IPDBRow struct {
	Network                                       string
	CountryName, RegionName, CityName, ISP, CCode string
}

// WriteIPDB writes an IPIP.net database of rows into dir with the
// project's generator and returns its path.
func WriteIPDB(t testing.TB, dir string, rows []IPDBRow) string {
	t.Helper()
	m := ipdbgen.Meta{Build: 1700000000, Languages: []string{"CN"},
		Fields: []string{"country_name", "region_name", "city_name", "isp_domain", "country_code"}}
	recs := make([]ipdbgen.Rec, len(rows))
	for i, r := range rows {
		recs[i] = ipdbgen.Rec{Network: netip.MustParsePrefix(r.Network),
			Values: map[string][]string{"CN": {r.CountryName, r.RegionName, r.CityName, r.ISP, r.CCode}}}
	}
	p := filepath.Join(dir, "test.ipdb")
	if err := ipdbgen.Write(p, m, recs); err != nil {
		t.Fatalf("ipdbgen: %v", err)
	}
	return p
}

// XDBRow is one network of an ip2region test database, in its fields.
type XDBRow struct {
	Network                           string
	Country, Province, City, ISP, ISO string
}

// WriteIP2Region writes an ip2region xdb database of rows (all of one
// family) to dir/name with the project's generator and returns its path.
func WriteIP2Region(t testing.TB, dir, name string, rows []XDBRow) string {
	t.Helper()
	m := ip2regiongen.Meta{IPVersion: 4, Created: 1700000000}
	recs := make([]ip2regiongen.Rec, len(rows))
	for i, r := range rows {
		p := netip.MustParsePrefix(r.Network)
		if p.Addr().Is6() {
			m.IPVersion = 6
		}
		recs[i] = ip2regiongen.PrefixRec(p, ip2regiongen.Region(r.Country, r.Province, r.City, r.ISP, r.ISO))
	}
	p := filepath.Join(dir, name)
	if err := ip2regiongen.Write(p, m, recs); err != nil {
		t.Fatalf("ip2regiongen: %v", err)
	}
	return p
}

// AliasBomb is the alias bomb: a line, indented by indent, whose
// mapping key is the alias *k and whose value expands to 10^9 scalars. The
// caller anchors &k on a string the schema accepts before it, so that the
// alias key is the file's first error.
func AliasBomb(indent string) string {
	var b strings.Builder
	b.WriteString(indent + "*k : [&a0 [x,x,x,x,x,x,x,x,x,x]")
	for i := 1; i <= 8; i++ {
		ref := strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10)
		fmt.Fprintf(&b, ", &a%d [%s]", i, ref[:len(ref)-1])
	}
	b.WriteString("]\n")
	return b.String()
}
