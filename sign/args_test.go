package sign

import (
	"slices"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args          []string
		keys, publish []string
		err           string
	}{
		{args: []string{"Kexample.test.+013+00001"}, keys: []string{"/etc/coredns/Kexample.test.+013+00001"}},
		{args: []string{"/k/a", "b", "publish", "c"}, keys: []string{"/k/a", "/etc/coredns/b"}, publish: []string{"/etc/coredns/c"}},
		{args: nil, err: "no key file signs"},
		{args: []string{"publish", "a"}, err: "no key file signs"},
		{args: []string{"a", "publish"}, err: "publish without a key file"},
		{args: []string{"a", "publish", "b", "publish", "c"}, err: "publish given twice"},
	}
	for _, tc := range tests {
		c, err := ParseArgs("/etc/coredns", tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(c.Keys, tc.keys) || !slices.Equal(c.Publish, tc.publish) {
			t.Errorf("%v: got %v %v %v, want %v %v", tc.args, c.Keys, c.Publish, err, tc.keys, tc.publish)
		}
	}
}
