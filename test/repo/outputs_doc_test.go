package repo_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/test/plantest"
)

// documentedOutput is a stack output the docs name: `pulumi stack output NAME` or "stack output
// `NAME`", wherever the line breaks.
var documentedOutput = regexp.MustCompile("stack output `?([a-zA-Z]+)`?")

// Every stack output the README and the docs name exists in the plan of some shipped stack (with
// the gate, the tokens or Autopilot on, where an output depends on them).
func TestDocumentedOutputsExist(t *testing.T) {
	outputs := map[string]bool{}
	for _, stack := range plantest.Stacks {
		for _, overrides := range [][]string{nil, {"gate.enabled=true", "tokens.huggingFace=true", "tokens.wandb=true"}, {"cluster.mode=autopilot", "storage.type=gcsfuse"}} {
			res, err := plantest.TryPlan(stack, overrides...)
			if err != nil {
				continue // a combination the stack refuses
			}
			for name := range res.Outputs {
				outputs[name] = true
			}
		}
	}
	named := 0
	for _, doc := range plantest.Documents(t) {
		flat := strings.Join(strings.Fields(doc.Text), " ")
		for _, m := range documentedOutput.FindAllStringSubmatch(flat, -1) {
			named++
			assert.True(t, outputs[m[1]], "%s names the stack output %s, which no plan has (outputs: %v)", doc.Rel, m[1], slices.Sorted(func(yield func(string) bool) {
				for k := range outputs {
					if !yield(k) {
						return
					}
				}
			}))
		}
	}
	assert.Greater(t, named, 10)
}
