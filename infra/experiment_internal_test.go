package infra

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A default experiment name starts with a letter, as KubeRay's names must: one whose model
// starts with a digit takes an "x" in front; the letters' ends, a and z, keep theirs.
func TestADefaultExperimentNameStartsWithALetter(t *testing.T) {
	for model, prefix := range map[string]string{
		"acme/abc-1B":  "abc-1b-gsm8k-",
		"acme/zeta-1B": "zeta-1b-gsm8k-",
		"acme/7b-chat": "x7b-chat-gsm8k-",
	} {
		name := DefaultExperimentName(&Config{Job: JobConfig{Model: model, Dataset: "gsm8k"}})
		assert.True(t, strings.HasPrefix(name, prefix), "%s: %s", model, name)
		assert.Len(t, name, len(prefix)+identityHashLength, "%s: %s", model, name)
	}
}
