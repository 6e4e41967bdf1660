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
