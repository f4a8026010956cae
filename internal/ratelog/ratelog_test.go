package ratelog

import (
	"testing"
	"time"
)

func TestAllow(t *testing.T) {
	var l Limit
	if ok, n := l.Allow(time.Hour); !ok || n != 0 {
		t.Fatalf("First line: got %v %d, want true 0", ok, n)
	}
	for range 3 {
		if ok, _ := l.Allow(time.Hour); ok {
			t.Fatal("A line within the period was allowed")
		}
	}
	if ok, n := l.Allow(0); !ok || n != 3 {
		t.Errorf("After the period: got %v %d, want true 3", ok, n)
	}
}
