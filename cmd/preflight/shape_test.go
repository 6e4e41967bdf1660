package preflight

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
