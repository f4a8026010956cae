package feed

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gslbdns/gslb/scoring"
)

// The loop's tests run the fold on a virtual clock, one cycle a minute,
// and decide for every client /24 of four places with what it made.

type place struct {
	province, isp string
	client        scoring.Client
	subnets       int
}

var loopPlaces = []place{
	{"ZJ", "telecom", scoring.Client{Country: "CN", Province: "ZJ", ISP: "telecom", HasCoords: true, Lat: 30.27, Lon: 120.16, ProvinceLevel: true}, 4000},
	{"ZJ", "unicom", scoring.Client{Country: "CN", Province: "ZJ", ISP: "unicom", HasCoords: true, Lat: 30.27, Lon: 120.16, ProvinceLevel: true}, 4000},
	{"JS", "telecom", scoring.Client{Country: "CN", Province: "JS", ISP: "telecom", HasCoords: true, Lat: 32.06, Lon: 118.80, ProvinceLevel: true}, 4000},
	{"SH", "telecom", scoring.Client{Country: "CN", Province: "SH", ISP: "telecom", HasCoords: true, Lat: 31.23, Lon: 121.47, ProvinceLevel: true}, 4000},
}

var loopNodes = []scoring.Node{
	{ID: "hz-1", Country: "CN", Province: "ZJ", ISP: "telecom", Lat: 30.27, Lon: 120.16, Load: 0.3},
	{ID: "hz-2", Country: "CN", Province: "ZJ", ISP: "telecom", Lat: 30.27, Lon: 120.16, Load: 0.3},
	{ID: "hz-3", Country: "CN", Province: "ZJ", ISP: "telecom", Lat: 30.27, Lon: 120.16, Load: 0.3},
	{ID: "hzu-1", Country: "CN", Province: "ZJ", ISP: "unicom", Lat: 30.27, Lon: 120.16, Load: 0.3},
	{ID: "hzu-2", Country: "CN", Province: "ZJ", ISP: "unicom", Lat: 30.27, Lon: 120.16, Load: 0.3},
	{ID: "nj-1", Country: "CN", Province: "JS", ISP: "telecom", Lat: 32.06, Lon: 118.80, Load: 0.3},
	{ID: "nj-2", Country: "CN", Province: "JS", ISP: "telecom", Lat: 32.06, Lon: 118.80, Load: 0.3},
}

func loopIndex(id string) (int, bool) {
	for i, n := range loopNodes {
		if n.ID == id {
			return i, true
		}
	}
	return 0, false
}

// loopParams weigh quality as the README suggests when it is measured.
func loopParams() *scoring.Params {
	p := scoring.DefaultParams
	p.Weights = scoring.Weights{0.4, 0.2, 0.1, 0.3}
	return &p
}

// edge is what every node's edge reports per cycle for one place: the
// TTFB p50 (p95 three times it) and the 5xx share.
type edge func(pl place, node string) (p50, errRatio float64)

type loop struct {
	t    *testing.T
	fold *Fold
	now  time.Time
	cool time.Duration
	p    *scoring.Params
	all  []int
	topo *scoring.Topology
}

func newLoop(t *testing.T, maxErr float64) *loop {
	l := &loop{t: t, now: testNow, cool: time.Minute, p: loopParams(), topo: scoring.DefaultTopology(),
		fold: NewFold(FoldConfig{HalfLife: time.Minute, MaxAge: 10 * time.Minute, MinSamples: 100, Hysteresis: DefaultHysteresis, MaxErrorRate: maxErr})}
	l.p.MaxErrorRate = maxErr
	for i := range loopNodes {
		l.all = append(l.all, i)
	}
	return l
}

