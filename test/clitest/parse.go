package clitest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// usageError is what the CLIs print when they refuse a command line before doing anything:
// gcloud exits 2 with an argparse error, kubectl prints cobra's error and "See '... --help' for
// usage."
var usageError = regexp.MustCompile(`unrecognized arguments|argument [^ ]+: |Invalid choice|invalid choice|` +
	`unknown flag|unknown shorthand flag|unknown command|flag needs an argument|for usage\.|for help and examples|accepts .* arg\(s\)|` +
	`requires at least|must be specified|is required`)

// Parses runs cmd with the real CLI against the fakes (Google's APIs through g, a Kubernetes API
// server through kubeconfig) and fails the test when the CLI refuses the command line itself. What
// the fake API answers (nothing it knows) does not matter: a command that reached the API has
// parsed.
func Parses(t *testing.T, g *Google, kubeconfig string, cmd Command) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, Tool(t, cmd.Args[0]), cmd.Args[1:]...)
	home := t.TempDir()
	c.Env = append(os.Environ(), g.GcloudEnv(t)...)
	c.Env = append(c.Env, "KUBECONFIG="+kubeconfig, "HOME="+home)
	c.Stdin = strings.NewReader("")
	out, err := c.CombinedOutput()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			t.Errorf("%s: %v", cmd, err)
			return
		}
	}
	if ctx.Err() != nil {
		t.Errorf("%s: did not finish in 90 s:\n%s", cmd, out)
		return
	}
	if (cmd.Args[0] == "gcloud" && code == 2) || usageError.Match(out) {
		t.Errorf("%s refuses this command line (exit %d):\n  %s\n%s", cmd.Args[0], code, cmd.Text, out)
	}
}
