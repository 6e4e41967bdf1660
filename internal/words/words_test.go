package words_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/words"
)

func TestCount(t *testing.T) {
	assert.Equal(t, "1 node", words.Count(1, "node"))
	assert.Equal(t, "0 nodes", words.Count(0, "node"))
	assert.Equal(t, "8 GPUs", words.Count(8, "GPU"))
}

func TestCountIs(t *testing.T) {
	assert.Equal(t, "1 protected resource is", words.CountIs(1, "protected resource"))
	assert.Equal(t, "2 protected resources are", words.CountIs(2, "protected resource"))
}
