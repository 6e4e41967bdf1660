package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gke-rl/test/golden"
)

// Replay is a command on PATH that replays output recorded from the real tool
// (testdata/recorded, see its SOURCES.md). Each call of a subcommand ("status", "job status",
// "job logs", ...) takes the next of its replies, and then its last one again; it logs every
// call's arguments. The subcommand is the first argument, or the first two when the first is
// one of Groups (`ray job submit`).
type Replay struct {
	dir string
	t   testing.TB
}

// Reply is one answer: the recorded files (under testdata/recorded) printed in order, and the
// exit code.
type Reply struct {
	Files []string
	// Then are printed after Files without their first line: output recorded from a run of its
	// own (e.g. `ray job status`) that the same command prints after Files under the one banner
	// line its run prints first (`ray job logs --follow` prints the log, then the job's status,
	// after a single "Job submission server address" line: Ray's dashboard/modules/job/cli.py).
	Then []string
	Code int
}

// Groups are the first words that take a second one to name a subcommand.
var Groups = []string{"job"}

// NewReplay writes the command name into a directory of its own, answering with replies.
func NewReplay(t testing.TB, name string, replies map[string][]Reply) Replay {
	t.Helper()
	bash := Tool(t, "bash")
	f := Replay{dir: t.TempDir(), t: t}
	for sub, rs := range replies {
		for i, r := range rs {
			var body strings.Builder
			for _, file := range r.Files {
				abs := filepath.Join(golden.RepoRoot(), "testdata", "recorded", file)
				require.FileExists(t, abs)
				fmt.Fprintf(&body, "cat %q\n", abs)
			}
			for _, file := range r.Then {
				abs := filepath.Join(golden.RepoRoot(), "testdata", "recorded", file)
				require.FileExists(t, abs)
				fmt.Fprintf(&body, "tail -n +2 %q\n", abs)
			}
			fmt.Fprintf(&body, "exit %d\n", r.Code)
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("%s.%d", strings.ReplaceAll(sub, " ", "-"), i+1)), []byte(body.String()), 0o644))
		}
	}
	script := `#!` + bash + `
dir=$(dirname "$0")
echo "$*" >>"$dir/calls"
sub=$1
case " ` + strings.Join(Groups, " ") + ` " in *" $1 "*) sub="$1-$2" ;; esac
n=$(( $(cat "$dir/$sub.count" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$dir/$sub.count"
while ((n > 1)) && [[ ! -e $dir/$sub.$n ]]; do n=$((n - 1)); done
[[ -e $dir/$sub.$n ]] || { echo "replay ` + name + `: no reply for $sub" >&2; exit 99; }
source "$dir/$sub.$n"
`
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, name), []byte(script), 0o755))
	return f
}

// Calls are the arguments of every call so far.
func (f Replay) Calls() []string {
	b, err := os.ReadFile(filepath.Join(f.dir, "calls"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(f.t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Dir is the directory holding the command, to put first on PATH.
func (f Replay) Dir() string { return f.dir }

// Path is PATH=... with the command first.
func (f Replay) Path() string { return "PATH=" + f.dir + ":" + os.Getenv("PATH") }
