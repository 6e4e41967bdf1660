package termtext_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/termtext"
)

func TestClean(t *testing.T) {
	assert.Equal(t, "Qwen2ForCausalLM", termtext.Clean("Qwen2ForCausalLM"))
	assert.Equal(t, `Repository not found\u001b[2J\u001b]0;pwned\u0007`, termtext.Clean("Repository not found\x1b[2J\x1b]0;pwned\x07"))
	assert.Equal(t, `a\u000dforged\u000anext line`, termtext.Clean("a\rforged\nnext line"))
	assert.Equal(t, `user\u202etxt.exe`, termtext.Clean("user\u202etxt.exe"), "a right-to-left override")
	assert.Equal(t, "café – ok", termtext.Clean("café – ok"), "printable text is kept")
	assert.Equal(t, []string{"A", `B\u001b`}, termtext.CleanAll([]string{"A", "B\x1b"}))
}
