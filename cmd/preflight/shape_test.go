package preflight

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/infra"
	"gke-rl/workloads"
)

// A multimodal model's config.json (Gemma 3 from 4B up: transformers' Gemma3Config saves its
// language model under text_config and its SigLIP tower under vision_config, whose hidden_size
// is not the language model's): the shape is text_config's.
func TestAMultimodalModelsShapeIsItsLanguageModels(t *testing.T) {
	var c configShape
	require.NoError(t, json.Unmarshal([]byte(`{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3",
		"text_config":{"hidden_size":2560,"num_hidden_layers":34,"vocab_size":262208,"model_type":"gemma3_text"},
		"vision_config":{"hidden_size":1152,"num_hidden_layers":27,"model_type":"siglip_vision_model"}}`), &c))
	hidden, layers, vocab := c.language()
	assert.Equal(t, []int{2560, 34, 262208}, []int{hidden, layers, vocab})

	// A text model's own fields win over a nested config it may also carry.
	require.NoError(t, json.Unmarshal([]byte(`{"hidden_size":896,"num_hidden_layers":24,"vocab_size":151936,"text_config":{"hidden_size":1}}`), &c))
	hidden, layers, vocab = c.language()
	assert.Equal(t, []int{896, 24, 151936}, []int{hidden, layers, vocab})
}

// A config.json without one of the sizes fails with no value to set (there is none to copy), and
// a Hub that cannot be reached skips the check.
func TestAConfigWithoutASizeFailsAndAnUnreachableHubSkips(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"architectures":["Qwen2ForCausalLM"],"hidden_size":896,"num_hidden_layers":24}`)
	}))
	d := infra.HubDownloads{Model: "acme/no-vocabulary", Shape: workloads.Shape{Hidden: 896, Layers: 24, Vocab: 151936}}
	f := checkHubShape(context.Background(), &Hub{Endpoint: srv.URL, HTTP: srv.Client()}, d)
	assert.Equal(t, cmd.Failed, f.Status)
	assert.Equal(t, "acme/no-vocabulary's config.json at main says no vocab_size (the plan used 151936) (from the program's table): the memory check and verl's batches were sized for another model", f.Detail)
	assert.Empty(t, f.Fix, "no value to set")

	srv.Close()
	f = checkHubShape(context.Background(), &Hub{Endpoint: srv.URL, HTTP: srv.Client()}, d)
	assert.Equal(t, cmd.Skipped, f.Status)
	assert.Contains(t, f.Detail, "could not read acme/no-vocabulary's config.json: ")
}
