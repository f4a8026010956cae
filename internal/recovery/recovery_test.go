package recovery

import (
	"testing"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func init() { clog.Discard() }

func TestDo(t *testing.T) {
	before := testutil.ToFloat64(Panics.WithLabelValues("test"))
	if ok := Do("test", func() { panic("boom") }); ok {
		t.Errorf("Expected Do to report the panic")
	}
	if ok := Do("test", func() {}); !ok {
		t.Errorf("Expected Do to report a normal return")
	}
	if got := testutil.ToFloat64(Panics.WithLabelValues("test")) - before; got != 1 {
		t.Errorf("Expected one counted panic, got %v", got)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer Guard("test")
		var m map[string]int
		//lint:ignore SA5000 a runtime panic in a goroutine is what is tested
		m["x"] = 1
	}()
	<-done
	if got := testutil.ToFloat64(Panics.WithLabelValues("test")) - before; got != 2 {
		t.Errorf("Expected a goroutine's panic to be counted, got %v", got)
	}
}