// cycle sends one minute of rows from every node's edge for every place
// of its carrier, through the rows' own validation, and folds.
func (l *loop) cycle(e edge) *Cells {
	l.t.Helper()
	l.now = l.now.Add(time.Minute)
	start := l.now.Add(-time.Minute).Format(time.RFC3339)
	i := 0
	for _, pl := range loopPlaces {
		for _, n := range loopNodes {
			if n.ISP != pl.isp {
				continue
			}
			p50, er := e(pl, n.ID)
			body := fmt.Sprintf(`{"node":%q,"start":%q,"seconds":60,"province":%q,"isp":%q,"requests":1000,"errors":%g,"hits":800,"ttfb_p50_ms":%g,"ttfb_p95_ms":%g}`,
				n.ID, start, pl.province, pl.isp, 1000*er, p50, 3*p50)
			rows, err := Decode([]byte(body), 1)
			if err != nil {
				l.t.Fatal(err)
			}
			r, err := rows[0].Check(i, func(id string) bool { _, ok := loopIndex(id); return ok }, l.now, 10*time.Minute)
			if err != nil {
				l.t.Fatal(err)
			}
			l.fold.Add(Key{Province: r.Province, ISP: r.ISP, Node: r.Node}, &r, "edges")
			i++
		}
	}
	return l.fold.Fold(l.now)
}

// decisions is the node of every /24 of every place, at the loop's now.
func (l *loop) decisions(c *Cells) [][]string {
	links, _ := c.Links(loopIndex, nil, l.now, l.cool)
	out := make([][]string, len(loopPlaces))
	for pi, pl := range loopPlaces {
		out[pi] = make([]string, pl.subnets)
		for s := range pl.subnets {
			cl := pl.client
			d := scoring.Decide(&scoring.Input{Client: &cl, Nodes: loopNodes, Cand: l.all, Topo: l.topo,
				Params: l.p, Quality: links, Key: uint64(pi<<20|s<<8) | 4<<32})
			out[pi][s] = "none"
			if d.Node >= 0 {
				out[pi][s] = loopNodes[d.Node].ID
			}
		}
	}
	return out
}

func steady(pl place, node string) (float64, float64) { return 20, 0 }

// One of three Zhejiang telecom nodes gets 80 ms slower for Zhejiang
// telecom clients only: within two cycles at least 90% of the Zhejiang
// telecom /24s it had leave it, and at most 0.5% of all others move.
func TestReactionToSlowerNode(t *testing.T) {
	l := newLoop(t, 0.2)
	var c *Cells
	for range 10 {
		c = l.cycle(steady)
	}
	before := l.decisions(c)
	slow := func(pl place, node string) (float64, float64) {
		if node == "hz-1" && pl.province == "ZJ" && pl.isp == "telecom" {
			return 100, 0
		}
		return 20, 0
	}
	for range 2 {
		c = l.cycle(slow)
	}
	after := l.decisions(c)
	had, left, others, moved := 0, 0, 0, 0
	for pi := range loopPlaces {
		for s := range before[pi] {
			if pi == 0 && before[pi][s] == "hz-1" {
				had++
				if after[pi][s] != "hz-1" {
					left++
				}
				continue
			}
			others++
			if before[pi][s] != after[pi][s] {
				moved++
			}
		}
	}
	if had == 0 || float64(left) < 0.9*float64(had) {
		t.Errorf("%d of the %d Zhejiang telecom /24s on hz-1 left it within two cycles, want at least 90%%", left, had)
	}
	if float64(moved) > 0.005*float64(others) {
		t.Errorf("%d of %d other /24s moved, want at most 0.5%%", moved, others)
	}
	t.Logf("Zhejiang telecom /24s on hz-1: %d, left within two cycles: %d; other /24s: %d, moved: %d", had, left, others, moved)
}

