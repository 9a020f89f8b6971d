package pipelines

import (
	"fmt"
	"strings"
)

// suggest returns the choice closest to word by edit distance, or "" when
// none is close enough to be a likely typo.
func suggest(word string, choices []string) string {
	best, bestDist := "", -1
	for _, c := range choices {
		if strings.EqualFold(c, word) {
			return c
		}
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := 1
	if n := len([]rune(word)); n > 3 {
		limit = max(2, n/3)
	}
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

// choicesHint formats the hint for a value that is not one of choices:
// a suggestion when one is close, then the valid choices.
func choicesHint(word, what string, choices []string) string {
	var b strings.Builder
	if s := suggest(word, choices); s != "" {
		fmt.Fprintf(&b, "did you mean %q? ", s)
	}
	if len(choices) == 0 {
		fmt.Fprintf(&b, "there are no %s", what)
		return b.String()
	}
	fmt.Fprintf(&b, "valid %s: %s", what, strings.Join(choices, ", "))
	return b.String()
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// characters each count 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows: two back, previous, current.
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
