package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gke-rl/cmd"
	"gke-rl/infra"
	"gke-rl/internal/termtext"
)

// The Hub's checks, after the project's: what the data preparation downloads.
const (
	CheckHubModel   = "hub model"
	CheckHubAccess  = "hub access"
	CheckHubDataset = "hub dataset"
)

// HubEndpoint is the Hugging Face Hub's address.
const HubEndpoint = "https://huggingface.co"

// Hub reads the Hugging Face Hub's API, read-only. It is a client of its own, never the Google
// one: Google's credentials must not travel to another host, nor the Hub token to Google.
type Hub struct {
	Endpoint string
	// Token is the caller's Hugging Face token (HF_TOKEN), "" for anonymous reads: it decides
	// whether a gated model is granted, which an anonymous read cannot tell.
	Token string
	HTTP  *http.Client
}

// NewHub is the Hub client of `go run . preflight`.
func NewHub(token string) *Hub {
	return &Hub{Endpoint: HubEndpoint, Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// hubRepo is the part of the Hub's repository info the checks read (huggingface_hub's ModelInfo
// and DatasetInfo: sha, gated, private, config, safetensors).
type hubRepo struct {
	SHA string `json:"sha"`
	// Gated is false, or how access is granted: "auto" or "manual".
	Gated   any  `json:"gated"`
	Private bool `json:"private"`
	Config  *struct {
		Architectures []string `json:"architectures"`
	} `json:"config"`
	Safetensors *struct {
		Total float64 `json:"total"`
	} `json:"safetensors"`
}

func (r hubRepo) gated() string {
	if s, ok := r.Gated.(string); ok && s != "" {
		return s
	}
	return ""
}

// hubError is the Hub's answer to a request it refused: huggingface_hub's hf_raise_for_status
// (utils/_http.py) reads the same headers, X-Error-Code (RepoNotFound, RevisionNotFound,
// GatedRepo) and X-Error-Message.
type hubError struct {
	Status        int
	Code, Message string
}

func (e *hubError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%d %s", e.Status, msg)
}

// get reads one Hub API path into out; a refusal is a *hubError, anything else (no network) a
// plain error.
func (h *Hub) get(ctx context.Context, path string, query url.Values, out any) error {
	u := h.Endpoint + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	resp, err := h.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		e := &hubError{Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message")}
		var b struct {
			Error string `json:"error"`
		}
		if e.Message == "" && json.Unmarshal(body, &b) == nil {
			e.Message = b.Error
		}
		// The Hub's words reach the terminal: no control character of theirs does.
		e.Message = termtext.Clean(e.Message)
		return e
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

// repoInfo reads a repository at a revision ("" is its default branch, main), asking only for
// the fields the checks read (the API's expand[] parameter).
func (h *Hub) repoInfo(ctx context.Context, kind, repo, revision string, fields ...string) (hubRepo, error) {
	var r hubRepo
	err := h.get(ctx, fmt.Sprintf("/api/%s/%s/revision/%s", kind, repo, url.PathEscape(orMain(revision))), url.Values{"expand[]": fields}, &r)
	return r, err
}

// orMain is a pinned revision, or main, the default branch an unpinned download gets.
func orMain(revision string) string {
	if revision == "" {
		return "main"
	}
	return revision
}

// checkHub asks the Hub about the model and the datasets the run downloads, or each
// experiment's of a stack with jobs, each finding then naming its experiment.
func checkHub(ctx context.Context, h *Hub, n Needs) []cmd.Finding {
	if len(n.Experiments) == 0 {
		return checkRunHub(ctx, h, n, n.Hub)
	}
	var findings []cmd.Finding
	for _, x := range n.Experiments {
		for _, f := range checkRunHub(ctx, h, n, x.Hub) {
			f.Detail = "experiment " + x.Name + ": " + f.Detail
			findings = append(findings, f)
		}
	}
	return findings
}

// checkRunHub asks the Hub about one run's downloads, d.
func checkRunHub(ctx context.Context, h *Hub, n Needs, d infra.HubDownloads) []cmd.Finding {
	if d.Model == "" {
		return nil
	}
	model, access := checkHubModel(ctx, h, n, d)
	findings := []cmd.Finding{model}
	if access != nil {
		findings = append(findings, *access)
	}
	if model.Status == cmd.OK && d.Shape.Hidden > 0 {
		findings = append(findings, checkHubShape(ctx, h, d))
	}
	for _, ds := range d.Datasets {
		findings = append(findings, checkHubDataset(ctx, h, ds, d.Revisions[ds]))
	}
	return findings
}

func checkHubModel(ctx context.Context, h *Hub, n Needs, d infra.HubDownloads) (cmd.Finding, *cmd.Finding) {
	f := cmd.Finding{Name: CheckHubModel}
	rev := d.Revisions[d.Model]
	info, err := h.repoInfo(ctx, "models", d.Model, rev, "sha", "gated", "private", "config", "safetensors")
	if err != nil {
		f.Status, f.Detail, f.Fix = refused(err, "job.model", d.Model, "models", rev, d.Token)
		return f, nil
	}
	var parts []string
	parts = append(parts, d.Model+" "+revisionText(rev, info.SHA))
	if info.Config == nil || len(info.Config.Architectures) == 0 {
		f.Status = cmd.Failed
		f.Detail = d.Model + " has no architectures in its config.json: not a model transformers, vLLM and the frameworks can load"
		f.Fix = "set job.model to a causal language model's repository (its config.json names e.g. Qwen2ForCausalLM)"
		return f, nil
	}
	parts = append(parts, strings.Join(termtext.CleanAll(info.Config.Architectures), ", "))
	f.Status = cmd.OK
	if info.Safetensors != nil && info.Safetensors.Total > 0 {
		params := info.Safetensors.Total
		parts = append(parts, formatCount(params)+" parameters (its safetensors)")
		planned := d.ModelBillions * 1e9
		switch {
		case planned > 0 && math.Abs(planned-params)/params > sizeTolerance:
			f.Status = cmd.Failed
			parts = append(parts, fmt.Sprintf("the plan sized the run for %s (%s)", formatCount(planned), d.SizeKey))
			f.Fix = fmt.Sprintf("pulumi config set --path job.modelSize %s", formatCount(params))
		case planned == 0 && n.FitWith != nil && len(n.Experiments) == 0:
			if problems := n.FitWith(formatCount(params)); len(problems) > 0 {
				f.Status = cmd.Failed
				parts = append(parts, "at that size the plan refuses the run: "+strings.Join(problems, "; "))
				f.Fix = fmt.Sprintf("pulumi config set --path job.modelSize %s, then change what the plan names", formatCount(params))
			} else {
				parts = append(parts, fmt.Sprintf("fits (set job.modelSize %s for the plan's estimates)", formatCount(params)))
			}
		}
	}
	var access *cmd.Finding
	if g := info.gated(); g != "" {
		parts = append(parts, "gated ("+g+")")
		a := checkHubAccess(ctx, h, d)
		access = &a
	} else {
		parts = append(parts, "not gated")
	}
	f.Detail = strings.Join(parts, "; ")
	return f, access
}

// sizeTolerance is how far the size a model's name says may be from its safetensors' count:
// names round (Qwen2.5-72B holds 72.7e9, Qwen2.5-0.5B 0.49e9).
const sizeTolerance = 0.15

// checkHubAccess asks whether the token's account may download a gated model: the run needs
// tokens.huggingFace, and preflight needs the same token (HF_TOKEN) to ask the Hub's
// auth-check (huggingface_hub's HfApi.auth_check reads /api/models/<id>/auth-check).
func checkHubAccess(ctx context.Context, h *Hub, d infra.HubDownloads) cmd.Finding {
	f := cmd.Finding{Name: CheckHubAccess}
	page := HubEndpoint + "/" + d.Model
	switch {
	case !d.Token:
		f.Status = cmd.Failed
		f.Detail = d.Model + " is gated and the run reads no Hugging Face token: the data preparation's download would be refused"
		f.Fix = fmt.Sprintf("request access at %s, then `pulumi config set --path tokens.huggingFace true` and add the token (docs/configuration.md, Tokens)", page)
		return f
	case h.Token == "":
		f.Status = cmd.Skipped
		f.Detail = d.Model + " is gated: whether your token's account is granted is not known without it; export HF_TOKEN (the token the run reads) and run preflight again"
		return f
	}
	err := h.get(ctx, "/api/models/"+d.Model+"/auth-check", nil, nil)
	var he *hubError
	switch {
	case err == nil:
		f.Status, f.Detail = cmd.OK, "your token's account is granted "+d.Model
	case errors.As(err, &he):
		f.Status = cmd.Failed
		f.Detail = fmt.Sprintf("the Hub refuses %s to your token: %s", d.Model, he.Error())
		f.Fix = "request access at " + page + " (a manual grant waits for the authors' review), with the account of the token the run reads"
	default:
		f.Status, f.Detail = cmd.Skipped, "could not ask the Hub: "+err.Error()
	}
	return f
}

func checkHubDataset(ctx context.Context, h *Hub, repo, rev string) cmd.Finding {
	f := cmd.Finding{Name: CheckHubDataset}
	info, err := h.repoInfo(ctx, "datasets", repo, rev, "sha", "gated", "private")
	if err != nil {
		f.Status, f.Detail, f.Fix = refused(err, "job.dataset", repo, "datasets", rev, false)
		return f
	}
	f.Status, f.Detail = cmd.OK, repo+" "+revisionText(rev, info.SHA)
	if g := info.gated(); g != "" {
		f.Detail += "; gated (" + g + "): the download needs a token granted access"
	}
	return f
}

// refused turns the Hub's refusal of a repository into a finding: a repository that does not
// exist (to an anonymous read, a private or gated one looks the same: 401), or a revision it
// does not have.
func refused(err error, key, repo, kind, rev string, token bool) (cmd.Status, string, string) {
	var he *hubError
	if !errors.As(err, &he) {
		return cmd.Skipped, "could not ask the Hub: " + err.Error(), ""
	}
	page := HubEndpoint + "/" + repo
	if kind == "datasets" {
		page = HubEndpoint + "/datasets/" + repo
	}
	switch {
	case he.Code == "RevisionNotFound":
		return cmd.Failed, fmt.Sprintf("%s has no revision %q (%s)", repo, rev, he.Error()),
			fmt.Sprintf("pin a commit of %s/commits/main: pulumi config set --path 'job.revisions[\"%s\"]' <commit>", page, repo)
	case he.Code == "RepoNotFound" || he.Status == http.StatusUnauthorized || he.Status == http.StatusNotFound:
		fix := fmt.Sprintf("check %s's spelling (%s should open)", key, page)
		if !token {
			fix += "; a private repository needs tokens.huggingFace and HF_TOKEN exported for preflight"
		}
		return cmd.Failed, fmt.Sprintf("%s is not a repository the Hub shows (%s)", repo, he.Error()), fix
	}
	return cmd.Failed, fmt.Sprintf("the Hub refuses %s: %s", repo, he.Error()), ""
}

// revisionText says what revision the run downloads and which commit that is today.
func revisionText(pinned, sha string) string {
	short := sha
	if len(short) > 12 {
		short = short[:12]
	}
	switch pinned {
	case "":
		return fmt.Sprintf("at main, today commit %s (unpinned: it can move)", short)
	case sha:
		return fmt.Sprintf("at commit %s (pinned)", short)
	}
	return fmt.Sprintf("at %s, today commit %s (a tag or branch: it can move)", pinned, short)
}

// formatCount is a parameter count as the configuration writes it (72.7B, 494M).
func formatCount(params float64) string {
	if params >= 1e9 {
		return strconv.FormatFloat(math.Round(params/1e8)/10, 'f', -1, 64) + "B"
	}
	return strconv.FormatFloat(math.Round(params/1e6), 'f', -1, 64) + "M"
}
