package repocheck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"time"

	"gke-rl/cmd"
)

// report prints the findings under "setting", in columns as wide as "unknown" and "workflow
// approvals".
var report = cmd.Report{NameKey: "setting", StatusWidth: 7, NameWidth: 18}

// DefaultBase is GitHub's API; GITHUB_API_URL (which GitHub Actions sets) names another.
const DefaultBase = "https://api.github.com"

var repoPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

// Main runs `go run . repo-check`: the token is GITHUB_TOKEN's (or GH_TOKEN's), never an
// argument, so that it is on no command line.
func Main(args []string, stdout, stderr io.Writer) int {
	base := envOr("GITHUB_API_URL", DefaultBase)
	if u, err := url.Parse(base); err != nil || u.Scheme != "https" || u.Host == "" {
		// The token goes with every request: never in the clear, never to no host.
		fmt.Fprintf(stderr, "error: GITHUB_API_URL %q is not an https address: the token would travel in the clear; allowed: unset (%s), or GitHub Enterprise Server's https://HOST/api/v3\n", base, DefaultBase)
		return cmd.ExitUsage
	}
	return run(args, stdout, stderr, &Client{
		Base:  base,
		Token: envOr("GITHUB_TOKEN", os.Getenv("GH_TOKEN")),
		HTTP:  &http.Client{Timeout: 30 * time.Second},
	})
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func run(args []string, stdout, stderr io.Writer, c *Client) int {
	fs := flag.NewFlagSet("repo-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repo := fs.String("repo", "", "the repository, OWNER/NAME")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run . repo-check --repo OWNER/NAME [--json]\n\n"+
			"Reads, with GITHUB_TOKEN (or GH_TOKEN; a repository administrator's token reads every setting),\n"+
			"the repository settings the deploy workflow rests on (docs/ci.md): main's rules, their bypass\n"+
			"lists, the %s environment's reviewers and branches, and whether workflows may approve pull requests.\n", Environment)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cmd.ExitOK // asked for: the usage is the answer
		}
		return cmd.ExitUsage
	}
	if !repoPattern.MatchString(*repo) {
		fmt.Fprintf(stderr, "error: --repo: %q is not OWNER/NAME\n", *repo)
		return cmd.ExitUsage
	}
	findings, err := Check(context.Background(), c, *repo)
	if err != nil {
		fmt.Fprintf(stderr, "error: cannot ask GitHub's API at %s: %v\n", c.Base, err)
		return cmd.ExitCannotAsk
	}
	if *asJSON {
		if err := report.WriteJSON(stdout, findings); err != nil {
			return cmd.ExitCheckFailed
		}
	} else {
		fmt.Fprintf(stdout, "repo-check of %s; read-only\n", *repo)
		report.WriteTable(stdout, findings)
	}
	failed, unknown := cmd.Count(findings, cmd.Failed), cmd.Count(findings, cmd.Unknown)
	if !*asJSON {
		switch {
		case failed > 0:
			fmt.Fprintf(stdout, "%d of %d settings fail: whoever can change main or approve alone can deploy\n", failed, len(findings))
		case unknown > 0:
			fmt.Fprintf(stdout, "no setting fails; %d not shown to this token: check them in the settings\n", unknown)
		default:
			fmt.Fprintln(stdout, "every setting holds")
		}
	}
	if failed > 0 {
		return cmd.ExitCheckFailed
	}
	return cmd.ExitOK
}
