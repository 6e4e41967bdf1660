package workloads_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/workloads"
)

// The gated models the plan knows are the ones the Hub's recorded answers call gated
// (testdata/huggingface): Llama 3.1's model info and the Hub's refusal of its auth-check to an
// ungranted token; for the others, the Hub's refusal of their files (gated-refusals.txt).
func TestTheGatedModelsAreTheRecordedOnes(t *testing.T) {
	raw, err := os.ReadFile("../testdata/huggingface/model-llama-3.1-8b-instruct-gated.http")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var info struct {
		ID    string `json:"id"`
		Gated any    `json:"gated"`
	}
	require.NoError(t, json.Unmarshal(body, &info))
	assert.Equal(t, "manual", info.Gated)
	assert.Contains(t, workloads.GatedModels, info.ID)

	refusal, err := os.ReadFile("../testdata/huggingface/auth-check-gated-not-granted.http")
	require.NoError(t, err)
	assert.Contains(t, string(refusal), "X-Error-Code: GatedRepo")
	assert.Contains(t, string(refusal), "Access to model meta-llama/Llama-3.1-8B-Instruct is restricted")
	refusals, err := os.ReadFile("../testdata/huggingface/gated-refusals.txt")
	require.NoError(t, err)
	for model := range workloads.GatedModels {
		if model == info.ID {
			continue
		}
		assert.Contains(t, string(refusals), "Access to model "+model+" is restricted", "%s: no model without a recorded answer", model)
	}
	// And every recorded refusal is known to the plan.
	for _, m := range regexp.MustCompile(`Access to model (\S+) is restricted`).FindAllStringSubmatch(string(refusals), -1) {
		assert.Contains(t, workloads.GatedModels, m[1], "the Hub refused %s: the plan refuses it without a token", m[1])
	}
}
