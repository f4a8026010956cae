package admin

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
)

// minTokenBits is the least entropy a token must carry, estimated as its
// length times log2 of the size of the character classes it uses
// (lower case, upper case, digits, other printable ASCII): 128 bits, the
// 32 characters of `openssl rand -hex 16`.
const minTokenBits = 128

// ReadTokenFile reads the bearer token: one token, on a line of its own,
// in a file only its owner can read.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by others than its owner (mode %04o): chmod 600 %s", path, m, path)
	}
	if fi.Size() > 4096 {
		return "", fmt.Errorf("%s is %d bytes: a token file holds one token", path, fi.Size())
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return "", err
	}
	tok := strings.TrimRight(string(data), "\r\n")
	if err := CheckToken(tok); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return tok, nil
}

// CheckToken refuses a token a client cannot send in a header (blanks,
// control characters, non-ASCII) or one that is easy to guess.
func CheckToken(tok string) error {
	var lower, upper, digit, other bool
	distinct := map[rune]bool{}
	for i, r := range tok {
		switch {
		case r <= ' ' || r >= 0x7f:
			return fmt.Errorf("the token has %q at byte %d: use printable ASCII without blanks, e.g. the output of openssl rand -hex 16", r, i)
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		default:
			other = true
		}
		distinct[r] = true
	}
	if tok == "" {
		return errors.New("no token: the file is empty")
	}
	alphabet := 0
	for _, c := range []struct {
		in bool
		n  int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 32}} {
		if c.in {
			alphabet += c.n
		}
	}
	bits := float64(len(tok)) * math.Log2(float64(alphabet))
	if bits < minTokenBits || len(distinct) < 8 {
		return fmt.Errorf("the token is too weak (%d characters, %d different, about %.0f bits; at least %d bits and 8 different characters): use e.g. openssl rand -hex 16",
			len(tok), len(distinct), bits, minTokenBits)
	}
	if p := period(tok); p < len(tok) {
		return fmt.Errorf("the token repeats its first %d characters: use e.g. openssl rand -hex 16", p)
	}
	return nil
}

// period is the length of the shortest string whose repetition (the last
// copy cut short) makes s: len(s) when s repeats nothing.
func period(s string) int {
	for p := 1; p <= len(s)/2; p++ {
		if s[p:] == s[:len(s)-p] {
			return p
		}
	}
	return len(s)
}
