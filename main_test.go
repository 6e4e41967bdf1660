package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Outside the Pulumi engine and without `plan`, the program says what it is and how to run it,
// naming the stacks there are, instead of exiting 32 in silence (pulumi.Run's status when no
// engine started it).
func TestUsageOutsideTheEngine(t *testing.T) {
	var out bytes.Buffer
	usage(&out, ".")
	assert.Contains(t, out.String(), "go run . plan --stack NAME")
	assert.Contains(t, out.String(), "pulumi up -s NAME")
	assert.Contains(t, out.String(), "go run . preflight --stack NAME")
	// The stacks are the stack files of the directory: the shipped ones, and a user's own copies
	// (the README's walk makes one), whatever they are.
	dir := t.TempDir()
	for _, stack := range []string{"b200-spot", "my-smoke"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi."+stack+".yaml"), nil, 0o644))
	}
	out.Reset()
	usage(&out, dir)
	assert.Contains(t, out.String(), "The stacks here: b200-spot, my-smoke\n")
	out.Reset()
	usage(&out, t.TempDir())
	assert.Contains(t, out.String(), "The stacks here: none (a stack is a Pulumi.NAME.yaml file)")

	bin := filepath.Join(t.TempDir(), "gke-rl")
	build := exec.Command("go", "build", "-o", bin, ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	for args, want := range map[string]int{"": 2, "--help": 0, "help": 0} {
		cmd := exec.Command(bin)
		if args != "" {
			cmd.Args = append(cmd.Args, args)
		}
		cmd.Env = append(os.Environ(), "PULUMI_MONITOR=")
		got, err := cmd.CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, want, code, "gke-rl %s", args)
		assert.Contains(t, string(got), "run it through Pulumi, or plan a stack offline", "gke-rl %s", args)
	}
	// A word that is no command is named, with what is allowed, before the usage.
	for args, want := range map[string]string{
		"version": `error: "version" is not a command of gke-rl; allowed: plan, preflight, repo-check, help`,
		"preview": `error: "preview" is a command of the Pulumi CLI, which runs this program: pulumi preview -s NAME`,
	} {
		cmd := exec.Command(bin, args)
		cmd.Env = append(os.Environ(), "PULUMI_MONITOR=")
		got, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "gke-rl %s fails", args)
		assert.Equal(t, 2, exit.ExitCode(), "gke-rl %s", args)
		assert.Contains(t, string(got), want+"\n")
		assert.Contains(t, string(got), "run it through Pulumi, or plan a stack offline")
	}
	// The preflight subcommand is reached from the binary too.
	got, err := exec.Command(bin, "preflight", "--help").CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.Contains(t, string(got), "usage: go run . preflight --stack NAME")
}
