package infra

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A misspelled key is named when one known key is at most two edits away and nearer than any
// other, or the same word in another case; not at three edits, nor when two are equally near.
func TestDidYouMeanNamesTheOneNearKey(t *testing.T) {
	known := []string{"nodes", "minNodes", "maxNodes", "type"}
	for key, want := range map[string]string{
		"NODES":    " did you mean gpu.nodes?",    // another case
		"node":     " did you mean gpu.nodes?",    // 1 edit
		"nod":      " did you mean gpu.nodes?",    // 2 edits
		"no":       "",                            // 3 edits
		"maxnode":  " did you mean gpu.maxNodes?", // 1 edit, case aside
		"mxNodes":  " did you mean gpu.maxNodes?", // 1 edit from maxNodes, 2 from minNodes
		"m_Nodes":  "",                            // 1 edit from minNodes and from maxNodes: a tie
		"typo":     " did you mean gpu.type?",     // 1 edit
		"gpu.type": "",                            // 4 edits
	} {
		assert.Equal(t, want, didYouMean("gpu", key, known), key)
	}
	assert.Equal(t, " did you mean zone?", didYouMean("", "zon", []string{"zone", "gpu"}), "a top-level key has no prefix")
}

// The Lustre sizes nearest to one a tier refuses: the one below, the one above, or both.
func TestNearestSaysTheSizesThatExist(t *testing.T) {
	assert.Equal(t, "18000", nearest(0, 18000))
	assert.Equal(t, "954000", nearest(954000, 0))
	assert.Equal(t, "18000 or 27000", nearest(18000, 27000))
}
