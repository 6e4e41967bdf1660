package workloads

// GatedModels are the models whose gating the program has recorded from the Hub: their download
// needs a token of an account granted access (tokens.huggingFace), and without one the data
// preparation fails in the cluster, long after `pulumi up` began. For any other model,
// `preflight` asks the Hub (its `gated` field). Each entry says where the Hub said so.
var GatedModels = map[string]string{
	// GET /api/models/meta-llama/Llama-3.1-8B-Instruct: "gated": "manual" (huggingface_hub's
	// ModelInfo.gated), and its auth-check refuses a token not granted access (GatedRepo).
	"meta-llama/Llama-3.1-8B-Instruct": `the Hub's model info says "gated": "manual"`,
}
