package sign

import (
	"fmt"
	"testing"
)

func TestDescribe(t *testing.T) {
	dir := t.TempDir()
	ksk, zsk, next := writeKey(t, dir, zone, 257), writeKey(t, dir, zone, 256), writeKey(t, dir, zone, 256)
	tag := func(base string) uint16 {
		k, err := loadKey(base)
		if err != nil {
			t.Fatal(err)
		}
		return k.tag
	}
	tests := []struct {
		name          string
		keys, publish []string
		want          string
	}{
		{"csk", []string{ksk}, nil,
			fmt.Sprintf("DNSSEC for %s: signing with key %d (KSK, ECDSAP256SHA256)", zone, tag(ksk))},
		{"ksk, zsk and a published zsk", []string{ksk, zsk}, []string{next},
			fmt.Sprintf("DNSSEC for %s: signing with key %d (KSK, ECDSAP256SHA256), key %d (ZSK, ECDSAP256SHA256); published, not signing: key %d (ZSK, ECDSAP256SHA256)", zone, tag(ksk), tag(zsk), tag(next))},
	}
	for _, tc := range tests {
		ss, err := Load([]string{zone}, Config{Keys: tc.keys, Publish: tc.publish})
		if err != nil {
			t.Fatalf("Test %q: %v", tc.name, err)
		}
		if got := ss[zone].Describe(); got != tc.want {
			t.Errorf("Test %q: expected\n  %s\ngot\n  %s", tc.name, tc.want, got)
		}
	}
}
