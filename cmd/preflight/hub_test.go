package preflight

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/infra"
	"gke-rl/test/plantest"
)

// replyHub answers a Hub request with the recorded response p.hub names for its path, and
// checks what every request must carry: the token preflight was given and nothing else (never
// Google's credentials), and the fields it reads asked for by name.
func replyHub(t *testing.T, w http.ResponseWriter, r *http.Request, p project) {
	t.Helper()
	want := ""
	if p.hubToken != "" {
		want = "Bearer " + p.hubToken
	}
	assert.Equal(t, want, r.Header.Get("Authorization"), "the Hub gets the Hugging Face token, or none")
	name, ok := p.hub[r.URL.Path]
	if !ok {
		t.Errorf("preflight asked the Hub for %s, which the test does not answer", r.URL.Path)
		w.WriteHeader(http.StatusNotImplemented)
		return
	}
	if filepath.Base(filepath.Dir(r.URL.Path)) == "revision" {
		assert.Contains(t, r.URL.Query()["expand[]"], "sha", "the repository info asks for its fields")
	}
	f, err := os.Open(filepath.Join(plantest.RepoRoot(), "testdata", "huggingface", name))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	resp, err := http.ReadResponse(bufio.NewReader(f), r)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

const (
	qwenAtPin       = "/api/models/Qwen/Qwen2.5-0.5B-Instruct/revision/7ae557604adf67be50417f59c2c2f167def9a775"
	qwenConfigAtPin = "/Qwen/Qwen2.5-0.5B-Instruct/resolve/7ae557604adf67be50417f59c2c2f167def9a775/config.json"
	gsm8kAtPin      = "/api/datasets/openai/gsm8k/revision/740312add88f781978c0658806c59bc2815b9866"
)

// smokeHub is the Hub as the smoke stack's downloads find it.
func smokeHub() map[string]string {
	return map[string]string{
		qwenAtPin:       "model-qwen2.5-0.5b-instruct.http",
		qwenConfigAtPin: "config-qwen2.5-0.5b-instruct.http",
		gsm8kAtPin:      "dataset-openai-gsm8k.http",
	}
}

func withHub(p project, hub map[string]string, token string) project {
	p.hub, p.hubToken = hub, token
	return p
}

func TestTheHubHasWhatSmokeDownloads(t *testing.T) {
	code, out, _ := preflight(t, withHub(ready, smokeHub(), ""), append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Equal(t, "ok    hub model     Qwen/Qwen2.5-0.5B-Instruct at commit 7ae557604adf (pinned); Qwen2ForCausalLM; 494M parameters (its safetensors); not gated", finding(t, out, CheckHubModel))
	assert.Equal(t, "ok    hub dataset   openai/gsm8k at commit 740312add88f (pinned)", finding(t, out, CheckHubDataset))
	assert.Equal(t, -1, findingLine(out, CheckHubAccess), "no grant to check for a model that is not gated")
	assert.Equal(t, "ok    hub shape     Qwen/Qwen2.5-0.5B-Instruct's config.json at 7ae557604adf67be50417f59c2c2f167def9a775 agrees with the program's table: hidden_size 896, num_hidden_layers 24, vocab_size 151936", finding(t, out, CheckHubShape))
}

// A job.modelShape copied wrong from config.json: preflight reads the model's own and names the
// values to set, each field that differs.
func TestAShapeThatIsNotTheModelsFails(t *testing.T) {
	code, out, _ := preflight(t, withHub(ready, smokeHub(), ""), append([]string{"--stack", "smoke",
		"--config", "job.modelShape.hiddenSize=896", "--config", "job.modelShape.numHiddenLayers=28", "--config", "job.modelShape.vocabSize=152064"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Equal(t, "FAIL  hub shape     Qwen/Qwen2.5-0.5B-Instruct's config.json at 7ae557604adf67be50417f59c2c2f167def9a775 says num_hidden_layers 24 where the plan used 28, vocab_size 151936 where the plan used 152064 (from job.modelShape): the memory check and verl's batches were sized for another model", finding(t, out, CheckHubShape))
	assert.Equal(t, "fix: pulumi config set --path job.modelShape.numHiddenLayers 24; pulumi config set --path job.modelShape.vocabSize 151936 (job.modelShape takes the place of the table)", fixOf(t, out, CheckHubShape))
}

// A misspelt model ID: the Hub answers an anonymous read of a repository it does not have
// with 401, which huggingface_hub too reads as "not found".
func TestAMisspeltModelFailsNamingTheKey(t *testing.T) {
	hub := smokeHub()
	hub["/api/models/Qwen/Qwen2.5-0.5B-Instrukt/revision/main"] = "model-not-found-anonymous.http"
	code, out, _ := preflight(t, withHub(ready, hub, ""), append([]string{"--stack", "smoke", "--config", "job.model=Qwen/Qwen2.5-0.5B-Instrukt"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Equal(t, "FAIL  hub model     Qwen/Qwen2.5-0.5B-Instrukt is not a repository the Hub shows (401 Invalid username or password.)", finding(t, out, CheckHubModel))
	assert.Equal(t, "fix: check job.model's spelling (https://huggingface.co/Qwen/Qwen2.5-0.5B-Instrukt should open); a private repository needs tokens.huggingFace and HF_TOKEN exported for preflight", fixOf(t, out, CheckHubModel))
}

func TestAPinTheRepositoryLacksFails(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	hub := smokeHub()
	hub["/api/models/Qwen/Qwen2.5-0.5B-Instruct/revision/"+rev] = "revision-not-found.http"
	code, out, _ := preflight(t, withHub(ready, hub, ""), append([]string{"--stack", "smoke", "--config", `job.revisions["Qwen/Qwen2.5-0.5B-Instruct"]=` + rev}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckHubModel), `Qwen/Qwen2.5-0.5B-Instruct has no revision "`+rev+`" (404 Not Found)`)
	assert.Contains(t, fixOf(t, out, CheckHubModel), "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/commits/main")
}

// A gated model: without tokens.huggingFace the run cannot download it; with it, the grant is
// asked with the caller's token, or left unknown without one.
func TestAGatedModelNeedsAGrantedToken(t *testing.T) {
	hub := smokeHub()
	hub["/api/models/meta-llama/Llama-3.1-8B-Instruct/revision/main"] = "model-llama-3.1-8b-instruct-gated.http"
	hub["/api/models/meta-llama/Llama-3.1-8B-Instruct/auth-check"] = "auth-check-gated-not-granted.http"
	hub["/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json"] = "config-gated-anonymous.http"
	llama := append([]string{"--stack", "smoke", "--config", "job.model=meta-llama/Llama-3.1-8B-Instruct"}, yours...)

	// The plan knows this model is gated (workloads.GatedModels) and refuses it first.
	code, out, _ := preflight(t, withHub(ready, hub, ""), llama...)
	assert.Equal(t, cmd.ExitInvalidConfig, code, out)
	assert.Contains(t, out, `job.model: "meta-llama/Llama-3.1-8B-Instruct" is gated on the Hugging Face Hub`)
	// A gated model the plan has no record of reaches the Hub check, which says the same.
	noToken := checkHubAccess(context.Background(), &Hub{}, infra.HubDownloads{Model: "meta-llama/Llama-3.1-8B-Instruct"})
	assert.Equal(t, cmd.Failed, noToken.Status)
	assert.Equal(t, "meta-llama/Llama-3.1-8B-Instruct is gated and the run reads no Hugging Face token: the data preparation's download would be refused", noToken.Detail)

	withToken := append(llama, "--config", "tokens.huggingFace=true")
	_, out, _ = preflight(t, withHub(ready, hub, ""), withToken...)
	assert.Equal(t, "ok    hub model     meta-llama/Llama-3.1-8B-Instruct at main, today commit 0e9e39f249a1 (unpinned: it can move); LlamaForCausalLM; 8B parameters (its safetensors); gated (manual)", finding(t, out, CheckHubModel))
	assert.Contains(t, finding(t, out, CheckHubAccess), "skip  hub access    meta-llama/Llama-3.1-8B-Instruct is gated: whether your token's account is granted is not known without it; export HF_TOKEN")
	assert.Equal(t, "skip  hub shape     could not read meta-llama/Llama-3.1-8B-Instruct's config.json at main: 401 Access to model meta-llama/Llama-3.1-8B-Instruct is restricted. You must have access to it and be authenticated to access it. Please log in. (a gated or private model's files need HF_TOKEN exported for preflight)", finding(t, out, CheckHubShape))

	// The same file, to a token not granted: the Hub's 403 for a gated repository's files.
	hub["/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json"] = "auth-check-gated-not-granted.http"
	_, out, _ = preflight(t, withHub(ready, hub, "hf_notgranted"), withToken...)
	assert.Equal(t, "FAIL  hub access    the Hub refuses meta-llama/Llama-3.1-8B-Instruct to your token: 403 Access to model meta-llama/Llama-3.1-8B-Instruct is restricted and you are not in the authorized list. Visit https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct to ask for access.", finding(t, out, CheckHubAccess))
	assert.NotContains(t, out, "hf_notgranted", "the token is never printed")
}

// The seam between the Hub and the plan: a size the plan could not read from the model's name
// is planned again, with the stack's own overrides, at the size the Hub tells.
func TestAModelSizedByTheHubIsPlannedAgain(t *testing.T) {
	replan := fitWith(plantest.Env(plantest.RepoRoot(), io.Discard, io.Discard), "smoke", append(plantest.Shape(4096, 32, 152064), "job.model=acme/house-model"))
	assert.Empty(t, replan("494M"), "a small model fits smoke")
	problems := replan("405B")
	require.NotEmpty(t, problems)
	assert.Contains(t, problems[0], "job.modelSize: acme/house-model does not fit in host memory")
	assert.Contains(t, problems[0], "the smallest gpu.nodes that holds it is 3")
}

// With jobs, each experiment's downloads are asked about, each finding naming its experiment.
func TestEachExperimentsDownloadsAreAskedAbout(t *testing.T) {
	hub := smokeHub()
	hub["/api/models/Qwen/Qwen2.5-0.5B-Instrukt/revision/main"] = "model-not-found-anonymous.http"
	code, out, _ := preflight(t, withHub(ready, hub, ""), append([]string{"--stack", "smoke", "--config", "jobs.good.maxSteps=4",
		"--config", "jobs.typo.model=Qwen/Qwen2.5-0.5B-Instrukt", "--config", "jobs.typo.modelSize=500M"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, out, "ok    hub model     experiment good: Qwen/Qwen2.5-0.5B-Instruct at commit 7ae557604adf (pinned)")
	assert.Contains(t, out, "FAIL  hub model     experiment typo: Qwen/Qwen2.5-0.5B-Instrukt is not a repository the Hub shows")
	assert.Contains(t, out, "ok    hub dataset   experiment typo: openai/gsm8k at commit 740312add88f (pinned)")
}

// What the Hub says reaches the terminal without its control characters: an endpoint that answers
// with escape sequences (a proxy on the way, a compromised mirror) cannot clear the screen,
// retitle the window or forge a line of the report. (In a header, Go's HTTP client refuses them
// itself: "malformed MIME header line"; the JSON body's error and fields carry them.)
func TestTheHubsWordsAreEscaped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/api/models/hostile/refused/") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"Repository not found\u001b[2J\u001b]0;pwned\u0007\nok    hub model     forged"}`)
			return
		}
		_, _ = io.WriteString(w, `{"sha":"7ae557604adf67be50417f59c2c2f167def9a775","config":{"architectures":["Qwen2\u001b[31mForCausalLM"]}}`)
	}))
	defer srv.Close()
	h := &Hub{Endpoint: srv.URL, HTTP: srv.Client()}
	_, err := h.repoInfo(context.Background(), "models", "hostile/refused", "")
	require.Error(t, err)
	assert.Equal(t, `404 Repository not found\u001b[2J\u001b]0;pwned\u0007\u000aok    hub model     forged`, err.Error())

	f, _ := checkHubModel(context.Background(), h, Needs{}, infra.HubDownloads{Model: "hostile/answers"})
	assert.Contains(t, f.Detail, `Qwen2\u001b[31mForCausalLM`)
	assert.NotContains(t, f.Detail, "\x1b")
}
