package rrl

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// clock is a limiter's time, moved by the test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest(t *testing.T, c Config) (*Limiter, *clock) {
	t.Helper()
	l := New(c)
	ck := &clock{t: l.epoch}
	l.now = ck.now
	return l, ck
}

func count(l *Limiter, ip net.IP, kind Kind, key uint64, n int) map[Action]int {
	got := map[Action]int{}
	for range n {
		got[l.Check(ip, kind, key)]++
	}
	return got
}

var client = net.ParseIP("198.51.100.7")

// An account passes a second's worth of responses at once, then limits;
// it gets rate a second back once the flood keeps under it, and the window
// holds a sustained flood limited after it stops.
func TestCheckRateAndWindow(t *testing.T) {
	c := Defaults()
	c.Slip = 0
	l, ck := newTest(t, c)
	got := count(l, client, Answer, 1, 100)
	if got[Pass] != DefaultAnswers+1 || got[Drop] != 100-DefaultAnswers-1 {
		t.Fatalf("Burst of 100: %v, want %d passed", got, DefaultAnswers+1)
	}
	// A sustained flood: 1000 a second for 20 seconds passes nothing once
	// the account is a window ahead.
	passed := 0
	for range 20 * 100 {
		ck.t = ck.t.Add(10 * time.Millisecond)
		for range 10 {
			if l.Check(client, Answer, 1) == Pass {
				passed++
			}
		}
	}
	if passed > DefaultAnswers {
		t.Errorf("Sustained flood: %d passed in 20s, want about none", passed)
	}
	// After the flood: limited for up to the window, then passing again.
	ck.t = ck.t.Add(DefaultWindow - 2*time.Second)
	if a := l.Check(client, Answer, 1); a != Drop {
		t.Errorf("Within the window after the flood: %s, want drop", a)
	}
	ck.t = ck.t.Add(2 * time.Second)
	if got := count(l, client, Answer, 1, DefaultAnswers); got[Pass] != DefaultAnswers {
		t.Errorf("After the window: %v, want all passed", got)
	}
	// Under the rate: never limited.
	for range 10 * DefaultAnswers {
		ck.t = ck.t.Add(time.Second / (DefaultAnswers - 1))
		if a := l.Check(client, Answer, 1); a != Pass {
			t.Fatalf("At under the rate: %s", a)
		}
	}
}

// Accounts are apart by prefix, kind and key; addresses of one /24 (/56)
// share one.
func TestCheckAccounts(t *testing.T) {
	c := Defaults()
	c.Slip = 0
	l, _ := newTest(t, c)
	count(l, client, Answer, 1, 200)
	for _, tc := range []struct {
		name    string
		ip      string
		kind    Kind
		key     uint64
		limited bool
	}{
		{"same /24", "198.51.100.200", Answer, 1, true},
		{"other /24", "198.51.101.7", Answer, 1, false},
		{"other key", "198.51.100.7", Answer, 2, false},
		{"other kind", "198.51.100.7", Denial, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a := l.Check(net.ParseIP(tc.ip), tc.kind, tc.key); (a != Pass) != tc.limited {
				t.Errorf("%s: %s, want limited %v", tc.ip, a, tc.limited)
			}
		})
	}
	v6 := net.ParseIP("2001:db8:1:200::1")
	count(l, v6, Answer, 1, 200)
	if a := l.Check(net.ParseIP("2001:db8:1:2ff::9"), Answer, 1); a == Pass {
		t.Errorf("Same /56: passed")
	}
	if a := l.Check(net.ParseIP("2001:db8:1:300::1"), Answer, 1); a != Pass {
		t.Errorf("Other /56: %s", a)
	}
}

// Every Nth limited response slips; log_only limits nothing but says so;
// exempt prefixes and a rate of 0 are never limited.
func TestCheckActions(t *testing.T) {
	c := Defaults()
	l, _ := newTest(t, c)
	got := count(l, client, Denial, 1, DefaultDenials+1+100)
	if got[Slip] != 50 || got[Drop] != 50 {
		t.Errorf("Slip 2: %v, want 50 slipped and 50 dropped", got)
	}
	c.LogOnly = true
	l, _ = newTest(t, c)
	if got := count(l, client, Error, 1, 100); got[Log] != 100-DefaultErrors-1 || got[Pass] != DefaultErrors+1 {
		t.Errorf("log_only: %v", got)
	}
	c = Defaults()
	c.Exempt = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}
	c.Rates[Error] = 0
	l, _ = newTest(t, c)
	if got := count(l, client, Answer, 1, 1000); got[Pass] != 1000 {
		t.Errorf("Exempt: %v", got)
	}
	if got := count(l, net.ParseIP("192.0.2.1"), Error, 1, 1000); got[Pass] != 1000 {
		t.Errorf("Rate 0: %v", got)
	}
	for _, ip := range []string{"127.0.0.1", "127.9.8.7", "::1"} {
		if !New(Defaults()).Exempt(net.ParseIP(ip)) {
			t.Errorf("%s is not exempt by default", ip)
		}
	}
	if New(Config{Off: true}) != nil {
		t.Errorf("Off: want no limiter")
	}
}

// Check allocates nothing: it is on every UDP answer's path.
func TestCheckAllocs(t *testing.T) {
	l := New(Defaults())
	ip := net.ParseIP("198.51.100.7")
	key := l.Hash("www.example.org.")
	if n := testing.AllocsPerRun(1000, func() { l.Check(ip, Answer, key) }); n != 0 {
		t.Errorf("Check allocates %.1f times", n)
	}
}

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		a, b   string
		b4, b6 uint8
		same   bool
	}{
		{"10.1.2.3", "10.1.2.200", 24, 56, true},
		{"10.1.2.3", "10.1.3.3", 24, 56, false},
		{"10.1.2.3", "10.1.3.3", 16, 56, true},
		{"10.1.2.3", "10.1.2.4", 32, 56, false},
		{"2001:db8::1", "2001:db8:0:ff::1", 24, 56, true},
		{"2001:db8::1", "2001:db8:0:100::1", 24, 56, false},
		{"10.1.2.3", "::ffff:10.1.2.9", 24, 56, true},
	} {
		if got := Prefix(net.ParseIP(tc.a), tc.b4, tc.b6) == Prefix(net.ParseIP(tc.b), tc.b4, tc.b6); got != tc.same {
			t.Errorf("%s and %s at /%d /%d: same %v, want %v", tc.a, tc.b, tc.b4, tc.b6, got, tc.same)
		}
	}
}
