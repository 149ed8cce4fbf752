package analysis

import (
	"strings"
	"unicode/utf8"
)

// suggest returns the candidate closest to name by edit distance, ignoring
// case differences first, or "" when none is close enough to be a likely
// typo. Ties go to the earlier candidate, so callers control the order.
func suggest(name string, candidates []string) string {
	best, bestDist := "", -1
	limit := max(1, utf8.RuneCountInString(name)/3)
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

// didYouMean returns " (did you mean X?)" or "".
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return ": did you mean " + s + "?"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
