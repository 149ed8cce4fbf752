package analysis

import (
	"strings"
	"unicode/utf8"
)

// suggest returns the candidate closest to name by edit distance, ignoring
// case differences first, or "" when none is close enough to be a likely
// typo. Ties go to the earlier candidate, so callers control the order.
//
// A swap of two neighbouring letters counts as one edit, so "stpe" finds
// "step". Names of one or two letters are only matched up to case: any
// other short name is one edit away from them, which would make every
// suggestion noise.
func suggest(name string, candidates []string) string {
	best, bestDist := "", -1
	limit := utf8.RuneCountInString(name) / 3
	if utf8.RuneCountInString(name) >= 3 {
		limit = max(1, limit)
	}
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if d == 0 {
			return c // differs only in case
		}
		if d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// Suggest returns the candidate that name is most likely a typo of, or ""
// when none is close. It is the "did you mean" of dagen's diagnostics, for
// tools around them such as the CLI's command names.
func Suggest(name string, candidates []string) string { return suggest(name, candidates) }

// didYouMean returns ": did you mean X?" or "".
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return ": did you mean " + s + "?"
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b,
// in runes: the Levenshtein distance, with a transposition of two
// adjacent runes counted as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows: i-2, i-1 and i.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