// With ±20% noise on every cell's TTFB and nothing else changing, at most
// 1% of the /24s change node in any 10 minutes.
func TestStabilityUnderNoise(t *testing.T) {
	l := newLoop(t, 0.2)
	r := rand.New(rand.NewPCG(7, 8))
	noisy := func(pl place, node string) (float64, float64) { return 20 * (0.8 + 0.4*r.Float64()), 0 }
	var c *Cells
	for range 10 {
		c = l.cycle(noisy)
	}
	total := 0
	for _, pl := range loopPlaces {
		total += pl.subnets
	}
	prev := l.decisions(c)
	for window := range 6 {
		changed := map[[2]int]bool{}
		for range 10 {
			cur := l.decisions(l.cycle(noisy))
			for pi := range cur {
				for s := range cur[pi] {
					if cur[pi][s] != prev[pi][s] {
						changed[[2]int{pi, s}] = true
					}
				}
			}
			prev = cur
		}
		if f := float64(len(changed)) / float64(total); f > 0.01 {
			t.Errorf("Window %d: %d of %d /24s (%.2f%%) changed node in 10 minutes, want at most 1%%", window, len(changed), total, 100*f)
		} else {
			t.Logf("Window %d: %d of %d /24s changed node in 10 minutes", window, len(changed), total)
		}
	}
}

// A 5xx ratio above max_error_rate from Zhejiang telecom takes hz-1 out
// for Zhejiang telecom clients only; when it falls, they come back over
// the cooldown.
func TestErrorsTakeNodeOutForPlace(t *testing.T) {
	l := newLoop(t, 0.2)
	var c *Cells
	for range 10 {
		c = l.cycle(steady)
	}
	before := l.decisions(c)
	failing := func(pl place, node string) (float64, float64) {
		if node == "hz-1" && pl.province == "ZJ" && pl.isp == "telecom" {
			return 20, 0.5
		}
		return 20, 0
	}
	c = l.cycle(failing)
	during := l.decisions(c)
	for s := range during[0] {
		if during[0][s] == "hz-1" {
			t.Fatalf("Zhejiang telecom /24 %d still on hz-1 with 50%% 5xx", s)
		}
	}
	unchanged := func(d [][]string) {
		t.Helper()
		for pi := 1; pi < len(d); pi++ {
			for s := range d[pi] {
				if d[pi][s] != before[pi][s] {
					t.Fatalf("%s %s /24 %d moved from %s to %s: only Zhejiang telecom clients may move", loopPlaces[pi].province, loopPlaces[pi].isp, s, before[pi][s], d[pi][s])
				}
			}
		}
	}
	unchanged(during)
	onHZ1 := 0
	for pi := 1; pi < len(before); pi++ {
		for _, n := range before[pi] {
			if n == "hz-1" {
				onHZ1++
			}
		}
	}
	if onHZ1 == 0 {
		t.Fatal("No /24 of another place was on hz-1: the test shows nothing")
	}
	// The errors stop: the ratio decays below max_error_rate, then the
	// clients come back step by step over the cooldown.
	var back []int
	for step := range 8 {
		if step == 0 {
			c = l.cycle(steady) // the ratio falls below max_error_rate
		} else {
			l.now = l.now.Add(10 * time.Second)
		}
		d := l.decisions(c)
		unchanged(d)
		n := 0
		for s := range d[0] {
			if d[0][s] == "hz-1" {
				n++
			}
		}
		back = append(back, n)
	}
	had := 0
	for _, n := range before[0] {
		if n == "hz-1" {
			had++
		}
	}
	cell := findCell(c, "ZJ", "telecom", "hz-1")
	if cell.Recovered.IsZero() {
		t.Fatalf("The cell never recovered: %+v", cell)
	}
	last := back[len(back)-1]
	if last != had || back[0] != 0 || back[3] == 0 || back[3] >= had {
		t.Errorf("Zhejiang telecom /24s back on hz-1 per step: %v, want a rise to the %d it had over the cooldown", back, had)
	}
	for i := 1; i < len(back); i++ {
		if back[i] < back[i-1] {
			t.Errorf("The /24s back on hz-1 fell from %d to %d: a ramp only brings them back", back[i-1], back[i])
		}
	}
	t.Logf("Zhejiang telecom /24s on hz-1: %d before, 0 with 50%% 5xx, then %v", had, back)
}

func findCell(c *Cells, province, isp, node string) Cell {
	for _, cell := range c.Cells {
		if cell.Key == (Key{province, isp, node}) {
			return cell
		}
	}
	return Cell{}
}
