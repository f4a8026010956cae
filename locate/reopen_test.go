package locate

import (
	"context"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// provinceDBs writes databases that place 1.0.1.0/24 in ZJ, and returns
// how to write them again with another province, and them opened.
func provinceDBs(t *testing.T) (write func(string) (string, string), city, asn string, files geo.Files, db *geo.DB) {
	t.Helper()
	dir := t.TempDir()
	write = func(province string) (city, asn string) {
		return testsupport.WriteDBs(t, dir, []mmdbgen.City{{Network: "1.0.1.0/24", Country: "CN", Province: province}},
			[]mmdbgen.ASN{{Network: "1.0.1.0/24", ASN: 4134, Org: "CHINANET"}})
	}
	city, asn = write("ZJ")
	files = geo.Files{"city": {city}, "asn": {asn}}
	db, err := geo.OpenFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return write, city, asn, files, db
}

// Reopen reads the chain's database files again; a bad file is rejected
// and the databases before it keep serving.
func TestReopen(t *testing.T) {
	write, city, asn, files, db := provinceDBs(t)
	l := newLocator(t, Config{DB: db, DBFiles: files})
	if got := l.Files(); !slices.Equal(got, []string{city, asn}) {
		t.Errorf("Files() = %v, want %v", got, []string{city, asn})
	}
	ctx, addr := context.Background(), netip.MustParseAddr("1.0.1.9")
	if r := l.Locate(ctx, addr); r.Province != "ZJ" {
		t.Fatalf("Before Reopen: %+v, want ZJ", r.Location)
	}

	write("BJ")
	if err := l.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	if r := l.Locate(ctx, addr); r.Province != "BJ" || l.DB() == db {
		t.Errorf("After Reopen: %+v, want BJ from new databases", r.Location)
	}

	kept := l.DB()
	if err := os.WriteFile(city, []byte(strings.Repeat("not a maxmind db ", 64)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err == nil || !strings.Contains(err.Error(), city) {
		t.Errorf("Reopen of a corrupt file: %v, want an error naming %s", err, city)
	}
	if r := l.Locate(ctx, addr); r.Province != "BJ" || l.DB() != kept {
		t.Errorf("After a failed Reopen: %+v, want the previous databases", r.Location)
	}

	// Without files there is nothing to reopen.
	if l := newLocator(t, Config{DB: db}); len(l.Files()) != 0 || l.Reopen() != nil || l.DB() != db {
		t.Errorf("A locator given only a DB: files %v", l.Files())
	}
}
