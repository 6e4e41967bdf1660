package workloads_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/clitest"
	"gke-rl/infra/kinds"
	"gke-rl/infra/monitoring"
	"gke-rl/workloads"
)

// fakeRay is a `ray` command on PATH that replays recorded output (testdata/recorded, see its
// SOURCES.md). Each call of a subcommand ("status", "job status", "job logs", ...) takes the next
// of its replies, and then its last one again; it logs every call's arguments.
type fakeRay struct {
	dir string
	t   *testing.T
}

// reply is one answer: the recorded files printed in order, and the exit code.
type reply struct {
	files []string
	code  int
}

func newFakeRay(t *testing.T, replies map[string][]reply) fakeRay {
	t.Helper()
	bash := clitest.Tool(t, "bash")
	f := fakeRay{dir: t.TempDir(), t: t}
	for sub, rs := range replies {
		for i, r := range rs {
			var body strings.Builder
			for _, file := range r.files {
				abs, err := filepath.Abs(filepath.Join("..", "testdata", "recorded", file))
				require.NoError(t, err)
				require.FileExists(t, abs)
				fmt.Fprintf(&body, "cat %q\n", abs)
			}
			fmt.Fprintf(&body, "exit %d\n", r.code)
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("%s.%d", strings.ReplaceAll(sub, " ", "-"), i+1)), []byte(body.String()), 0o644))
		}
	}
	script := `#!` + bash + `
dir=$(dirname "$0")
echo "$*" >>"$dir/calls"
sub=$1
[[ $1 == job ]] && sub="job-$2"
n=$(( $(cat "$dir/$sub.count" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$dir/$sub.count"
while ((n > 1)) && [[ ! -e $dir/$sub.$n ]]; do n=$((n - 1)); done
[[ -e $dir/$sub.$n ]] || { echo "fake ray: no reply for $sub" >&2; exit 99; }
source "$dir/$sub.$n"
`
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "ray"), []byte(script), 0o755))
	return f
}

// calls are the arguments of every call so far.
func (f fakeRay) calls() []string {
	b, err := os.ReadFile(filepath.Join(f.dir, "calls"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(f.t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// path is PATH with the fake first.
func (f fakeRay) path() string { return "PATH=" + f.dir + ":" + os.Getenv("PATH") }

// runEntrypoint runs an entrypoint's words (`env VAR=... bash -c <run.sh> gke-rl-run ...`)
// with some of run.sh's values replaced, as the shell on the Ray head would run it.
func runEntrypoint(t *testing.T, entrypoint string, ray fakeRay, set map[string]string) (string, int) {
	t.Helper()
	ws := words(t, entrypoint)
	for i, w := range ws {
		if k, _, ok := strings.Cut(w, "="); ok && set[k] != "" && i < len(ws)-1 {
			ws[i] = k + "=" + set[k]
		}
	}
	res := clitest.Run(t, []string{ray.path()}, ws[0], ws[1:]...)
	return res.Stdout + res.Stderr, res.Code
}

// On the long-lived cluster a failed attempt is retried on the same cluster once Ray counts the
// run's GPUs again, after the resume preparation has cleared what the attempt left: here a save
// cut short (tmp_step_4) that the second attempt must not find.
func TestRunRetriesAFailedAttemptOnceTheGPUsAreBack(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 2, 8, 3
	r.Layout.Root = t.TempDir()
	ckpt := r.Layout.Checkpoints()
	ray := newFakeRay(t, map[string][]reply{
		// Ray does not answer at first (the head lost its node), then counts 16 GPUs.
		"status": {{code: 1}, {files: []string{"ray-status-2-nodes-16-gpus.txt"}}},
	})
	framework := fmt.Sprintf(`if [[ -e %[1]s/attempted ]]; then ls %[1]s; exit 0; fi
mkdir -p %[1]s/tmp_step_4; touch %[1]s/attempted; exit 3`, ckpt)
	out, code := runEntrypoint(t, workloads.Command(kinds.NeMoRL, r, r.Layout.Root, []string{"bash", "-c", framework}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0"})
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "gke-rl run: attempt 1 of 3")
	assert.Contains(t, out, "attempt 1 failed (exit 3)")
	assert.Contains(t, out, "waiting for the Ray cluster's 16 GPUs (0 now)")
	assert.Contains(t, out, "the Ray cluster has its 16 GPUs")
	assert.Contains(t, out, "removed "+ckpt+"/tmp_step_4: a save cut short")
	assert.Contains(t, out, "gke-rl run: attempt 2 of 3")
	assert.NotContains(t, out, "tmp_step_4\n", "the second attempt starts without the first one's partial save")
	assert.Equal(t, []string{"status", "status"}, ray.calls())
	// The failed-attempt alert matches the line the retry printed (the submitter streams it).
	m := regexp.MustCompile(`textPayload=~"(.*)"`).FindStringSubmatch(monitoring.RunFailedFilter("rl", "gke-rl"))
	require.NotNil(t, m)
	assert.Regexp(t, m[1], out)
}

// A retry that never gets its GPUs back ends the run with the attempt's failure, and a run out of
// attempts fails without waiting.
func TestRunGivesUp(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 4, 8, 2
	r.Layout.Root = t.TempDir()
	ray := newFakeRay(t, map[string][]reply{"status": {{files: []string{"ray-status-2-nodes-16-gpus.txt"}}}})
	out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"false"}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0", "GPU_WAIT_SECONDS": "0"})
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "the Ray cluster has 16 of its 32 GPUs after 0s; giving up")
	assert.NotContains(t, out, "attempt 2 of 2")

	r.Attempts = 1 // a cluster of its own: KubeRay retries on a new cluster
	ray = newFakeRay(t, nil)
	out, code = runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"bash", "-c", "exit 7"}), ray, nil)
	assert.Equal(t, 7, code, out)
	assert.Contains(t, out, "attempt 1 failed (exit 7); no attempt left")
	assert.Empty(t, ray.calls(), "no wait for GPUs")
}
