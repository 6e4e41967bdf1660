// Package repocheck asks GitHub's REST API, read-only, for the repository settings the deploy
// workflow rests on (docs/ci.md): whoever can change main or approve alone can deploy, so each
// setting the API shows is checked, and each it does not show is named for a person to check.
package repocheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"gke-rl/cmd"
	"gke-rl/internal/termtext"
	"gke-rl/internal/words"
)

// The settings, in docs/ci.md's order, and the deploy environment's name (.github/workflows/
// deploy.yml).
const (
	SettingMain        = "main protected"
	SettingBypass      = "no bypass"
	SettingEnvironment = "environment"
	SettingBranches    = "deploy branches"
	SettingApproval    = "workflow approvals"

	Environment = "production"
	branch      = "main"
)

// Client reads the API: Base is https://api.github.com (a test's fake otherwise), Token a
// token that may read the repository's administration settings ("" reads what is public).
type Client struct {
	Base, Token string
	HTTP        *http.Client
}

// errNotShown is an answer that does not show a setting: 403 or 404 to this token.
var errNotShown = errors.New("not shown")

// get reads one path into v.
func (c *Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.Base, "/")+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w (HTTP %d)", errNotShown, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	return json.Unmarshal(body, v)
}

type rule struct {
	Type       string `json:"type"`
	RulesetID  int    `json:"ruleset_id"`
	Parameters struct {
		RequiredApprovingReviewCount int `json:"required_approving_review_count"`
		// DismissStaleReviewsOnPush and RequireLastPushApproval keep an approval to the
		// commits it saw: without them, commits pushed after the approval merge unreviewed.
		DismissStaleReviewsOnPush bool `json:"dismiss_stale_reviews_on_push"`
		RequireLastPushApproval   bool `json:"require_last_push_approval"`
	} `json:"parameters"`
}

type ruleset struct {
	Name         string `json:"name"`
	BypassActors *[]struct {
		ActorType  string `json:"actor_type"`
		BypassMode string `json:"bypass_mode"`
	} `json:"bypass_actors"`
}

type environment struct {
	CanAdminsBypass *bool `json:"can_admins_bypass"`
	ProtectionRules []struct {
		Type              string            `json:"type"`
		PreventSelfReview *bool             `json:"prevent_self_review"`
		Reviewers         []json.RawMessage `json:"reviewers"`
	} `json:"protection_rules"`
	DeploymentBranchPolicy *struct {
		ProtectedBranches    bool `json:"protected_branches"`
		CustomBranchPolicies bool `json:"custom_branch_policies"`
	} `json:"deployment_branch_policy"`
}

// Check asks for every setting of repo (OWNER/NAME). The error says that the API could not be
// asked at all (no network, a bad address); a setting the token may not read is a finding.
func Check(ctx context.Context, c *Client, repo string) ([]cmd.Finding, error) {
	settings := "https://github.com/" + repo + "/settings"
	p := "/repos/" + repo

	var rules []rule
	err := c.get(ctx, p+"/rules/branches/"+branch, &rules)
	if err != nil && !errors.Is(err, errNotShown) {
		return nil, err
	}
	findings := []cmd.Finding{checkMain(rules, err, settings+"/rules")}
	findings = append(findings, checkBypass(ctx, c, p, rules, err, settings+"/rules"))

	var env environment
	envErr := c.get(ctx, p+"/environments/"+Environment, &env)
	if envErr != nil && !errors.Is(envErr, errNotShown) {
		return nil, envErr
	}
	findings = append(findings, checkEnvironment(env, envErr, settings+"/environments"))
	findings = append(findings, checkBranches(ctx, c, p, env, envErr, settings+"/environments"))

	var perms struct {
		CanApprove *bool `json:"can_approve_pull_request_reviews"`
	}
	permErr := c.get(ctx, p+"/actions/permissions/workflow", &perms)
	if permErr != nil && !errors.Is(permErr, errNotShown) {
		return nil, permErr
	}
	f := cmd.Finding{Name: SettingApproval, Fix: settings + "/actions: Workflow permissions, \"Allow GitHub Actions to create and approve pull requests\" off"}
	switch {
	case permErr != nil || perms.CanApprove == nil:
		f.Status, f.Detail = cmd.Unknown, "the API does not show it to this token: "+describe(permErr)
	case *perms.CanApprove:
		f.Status, f.Detail = cmd.Failed, "GitHub Actions may approve pull requests: a writer's workflow can approve its own pull request into main"
	default:
		f.Status, f.Detail, f.Fix = cmd.OK, "GitHub Actions may not approve pull requests", ""
	}
	return append(findings, f), nil
}

