// Package suggest finds the word a typo was meant to be, for the "did you
// mean" hints of errors about unknown options, keys and names.
package suggest

import "strings"

// Nearest is the candidate closest to w in edit distance, ignoring case,
// when it is close enough to be a typo of it: one edit for a word of
// fewer than 8 runes, two for a longer one. Of equally close candidates
// the first wins.
func Nearest(w string, candidates []string) (string, bool) {
	w = strings.ToLower(w)
	best, bd := "", Typo(w)+1
	for _, c := range candidates {
		if d := Distance(w, strings.ToLower(c)); d < bd {
			best, bd = c, d
		}
	}
	return best, best != ""
}

// Hint is " (did you mean X?)" for the candidate Nearest finds, else "".
func Hint(w string, candidates []string) string {
	if c, ok := Nearest(w, candidates); ok && c != w {
		return " (did you mean " + c + "?)"
	}
	return ""
}

// Typo is how many edits still make a typo of a word of w's length:
// short names differ from each other by two (cernet, cstnet).
func Typo(w string) int {
	if len([]rune(w)) < 8 {
		return 1
	}
	return 2
}

// Distance is the optimal-string-alignment distance of a and b, in
// runes: a swap of two neighbours is one edit, as typists make them.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
