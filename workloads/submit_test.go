package workloads_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"al.essio.dev/pkg/shellescape"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/test/clitest"
	"gke-rl/workloads"
)

const recordedJobID = "raysubmit_tUAuCKubPAEXh6CW" // the job of testdata/recorded/ray-job-*.txt

// runSubmitter runs the RayJob's submitter container as KubeRay starts it: its command, its
// environment, and the two variables KubeRay adds (rayjob_controller.go,
// configureSubmitterContainer).
func runSubmitter(t *testing.T, ray clitest.Replay, set map[string]string) (string, int) {
	t.Helper()
	job, err := workloads.RayJob(workloads.JobArgs{Name: "x", Cluster: longLived(), Entrypoint: "env A=1 bash -c 'echo a && echo b' run",
		RuntimeEnv: workloads.RuntimeEnv{PyModules: []string{"/data/verl/v0.6.0/verl"}}})
	require.NoError(t, err)
	c := job.Spec.SubmitterPodTemplate.Spec.Containers[0]
	require.Equal(t, workloads.SubmitterContainer, c.Name)
	env := []string{ray.Path(), "RAY_DASHBOARD_ADDRESS=x-head-svc.gke-rl.svc.cluster.local:8265", "RAY_JOB_SUBMISSION_ID=" + recordedJobID}
	for _, e := range c.Env {
		if v, ok := set[e.Name]; ok {
			e.Value = v
		}
		env = append(env, e.Name+"="+e.Value)
	}
	// What the pod's environment does not set (TMPDIR) is added.
	for name, v := range set {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
			env = append(env, name+"="+v)
		}
	}
	res := clitest.Run(t, env, c.Command[0], c.Command[1:]...)
	return res.Stdout + res.Stderr, res.Code
}

// A log stream that ends while the job runs (KubeRay's own submitter would exit, and KubeRay
// fail the run 30 s later) is followed again; the submitter exits 0 once Ray reports the job
// finished, failed or not, and KubeRay takes the outcome from Ray.
func TestSubmitterWaitsForTheJobToFinish(t *testing.T) {
	for _, end := range []string{"ray-job-status-failed.txt", "ray-job-status-stopped.txt"} {
		t.Run(end, func(t *testing.T) {
			ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
				// Not submitted yet (Ray's CLI fails on an unknown job), then running, then finished.
				"job status": {{Code: 1}, {Files: []string{"ray-job-status-running.txt"}}, {Files: []string{end}}},
				"job submit": {{Files: []string{"ray-job-submit-no-wait.txt"}}},
				// cli.py _tail_logs: the log, then the status; the first stream ends early.
				"job logs": {{Files: []string{"ray-job-logs.txt"}, Then: []string{"ray-job-status-running.txt"}}, {Files: []string{"ray-job-logs.txt"}, Then: []string{end}}},
			})
			out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0"})
			require.Equal(t, 0, code, out)
			address := "--address http://x-head-svc.gke-rl.svc.cluster.local:8265 "
			assert.Equal(t, []string{
				"job status " + address + recordedJobID,
				"job submit " + address + "--submission-id " + recordedJobID + ` --no-wait --runtime-env-json {"py_modules":["/data/verl/v0.6.0/verl"]} -- bash -c bash <(base64 -d <<<` +
					base64.StdEncoding.EncodeToString([]byte("env A=1 bash -c 'echo a && echo b' run")) + ")",
				"job logs " + address + "--follow " + recordedJobID,
				"job status " + address + recordedJobID,
				"job logs " + address + "--follow " + recordedJobID,
				"job status " + address + recordedJobID,
			}, ray.Calls())
			assert.Contains(t, out, "the log stream ended while the job runs; following it again in 0s from line 7")
			assert.Equal(t, 5, strings.Count(out, "hello world"), "the second stream's earlier lines are not printed again")
		})
	}
}

// A stream followed again prints only the lines after those the last stream printed, and its
// status lines: the log grows between the streams.
func TestSubmitterPrintsEachLogLineOnce(t *testing.T) {
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
		"job status": {{Files: []string{"ray-job-status-running.txt"}}, {Files: []string{"ray-job-status-running.txt"}}, {Files: []string{"ray-job-status-failed.txt"}}},
		"job logs": {
			{Files: []string{"ray-job-logs.txt"}, Then: []string{"ray-job-status-running.txt"}},
			// The log has grown by the quick start's step line.
			{Files: []string{"ray-job-logs.txt", "verl-quickstart-step0.txt"}, Then: []string{"ray-job-status-failed.txt"}},
		},
	})
	out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0"})
	require.Equal(t, 0, code, out)
	assert.Equal(t, 5, strings.Count(out, "hello world"), out)
	assert.Equal(t, 1, strings.Count(out, "step:0 - "), out)
	assert.Contains(t, out, "Job 'raysubmit_tUAuCKubPAEXh6CW' failed", "the final status is printed")
}