func describe(err error) string {
	if err == nil {
		return "the field is absent"
	}
	return err.Error() + "; a token of a repository administrator reads it"
}

// checkMain wants main's effective rules to require a pull request with an approval, and to
// refuse force pushes and deletion.
func checkMain(rules []rule, err error, fix string) cmd.Finding {
	f := cmd.Finding{Name: SettingMain, Fix: fix + ": a branch ruleset on main: require a pull request with 1 approval, dismiss stale approvals on push, require approval of the most recent push, block force pushes, restrict deletions"}
	if err != nil {
		f.Status, f.Detail = cmd.Unknown, "main's rules are not shown to this token: "+describe(err)
		return f
	}
	has := map[string]bool{}
	approvals, dismissStale, lastPush := 0, false, false
	for _, r := range rules {
		has[r.Type] = true
		if r.Type == "pull_request" {
			approvals = max(approvals, r.Parameters.RequiredApprovingReviewCount)
			dismissStale = dismissStale || r.Parameters.DismissStaleReviewsOnPush
			lastPush = lastPush || r.Parameters.RequireLastPushApproval
		}
	}
	var missing []string
	switch {
	case !has["pull_request"]:
		missing = append(missing, "changes through pull requests")
	case approvals < 1:
		missing = append(missing, "an approving review (required_approving_review_count is 0)")
	}
	if has["pull_request"] && !dismissStale {
		missing = append(missing, "approvals dismissed when new commits are pushed (dismiss_stale_reviews_on_push)")
	}
	if has["pull_request"] && !lastPush {
		missing = append(missing, "the last push approved by someone other than its author (require_last_push_approval)")
	}
	if !has["non_fast_forward"] {
		missing = append(missing, "no force push")
	}
	if !has["deletion"] {
		missing = append(missing, "no deletion")
	}
	types := make([]string, 0, len(has))
	for t := range has {
		types = append(types, t)
	}
	slices.Sort(types)
	if len(missing) > 0 {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("main's rules (%s) lack %s", orNone(types), strings.Join(missing, ", "))
		return f
	}
	f.Status, f.Detail, f.Fix = cmd.OK, fmt.Sprintf("main takes changes through pull requests with %s of their last push, and refuses force pushes and deletion", words.Count(approvals, "approval")), ""
	return f
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// checkBypass reads each ruleset that protects main: none may list a bypass actor, the
// administrators included.
func checkBypass(ctx context.Context, c *Client, p string, rules []rule, rulesErr error, fix string) cmd.Finding {
	f := cmd.Finding{Name: SettingBypass, Fix: fix + ": empty each ruleset's bypass list"}
	if rulesErr != nil {
		f.Status, f.Detail = cmd.Unknown, "main's rules are not shown to this token: "+describe(rulesErr)
		return f
	}
	var ids []int
	for _, r := range rules {
		if !slices.Contains(ids, r.RulesetID) {
			ids = append(ids, r.RulesetID)
		}
	}
	if len(ids) == 0 {
		f.Status, f.Detail = cmd.Failed, "no ruleset protects main"
		return f
	}
	var bypassed, read []string
	for _, id := range ids {
		var rs ruleset
		if err := c.get(ctx, fmt.Sprintf("%s/rulesets/%d", p, id), &rs); err != nil {
			f.Status, f.Detail = cmd.Unknown, fmt.Sprintf("ruleset %d is not shown to this token: %s", id, describe(err))
			return f
		}
		if rs.BypassActors == nil {
			f.Status, f.Detail = cmd.Unknown, fmt.Sprintf("ruleset %q's bypass list is not shown to this token: %s", rs.Name, describe(nil))
			return f
		}
		read = append(read, fmt.Sprintf("%q", rs.Name))
		for _, a := range *rs.BypassActors {
			bypassed = append(bypassed, termtext.Clean(fmt.Sprintf("%s %s (%s)", rs.Name, a.ActorType, a.BypassMode)))
		}
	}
	if len(bypassed) > 0 {
		f.Status, f.Detail = cmd.Failed, "main's rules can be bypassed: "+strings.Join(bypassed, ", ")
		return f
	}
	f.Status, f.Detail, f.Fix = cmd.OK, "no one bypasses "+strings.Join(read, ", "), ""
	return f
}

// checkEnvironment wants the deploy environment to require a reviewer who is not the person who
// started the deployment, with no administrator bypass.
func checkEnvironment(env environment, err error, fix string) cmd.Finding {
	f := cmd.Finding{Name: SettingEnvironment, Fix: fix + ": " + Environment + ": required reviewers, \"Prevent self-review\" on, \"Allow administrators to bypass configured protection rules\" off"}
	if err != nil {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("the environment %s is not shown: %s (the deploy workflow creates it unprotected if it does not exist)", Environment, describe(err))
		return f
	}
	var problems []string
	reviewers, selfReview := 0, true
	for _, r := range env.ProtectionRules {
		if r.Type == "required_reviewers" {
			reviewers = len(r.Reviewers)
			selfReview = r.PreventSelfReview == nil || !*r.PreventSelfReview
		}
	}
	if reviewers == 0 {
		problems = append(problems, "no required reviewer")
	} else if selfReview {
		problems = append(problems, "the person who started a deployment may approve it (prevent_self_review is off)")
	}
	if env.CanAdminsBypass != nil && *env.CanAdminsBypass {
		problems = append(problems, "administrators may bypass its rules (can_admins_bypass)")
	}
	if len(problems) > 0 {
		f.Status, f.Detail = cmd.Failed, Environment+": "+strings.Join(problems, "; ")
		return f
	}
	if env.CanAdminsBypass == nil {
		f.Status, f.Detail = cmd.Unknown, fmt.Sprintf("%s requires %s and prevents self-review; whether administrators may bypass it is not shown (check it in the settings)", Environment, words.Count(reviewers, "reviewer"))
		return f
	}
	f.Status, f.Detail, f.Fix = cmd.OK, fmt.Sprintf("%s requires %s, prevents self-review, and administrators may not bypass it", Environment, words.Count(reviewers, "reviewer")), ""
	return f
}

// checkBranches wants the deploy environment to take deployments from main only.
func checkBranches(ctx context.Context, c *Client, p string, env environment, envErr error, fix string) cmd.Finding {
	f := cmd.Finding{Name: SettingBranches, Fix: fix + ": " + Environment + ": Deployment branches and tags, \"Selected branches and tags\" with main alone"}
	switch {
	case envErr != nil:
		f.Status, f.Detail = cmd.Unknown, "the environment is not shown"
		return f
	case env.DeploymentBranchPolicy == nil:
		f.Status, f.Detail = cmd.Failed, "every branch may deploy (deployment_branch_policy is null)"
		return f
	case env.DeploymentBranchPolicy.ProtectedBranches:
		f.Status, f.Detail = cmd.Failed, "every protected branch may deploy, not main alone"
		return f
	}
	var policies struct {
		BranchPolicies []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"branch_policies"`
	}
	if err := c.get(ctx, p+"/environments/"+url.PathEscape(Environment)+"/deployment-branch-policies", &policies); err != nil {
		f.Status, f.Detail = cmd.Unknown, "its branch policies are not shown: "+describe(err)
		return f
	}
	var names []string
	for _, b := range policies.BranchPolicies {
		name := b.Name
		if b.Type == "tag" {
			name = "tag " + name
		}
		names = append(names, termtext.Clean(name))
	}
	if len(names) != 1 || names[0] != branch {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s takes deployments from %s, not main alone", Environment, orNone(names))
		return f
	}
	f.Status, f.Detail, f.Fix = cmd.OK, Environment+" takes deployments from main alone", ""
	return f
}
