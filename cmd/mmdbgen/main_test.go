package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	city, asn := filepath.Join(dir, "City.mmdb"), filepath.Join(dir, "ASN.mmdb")
	if err := run("../../demo/demo.csv", city, asn); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, f := range [][2]string{{city, "../../demo/gslb-demo-City.mmdb"}, {asn, "../../demo/gslb-demo-ASN.mmdb"}} {
		got, err1 := os.ReadFile(f[0])
		want, err2 := os.ReadFile(f[1])
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("Output %s differs from %s (%v, %v)", f[0], f[1], err1, err2)
		}
	}
	if err := run(filepath.Join(dir, "missing.csv"), city, ""); err == nil {
		t.Errorf("Expected an error for a missing input")
	}
}