// A retried submitter pod does not submit the job again.
func TestSubmitterSubmitsOnce(t *testing.T) {
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
		"job status": {{Files: []string{"ray-job-status-running.txt"}}, {Files: []string{"ray-job-status-failed.txt"}}},
		"job logs":   {{Files: []string{"ray-job-logs.txt"}, Then: []string{"ray-job-status-failed.txt"}}},
	})
	out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0"})
	require.Equal(t, 0, code, out)
	assert.NotContains(t, ray.Calls(), "job submit", "the job exists")
	assert.Len(t, ray.Calls(), 3)
}

// When Ray's job API stays silent, the submitter fails, so that KubeRay counts a failed
// submission (and, with a cluster of its own, retries on a new one).
func TestSubmitterGivesUpWhenRayDoesNotAnswer(t *testing.T) {
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
		"job status": {{Files: []string{"ray-job-status-running.txt"}}, {Code: 1}},
		"job logs":   {{Code: 1}},
	})
	out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0", "UNREACHABLE_SECONDS": "0"})
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "Ray's job API has not answered for 0s; giving up")
}

// rayRuns runs a `ray job submit` entrypoint's words the way Ray 2.49 does: `ray job submit` joins
// them with subprocess.list2cmdline (dashboard/modules/job/cli.py) and the job's driver runs the
// line with /bin/sh (job_manager.py, shell=True). It prints what the job printed.
func rayRuns(t *testing.T, words ...string) string {
	t.Helper()
	python := clitest.Tool(t, "python3")
	joined := clitest.Run(t, nil, python, append([]string{"-c", "import subprocess, sys; sys.stdout.write(subprocess.list2cmdline(sys.argv[1:]))"}, words...)...)
	require.Zero(t, joined.Code, joined.Stderr)
	res := clitest.Run(t, nil, "/bin/sh", "-c", joined.Stdout)
	return res.Stdout + res.Stderr
}

// No shell between the user and the framework: the entrypoint the submitter hands to Ray reaches
// bash exactly as planned, `$`, backticks and backslashes of job.args included (an OmegaConf
// interpolation, a literal $HOME), as the plan's words show when bash runs them directly.
func TestSubmissionReachesTheFrameworkAsPlanned(t *testing.T) {
	args := []string{"data.max_response_length=${data.max_prompt_length}", "trainer.experiment_name=$HOME-`id -u`", `actor_rollout_ref.model.path=C:\\models "q"`}
	planned := "printf '<%s>\\n' python3 -m verl.trainer.main_ppo"
	for _, a := range args {
		planned += " " + shellescape.Quote(a)
	}
	want := clitest.Run(t, nil, "bash", "-c", planned)
	require.Zero(t, want.Code, want.Stderr)
	for _, a := range args {
		require.Contains(t, want.Stdout, "<"+a+">", "bash alone keeps each word")
	}

	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
		"job status": {{Code: 1}, {Files: []string{"ray-job-status-stopped.txt"}}},
		"job submit": {{Files: []string{"ray-job-submit-no-wait.txt"}}},
		"job logs":   {{Files: []string{"ray-job-logs.txt"}, Then: []string{"ray-job-status-stopped.txt"}}},
	})
	out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0", "ENTRYPOINT": planned})
	require.Equal(t, 0, code, out)
	var submitted string
	for _, call := range ray.Calls() {
		if _, rest, ok := strings.Cut(call, " -- bash -c "); ok && strings.HasPrefix(call, "job submit ") {
			submitted = rest
		}
	}
	require.NotEmpty(t, submitted, "the job was submitted: %v", ray.Calls())
	assert.Equal(t, want.Stdout, rayRuns(t, "bash", "-c", submitted), "the framework's words are the plan's")

	// The entrypoint handed over as it is, as before, is expanded by Ray's shell first.
	assert.Contains(t, rayRuns(t, "bash", "-c", planned), "Bad substitution")
}
