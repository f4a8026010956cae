package admin

import (
	"strings"
	"testing"
)

// TestCheckToken: tokens a client cannot send, or that are easy to guess
// (short, few characters, a repeated pattern), are refused.
func TestCheckToken(t *testing.T) {
	for _, tc := range []struct{ tok, want string }{
		{"3f9c1a7be24d08c6f1a25e9b7d43c0a8", ""}, // openssl rand -hex 16
		{"s3cret-token-for-tests", ""},
		{strings.Repeat("abcdefgh", 4), "repeats its first 8 characters"},
		{strings.Repeat("abcdefghijk", 3) + "abc", "repeats its first 11 characters"},
		{"short", "too weak"},
		{"with space in it 0123456789abcdef", "printable ASCII without blanks"},
		{"nul\x00" + strings.Repeat("x", 30), "printable ASCII"},
	} {
		err := CheckToken(tc.tok)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckToken(%q): got %v, want %q", tc.tok, err, tc.want)
		}
	}
}
