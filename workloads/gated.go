package workloads

// GatedModels are the models whose gating the program has recorded from the Hub: their download
// needs a token of an account granted access (tokens.huggingFace), and without one the data
// preparation fails in the cluster, long after `pulumi up` began. For any other model,
// `preflight` asks the Hub (its `gated` field). Each entry says where the Hub said so.
var GatedModels = map[string]string{
	// GET /api/models/meta-llama/Llama-3.1-8B-Instruct: "gated": "manual" (huggingface_hub's
	// ModelInfo.gated), and its auth-check refuses a token not granted access (GatedRepo).
	"meta-llama/Llama-3.1-8B-Instruct": `the Hub's model info says "gated": "manual"`,
	// The Hub refused its config.json to a reader without access: "Cannot access gated repo for
	// url https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/resolve/main/config.json.
	// Access to model meta-llama/Llama-3.2-1B-Instruct is restricted." (sgl-project/sglang
	// pull request 14644).
	"meta-llama/Llama-3.2-1B-Instruct": "the Hub refuses its files to a reader without access",
	// The same, with a token not granted access: "Access to model google/gemma-3-4b-pt is
	// restricted and you are not in the authorized list." (ariG23498/gemma3-object-detection
	// issue 5; testdata/huggingface/auth-check-gated-not-granted.http quotes it).
	"google/gemma-3-4b-pt": "the Hub refuses its files to a token whose account has not accepted Google's terms",
}
