package yield

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestQueriesPassAParse: on one processor, a goroutine waiting for a
// datagram reads it while a large YAML document read through a Yielder's
// Reader is still being parsed, after the parser has read a few slices'
// worth of it: without yielding it would wait for the parse to end, or
// for the runtime's preemption of a long stretch (10 ms, tens of
// kilobytes of YAML).
func TestQueriesPassAParse(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var doc strings.Builder
	doc.WriteString("nodes:\n")
	for i := 0; doc.Len() < 1<<20; i++ {
		doc.WriteString("  - {id: node, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n")
	}
	var consumed atomic.Int64
	src := &counting{r: strings.NewReader(doc.String()), n: &consumed}
	seenAt := make(chan int64, 1)
	go func() {
		buf := make([]byte, 16)
		if _, _, err := pc.ReadFrom(buf); err == nil {
			seenAt <- consumed.Load()
		}
		close(seenAt)
	}()
	// The reader parks in the network poller before the datagram comes.
	stacks := make([]byte, 1<<20)
	for deadline := time.Now().Add(time.Minute); !bytes.Contains(stacks[:runtime.Stack(stacks, true)], []byte("ReadFrom")); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("The reader never waited for the datagram")
		}
	}
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("query")); err != nil {
		t.Fatal(err)
	}
	var out struct{ Nodes []map[string]any }
	y := New()
	if err := yaml.NewDecoder(y.Reader(src)).Decode(&out); err != nil {
		t.Fatal(err)
	}
	at, ok := <-seenAt
	if !ok {
		t.Fatal("The datagram was not read")
	}
	// A slice's worth of YAML is 3 KB on the development machine (the
	// runtime's preemption came after 88 KB there): a CPU several times
	// faster still passes.
	if at > 48<<10 {
		t.Errorf("The datagram was read after %d of %d bytes parsed, want within %d", at, doc.Len(), 48<<10)
	}
	if len(out.Nodes) == 0 {
		t.Error("Nothing parsed")
	}
}

type counting struct {
	r io.Reader
	n *atomic.Int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestReaderPassesEverything: what a Reader reads is r's, whole, in the
// same order, whatever the size of the reads, yielding or not.
func TestReaderPassesEverything(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*(4<<10)/16+5)
	for _, size := range []int{0, 1, 7, 512, 4 << 10, 12 << 10} {
		if size == 0 {
			if n, err := New().Reader(bytes.NewReader(data)).Read(nil); n != 0 || err != nil {
				t.Errorf("An empty read: %d, %v", n, err)
			}
			continue
		}
		r := New().Reader(bytes.NewReader(data))
		var got []byte
		buf := make([]byte, size)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("Reads of %d: %d bytes back of %d, or not the same", size, len(got), len(data))
		}
	}
}
