package feed

import (
	"crypto/subtle"
	"fmt"
	"path"
	"sync"
	"time"
)

// Source is one sender the feed block names: its token, the nodes it may
// report on (globs, as path.Match reads them) and its row rate.
type Source struct {
	Name      string
	TokenFile string
	Token     string // read from TokenFile when the block loads
	Nodes     []string
	Rate      float64 // rows per second
	Line      int
}

// Allows reports whether s may report on node.
func (s *Source) Allows(node string) bool {
	for _, g := range s.Nodes {
		if ok, _ := path.Match(g, node); ok {
			return true
		}
	}
	return false
}

// CheckGlobs rejects a malformed glob.
func CheckGlobs(globs []string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("nodes: %q is not a glob: %v", g, err)
		}
	}
	return nil
}

// sourceOf is the source whose token a request carries; nil: none.
func sourceOf(sources []Source, token string) *Source {
	var found *Source
	for i := range sources {
		// Every token is compared, in constant time: the time taken
		// says nothing of which one matched.
		if subtle.ConstantTimeCompare([]byte(sources[i].Token), []byte(token)) == 1 {
			found = &sources[i]
		}
	}
	return found
}

// bucket is a token bucket of rows.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate, burst float64) *bucket {
	return &bucket{rate: rate, burst: burst, tokens: burst}
}

// take takes n rows at now; false (nothing taken) when the bucket holds
// fewer.
func (b *bucket) take(n float64, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < n {
		return false
	}
	b.tokens -= n
	return true
}
