package infra

import (
	"fmt"
	"strings"

	"github.com/agext/levenshtein"
)

// didYouMean is " did you mean PREFIX.KEY?" for the known key nearest to a misspelled one: the
// same word in another case (learningrate → learningRate), or one at most two edits away and
// closer than any other; "" when none is near enough to name.
func didYouMean(prefix, key string, known []string) string {
	best, bestDistance, tie := "", 3, false
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf(" did you mean %s?", joinKey(prefix, k))
		}
		switch d := levenshtein.Distance(strings.ToLower(k), strings.ToLower(key), nil); {
		case d < bestDistance:
			best, bestDistance, tie = k, d, false
		case d == bestDistance:
			tie = true
		}
	}
	if best == "" || tie {
		return ""
	}
	return fmt.Sprintf(" did you mean %s?", joinKey(prefix, best))
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
