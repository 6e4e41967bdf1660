package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"gke-rl/cmd"
	"gke-rl/infra"
)

// CheckHubShape holds the shape the memory check used to the model's own config.json.
const CheckHubShape = "hub shape"

// configSizes are the sizes of config.json the memory check reads.
type configSizes struct {
	HiddenSize      int `json:"hidden_size"`
	NumHiddenLayers int `json:"num_hidden_layers"`
	VocabSize       int `json:"vocab_size"`
}

// configShape is what config.json says of those sizes. A multimodal model (Gemma 3 from 4B up:
// Gemma3ForConditionalGeneration) nests its language model's under text_config, which is the
// one that produces the response tokens.
type configShape struct {
	configSizes
	TextConfig *configSizes `json:"text_config"`
}

// language is the language model's sizes: the top level's, else text_config's, field by field.
func (c configShape) language() (hidden, layers, vocab int) {
	hidden, layers, vocab = c.HiddenSize, c.NumHiddenLayers, c.VocabSize
	if t := c.TextConfig; t != nil {
		hidden, layers, vocab = orNested(hidden, t.HiddenSize), orNested(layers, t.NumHiddenLayers), orNested(vocab, t.VocabSize)
	}
	return hidden, layers, vocab
}

// orNested is v, or the nested value when v is absent.
func orNested(v, nested int) int {
	if v != 0 {
		return v
	}
	return nested
}

// checkHubShape reads the model's config.json at the revision the run downloads (the file
// transformers, vLLM and the frameworks build the model from) and compares the sizes the plan
// sized the run's memory with: a job.modelShape copied wrong, or a table row that does not fit a
// variant of the model's name, fails here instead of as an out-of-memory in the cluster.
func checkHubShape(ctx context.Context, h *Hub, d infra.HubDownloads) cmd.Finding {
	f := cmd.Finding{Name: CheckHubShape}
	rev := orMain(d.Revisions[d.Model])
	var c configShape
	err := h.get(ctx, "/"+d.Model+"/resolve/"+url.PathEscape(rev)+"/config.json", nil, &c)
	var he *hubError
	switch {
	case errors.As(err, &he):
		f.Status = cmd.Skipped
		f.Detail = fmt.Sprintf("could not read %s's config.json at %s: %s", d.Model, rev, he.Error())
		if h.Token == "" {
			f.Detail += " (a gated or private model's files need HF_TOKEN exported for preflight)"
		}
		return f
	case err != nil:
		f.Status, f.Detail = cmd.Skipped, fmt.Sprintf("could not read %s's config.json: %v", d.Model, err)
		return f
	}
	hidden, layers, vocab := c.language()
	from := "the program's table"
	if d.ShapeKey != "" {
		from = d.ShapeKey
	}
	var differs, fixes []string
	for _, field := range []struct {
		name, key  string
		got, plans int
	}{
		{"hidden_size", "hiddenSize", hidden, d.Shape.Hidden},
		{"num_hidden_layers", "numHiddenLayers", layers, d.Shape.Layers},
		{"vocab_size", "vocabSize", vocab, d.Shape.Vocab},
	} {
		if field.got == 0 {
			differs = append(differs, fmt.Sprintf("no %s (the plan used %d)", field.name, field.plans))
			continue
		}
		if field.got != field.plans {
			differs = append(differs, fmt.Sprintf("%s %d where the plan used %d", field.name, field.got, field.plans))
			fixes = append(fixes, fmt.Sprintf("pulumi config set --path job.modelShape.%s %d", field.key, field.got))
		}
	}
	if len(differs) == 0 {
		f.Status = cmd.OK
		f.Detail = fmt.Sprintf("%s's config.json at %s agrees with %s: hidden_size %d, num_hidden_layers %d, vocab_size %d", d.Model, rev, from, hidden, layers, vocab)
		return f
	}
	f.Status = cmd.Failed
	f.Detail = fmt.Sprintf("%s's config.json at %s says %s (from %s): the memory check and verl's batches were sized for another model", d.Model, rev, strings.Join(differs, ", "), from)
	if len(fixes) > 0 {
		f.Fix = strings.Join(fixes, "; ") + " (job.modelShape takes the place of the table)"
	}
	return f
}
