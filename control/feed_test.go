package control

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/feed"
)

const (
	feedToken  = "hz-feed-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
)

// feedBlock is a block with an admin listener and a feed source hz for
// the Zhejiang nodes; the token files are written into dir.
func feedBlock(t *testing.T, dir, hzToken string) string {
	t.Helper()
	for name, tok := range map[string]string{"hz.token": hzToken, "admin.token": adminToken} {
		if tok == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf(fixtureBlock, "admin 127.0.0.1:0 {\ntoken_file admin.token\n}\nfeed {\nsource hz {\ntoken_file hz.token\nnodes hz-*\n}\n}\n")
}

// postFeed posts the row (its start a %q, a minute before now) to b's
// feed with the source's token.
func postFeed(t *testing.T, b *adminBackend, row string, now time.Time) {
	t.Helper()
	srv := httptest.NewServer(b.FeedHandler())
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(fmt.Sprintf(row, now.Add(-time.Minute).Format(time.RFC3339))))
	req.Header.Set("Authorization", "Bearer "+feedToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/feed: %s", resp.Status)
	}
}

// A source's token file is read at load: a missing one, or one with the
// admin's token, fails the load naming the source's line.
func TestLoadFeedTokens(t *testing.T) {
	for _, tc := range []struct {
		name, token, want string
	}{
		{"missing", "", "Testfile:9 - Error during parsing: feed: source hz: token_file: open "},
		{"the admin's", adminToken, "Testfile:9 - Error during parsing: feed: source hz: its token is the admin token: give each its own"},
	} {
		dir := fixture(t, fixtureNodes)
		block := feedBlock(t, dir, tc.token)
		d := newDispenser(block)
		o, err := config.Parse(d, nil, dir, config.Unique{})
		if err != nil {
			t.Fatalf("%s: Parse: %v", tc.name, err)
		}
		c, err := New(o)
		if err == nil {
			c.Stop()
			t.Fatalf("%s: loaded", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Rows posted to the feed are placed by the control's own locator, folded
// on a cycle into the published cells, and shown with the explanations of
// the clients of their place.
func TestFeedCells(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	c := newTestControl(t, dir, feedBlock(t, dir, feedToken))
	b := &adminBackend{c: c}
	now := time.Now()
	postFeed(t, b, `{"node":"hz-a","start":%q,"seconds":60,"client":"1.0.1.0/24","requests":1000,"errors":5,"hits":900,"ttfb_p50_ms":20,"ttfb_p95_ms":80}`, now)
	c.fold(now)

	got, err := b.FeedCells()
	if err != nil {
		t.Fatal(err)
	}
	cells := got.(feed.CellsJSON).Cells
	if len(cells) != 1 || cells[0].Key != (feed.Key{Province: "ZJ", ISP: "telecom", Node: "hz-a"}) {
		t.Fatalf("Cells %+v, want hz-a's for Zhejiang telecom", cells)
	}

	for _, tc := range []struct {
		province, isp string
		want          int
	}{
		{"ZJ", "telecom", 1}, {"ZJ", "", 0}, {"SH", "telecom", 0}, {"", "", 0},
	} {
		x := &decide.Explanation{}
		x.Location.Province, x.Location.ISP = tc.province, tc.isp
		e, ok := c.withCells(x).(explainedFeed)
		if !ok || e.Explanation != x || len(e.Feed) != tc.want {
			t.Errorf("withCells(%s %s) = %+v, want %d cells", tc.province, tc.isp, e, tc.want)
		}
	}
}

// Without a feed block there is no handler, GET /v1/feed is not found,
// explanations carry no cells and no fold runs.
func TestNoFeed(t *testing.T) {
	c := newTestControl(t, fixture(t, fixtureNodes), fmt.Sprintf(fixtureBlock, ""))
	b := &adminBackend{c: c}
	if b.FeedHandler() != nil {
		t.Error("A handler without a feed block")
	}
	if _, err := b.FeedCells(); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("FeedCells: %v, want ErrNotFound", err)
	}
	x := &decide.Explanation{}
	if got := c.withCells(x); got != any(x) {
		t.Errorf("withCells = %+v, want the explanation itself", got)
	}
	if tick, stop := c.feedTick(); tick != nil {
		stop()
		t.Error("A fold tick without a feed block")
	}
}
