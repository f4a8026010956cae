package table

import (
	"os"
	"testing"
)

// FuzzNodeTable: any node table is loaded or rejected with an error.
func FuzzNodeTable(f *testing.F) {
	example, err := os.ReadFile("../nodes.example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := parse(data, testZones, 60)
		if err != nil {
			return
		}
		if len(tb.Nodes) == 0 || len(tb.Records) == 0 {
			t.Fatalf("Accepted a table without nodes or records")
		}
		for name, r := range tb.Records {
			for _, i := range append(append([]int(nil), r.V4...), r.V6...) {
				if i < 0 || i >= len(tb.Nodes) {
					t.Fatalf("Record %s refers to node %d of %d", name, i, len(tb.Nodes))
				}
			}
		}
	})
}
