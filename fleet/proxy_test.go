package fleet

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// proxy stands between one member and Redis: cut partitions that member
// alone (every connection closed, new ones refused) until restore.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	off    bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		r, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if p.off || err != nil {
			p.mu.Unlock()
			c.Close()
			if r != nil {
				r.Close()
			}
			continue
		}
		p.conns[c], p.conns[r] = true, true
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, r)
		go p.pipe(r, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = true
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = false
}

// startVia starts a member whose Redis connections go through p.
func startVia(t testing.TB, p *proxy, id string, vantage Vantage, edit func(*Config)) *member {
	t.Helper()
	return start(t, nil, id, vantage, func(c *Config) {
		cl := redis.NewClient(&redis.Options{
			Addr: p.ln.Addr().String(), DialTimeout: testTimeout, ReadTimeout: testTimeout, WriteTimeout: testTimeout,
			PoolTimeout: testTimeout, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true,
		})
		t.Cleanup(func() { cl.Close() })
		c.Client = cl
		if edit != nil {
			edit(c)
		}
	})
}
