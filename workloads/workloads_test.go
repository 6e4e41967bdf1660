package workloads_test

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/shlex"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"gke-rl/internal/kinds"
	"gke-rl/test/clitest"
	_ "gke-rl/test/golden" // every test binary accepts -update
	"gke-rl/workloads"
)

func run() workloads.Run {
	return workloads.Run{
		Model: "Qwen/Qwen2.5-72B-Instruct", Dataset: "DeepScaler", Recipe: "examples/configs/grpo_math_70B_megatron.yaml",
		Nodes: 8, GPUsPerNode: 8, MaxSteps: 20, PromptsPerStep: 32, GenerationsPerPrompt: 8,
		CheckpointPeriod: 2, KeepCheckpoints: 2,
		Layout: workloads.Layout{Root: "/lustre", Run: "ray-a4-grpo"},
	}
}

// words splits a shell command line the way a POSIX shell would.
func words(t *testing.T, cmd string) []string {
	t.Helper()
	w, err := shlex.Split(cmd)
	require.NoError(t, err)
	return w
}

func overrides(ws []string) map[string]string {
	out := map[string]string{}
	for _, w := range ws {
		if k, v, ok := strings.Cut(w, "="); ok && !strings.HasPrefix(k, "-") {
			out[k] = v
		}
	}
	return out
}

// framework are an entrypoint's words after run.sh, which runs them in attempts:
// `env VAR=... bash /etc/gke-rl/run.sh ...`.
func framework(t *testing.T, ws []string) []string {
	t.Helper()
	require.Equal(t, "env", ws[0])
	i := slices.Index(ws, "bash")
	require.Positive(t, i)
	require.Equal(t, workloads.RunScriptPath, ws[i+1])
	return ws[i+2:]
}

// runEnv are the values an entrypoint gives run.sh.
func runEnv(t *testing.T, ws []string) map[string]string {
	t.Helper()
	return overrides(ws[1:slices.Index(ws, "bash")])
}

func TestNeMoRLEntrypoint(t *testing.T) {
	r := run()
	r.Release = "v0.5.0"
	r.Extra = []string{"policy.megatron_cfg.converter_type=Qwen2ForCausalLM"}
	ws := framework(t, words(t, workloads.NeMoRLEntrypoint(r)))
	assert.Equal(t, []string{"env", "RAY_OVERRIDE_JOB_RUNTIME_ENV=1", "uv", "run", "python", "examples/run_grpo_math.py", "--config", "examples/configs/grpo_math_70B_megatron.yaml"}, ws[:8])
	assert.Equal(t, "/opt/nemo-rl", runEnv(t, words(t, workloads.NeMoRLEntrypoint(r)))["WORKDIR"])
	o := overrides(ws[8:])
	assert.Equal(t, map[string]string{
		"policy.model_name":                  "/lustre/checkpoints/.gke-rl/models/Qwen/Qwen2.5-72B-Instruct", // run.sh's checked copy
		"policy.tokenizer.name":              "/lustre/checkpoints/.gke-rl/models/Qwen/Qwen2.5-72B-Instruct", // the model's own tokenizer, not a Hub ID
		"cluster.num_nodes":                  "8",
		"cluster.gpus_per_node":              "8",
		"grpo.max_num_steps":                 "20",
		"grpo.num_prompts_per_step":          "32",
		"grpo.num_generations_per_prompt":    "8",
		"policy.train_global_batch_size":     "256",
		"data.dataset_name":                  "DeepScaler",
		"checkpointing.enabled":              "True",
		"checkpointing.checkpoint_dir":       "/lustre/checkpoints/ray-a4-grpo",
		"checkpointing.save_period":          "2",
		"checkpointing.keep_top_k":           "2",
		"checkpointing.metric_name":          "null",
		"logger.wandb_enabled":               "False",
		"logger.log_dir":                     "/lustre/checkpoints/ray-a4-grpo/logs", // the training pods alone write there
		"policy.megatron_cfg.converter_type": "Qwen2ForCausalLM",
	}, o)
	assert.Equal(t, "policy.megatron_cfg.converter_type=Qwen2ForCausalLM", ws[len(ws)-1], "job.args come last")

	// More job.args than the program's own overrides: every one, in order, after them.
	r.Extra = nil
	for i := range 40 {
		r.Extra = append(r.Extra, fmt.Sprintf("+extra.k%d=%d", i, i))
	}
	ws = framework(t, words(t, workloads.NeMoRLEntrypoint(r)))
	assert.Equal(t, r.Extra, ws[len(ws)-40:])

	// A value goes in as many digits as it has: 1.5e-06, not 2e-06.
	lr, temperature := 1.5e-6, 0.75
	r.Tuning.LearningRate, r.Tuning.Temperature = &lr, &temperature
	tuned := overrides(framework(t, words(t, workloads.NeMoRLEntrypoint(r))))
	assert.Equal(t, "1.5e-06", tuned["policy.megatron_cfg.optimizer.lr"])
	assert.Equal(t, "0.75", tuned["policy.generation.temperature"])
	r.Tuning.LearningRate, r.Tuning.Temperature = nil, nil

	// A run bounded by epochs alone (job.maxSteps 0) sets no step limit, and one bounded by
	// steps alone no epoch limit: the recipe's own stays.
	r.MaxSteps, r.Epochs = 0, 2
	o = overrides(framework(t, words(t, workloads.NeMoRLEntrypoint(r))))
	assert.NotContains(t, o, "grpo.max_num_steps")
	assert.Equal(t, "2", o["grpo.max_num_epochs"])
	r.MaxSteps, r.Epochs = 1, 0
	o = overrides(framework(t, words(t, workloads.NeMoRLEntrypoint(r))))
	assert.Equal(t, "1", o["grpo.max_num_steps"])
	assert.NotContains(t, o, "grpo.max_num_epochs")
}

func TestWandBOnlyWithAKey(t *testing.T) {
	r := run()
	r.WandB = true
	o := overrides(framework(t, words(t, workloads.NeMoRLEntrypoint(r))))
	assert.Equal(t, "True", o["logger.wandb_enabled"])
	assert.Equal(t, "gke-rl", o["logger.wandb.project"])
	v := overrides(framework(t, words(t, workloads.VerlEntrypoint(r))))
	assert.Equal(t, `["console","wandb"]`, v["trainer.logger"])
	r.WandB = false
	assert.Equal(t, `["console"]`, overrides(framework(t, words(t, workloads.VerlEntrypoint(r))))["trainer.logger"])
}

func TestVerlEntrypoint(t *testing.T) {
	r := run()
	r.Model, r.Dataset, r.Nodes, r.MaxSteps, r.Epochs, r.PromptsPerStep = "Qwen/Qwen2.5-32B-Instruct", "gsm8k", 2, 0, 2, 256
	r.Layout.Root = "/data"
	ws := framework(t, words(t, workloads.VerlEntrypoint(r)))
	assert.Equal(t, []string{"python3", "-m", "verl.trainer.main_ppo"}, ws[:3])
	assert.Equal(t, "/tmp", runEnv(t, words(t, workloads.VerlEntrypoint(r)))["WORKDIR"], "not the checkout: verl is imported from the runtime environment's local copy")
	o := overrides(ws[3:])
	assert.Equal(t, "grpo", o["algorithm.adv_estimator"])
	assert.Equal(t, "/data/datasets/gsm8k/train.parquet", o["data.train_files"])
	assert.Equal(t, "/data/datasets/gsm8k/test.parquet", o["data.val_files"])
	assert.Equal(t, "/data/checkpoints/.gke-rl/models/Qwen/Qwen2.5-32B-Instruct", o["actor_rollout_ref.model.path"], "run.sh's checked copy of the data preparation's download")
	assert.Equal(t, "8", o["actor_rollout_ref.rollout.n"])
	assert.Equal(t, "2", o["trainer.nnodes"])
	assert.Equal(t, "8", o["trainer.n_gpus_per_node"])
	assert.Equal(t, "2", o["trainer.total_epochs"])
	assert.NotContains(t, o, "trainer.total_training_steps", "bounded by epochs only")
	assert.Equal(t, "2", o["trainer.save_freq"])
	assert.Equal(t, "/data/checkpoints/ray-a4-grpo", o["trainer.default_local_dir"])
	assert.Equal(t, "auto", o["trainer.resume_mode"])
	assert.Equal(t, "256", o["data.train_batch_size"])
}

func TestEntrypointsQuoteWhatTheyPass(t *testing.T) {
	r := run()
	r.Extra = []string{"logger.wandb.name=run; rm -rf /", `policy.x=$(whoami)`}
	for _, cmd := range []string{workloads.NeMoRLEntrypoint(r), workloads.VerlEntrypoint(r)} {
		ws := words(t, cmd)
		assert.Equal(t, r.Extra, ws[len(ws)-2:], "each job.args value stays one word, unexpanded")
	}
}

func TestManagedKeys(t *testing.T) {
	assert.Contains(t, workloads.ManagedKeys(kinds.Verl), "trainer.nnodes")
	assert.Contains(t, workloads.ManagedKeys(kinds.NeMoRL), "cluster.num_nodes")
	// NeMo RL's learning rate is its backend's optimizer's: both backends' keys are managed,
	// whichever the recipe uses; verl has neither.
	for _, k := range []string{"policy.optimizer.kwargs.lr", "policy.megatron_cfg.optimizer.lr"} {
		require.Contains(t, workloads.ManagedKeys(kinds.NeMoRL), k)
		assert.Equal(t, "set job.learningRate instead", workloads.SetterOf(workloads.ManagedKeys(kinds.NeMoRL)[k]), k)
		assert.NotContains(t, workloads.ManagedKeys(kinds.Verl), k)
	}
	assert.Equal(t, "trainer.nnodes", workloads.OverrideKey("++trainer.nnodes=4"))
}

func TestRayJobRules(t *testing.T) {
	spec := &rayv1.RayClusterSpec{RayVersion: "2.49.2"}
	own, err := workloads.RayJob(workloads.JobArgs{Name: "x-grpo", Namespace: "gke-rl", Entrypoint: "true", OwnCluster: spec, BackoffLimit: 10, ActiveDeadlineSeconds: 86400})
	require.NoError(t, err)
	assert.NotNil(t, own.Spec.RayClusterSpec)
	assert.Empty(t, own.Spec.ClusterSelector, "exactly one of rayClusterSpec and clusterSelector")
	assert.EqualValues(t, 10, *own.Spec.BackoffLimit, "a preempted attempt is retried on a new cluster")
	assert.True(t, own.Spec.ShutdownAfterJobFinishes, "ttlSecondsAfterFinished needs it")
	assert.EqualValues(t, workloads.FinishedClusterTTLSeconds, own.Spec.TTLSecondsAfterFinished)
	assert.EqualValues(t, 86400, *own.Spec.ActiveDeadlineSeconds)
	unbounded, err := workloads.RayJob(workloads.JobArgs{Name: "x-grpo", Namespace: "gke-rl", Entrypoint: "true", OwnCluster: spec, BackoffLimit: 10})
	require.NoError(t, err)
	assert.Nil(t, unbounded.Spec.ActiveDeadlineSeconds, "0 is no deadline")

	shared, err := workloads.RayJob(workloads.JobArgs{Name: "x-grpo", Namespace: "gke-rl", Entrypoint: "true", Cluster: longLived(), BackoffLimit: 10})
	require.NoError(t, err)
	assert.Nil(t, shared.Spec.RayClusterSpec)
	assert.Equal(t, map[string]string{"ray.io/cluster": "x"}, shared.Spec.ClusterSelector)
	assert.Nil(t, shared.Spec.BackoffLimit, "clusterSelector excludes backoffLimit")
	assert.False(t, shared.Spec.ShutdownAfterJobFinishes, "the long-lived cluster stays")
	assert.Zero(t, shared.Spec.TTLSecondsAfterFinished)
	assert.Nil(t, shared.Spec.ActiveDeadlineSeconds, "no deadline unless configured")
	fingerprint, err := workloads.Fingerprint(longLived().Spec)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{workloads.ClusterSpecKey: fingerprint}, shared.Spec.Metadata, "the job carries its cluster's fingerprint")

	_, err = workloads.RayJob(workloads.JobArgs{Name: "x-grpo"})
	assert.ErrorContains(t, err, "neither a cluster of its own nor a long-lived one")
}

// A fingerprint is the first 8 bytes of the SHA-256 of the value's JSON, in hex: `{"a":1}` gives
// 015abd7f5cc57a2d (`printf '{"a":1}' | sha256sum`); another value another one; a value JSON
// cannot encode an error.
func TestAFingerprintIsTheDigestOfTheValuesJSON(t *testing.T) {
	got, err := workloads.Fingerprint(map[string]int{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, "015abd7f5cc57a2d", got)
	other, err := workloads.Fingerprint(map[string]int{"a": 2})
	require.NoError(t, err)
	assert.NotEqual(t, got, other)
	_, err = workloads.Fingerprint(make(chan int))
	assert.Error(t, err)
}

// longLived is a long-lived RayCluster named x.
func longLived() *rayv1.RayCluster {
	return &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: rayv1.RayClusterSpec{RayVersion: "2.49.2"}}
}

func TestRuntimeEnvHoldsOnlyWhatItIsGiven(t *testing.T) {
	verl := workloads.VerlRuntimeEnv(workloads.Run{Layout: workloads.Layout{Root: "/data"}})
	job, err := workloads.RayJob(workloads.JobArgs{Name: "x", Cluster: longLived(), RuntimeEnv: verl})
	require.NoError(t, err)
	var env map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(job.Spec.RuntimeEnvYAML), &env))
	assert.Equal(t, map[string]any{"py_modules": []any{"/data/verl/v0.6.0/verl"}}, env, "the verl package, which Ray copies to every node's disk")
	submitter := job.Spec.SubmitterPodTemplate.Spec.Containers[0]
	assert.JSONEq(t, `{"py_modules":["/data/verl/v0.6.0/verl"]}`, envValue(submitter.Env, "RUNTIME_ENV_JSON"), "the submitter submits the RayJob's own runtime environment")

	none, err := workloads.RayJob(workloads.JobArgs{Name: "x", Cluster: longLived()})
	require.NoError(t, err)
	assert.Empty(t, none.Spec.RuntimeEnvYAML)
	assert.Equal(t, "{}", envValue(none.Spec.SubmitterPodTemplate.Spec.Containers[0].Env, "RUNTIME_ENV_JSON"))
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// Tokens reach pods as files from Secret Manager, through the add-on's CSI volume: an
// environment variable would be copied into every NeMo RL actor's runtime environment, which
// the Ray dashboard shows. Each group of pods gets only the token it reads, and runs as that
// token's reader: the data preparation the Hugging Face token, the Ray pods the W&B netrc.
func TestTokensReachOnlyTheirReadersAsFiles(t *testing.T) {
	both := workloads.Tokens{HF: true, WandB: true, Project: "p", Prefix: "c"}
	for _, tc := range []struct {
		pods                 workloads.PodTokens
		account, env, path   string
		providerClass, other string
	}{
		{both.ForPrep(), "rl-hf-reader", "HF_TOKEN_PATH", "/var/run/secrets/gke-rl/tokens/hf-token", "rl-hf-token", "NETRC"},   // read by huggingface_hub
		{both.ForRay(), "rl-wandb-reader", "NETRC", "/var/run/secrets/gke-rl/tokens/netrc", "rl-wandb-netrc", "HF_TOKEN_PATH"}, // read by wandb
	} {
		assert.Equal(t, tc.account, tc.pods.ServiceAccount)
		require.Len(t, tc.pods.Env, 1)
		assert.Nil(t, tc.pods.Env[0].ValueFrom, "a path, never the token by reference")
		assert.Equal(t, corev1.EnvVar{Name: tc.env, Value: tc.path}, tc.pods.Env[0])
		require.Len(t, tc.pods.Volumes, 1)
		csi := tc.pods.Volumes[0].CSI
		require.NotNil(t, csi)
		assert.Equal(t, "secrets-store-gke.csi.k8s.io", csi.Driver, "the managed add-on's driver, not the open-source one's")
		assert.True(t, *csi.ReadOnly)
		assert.Equal(t, map[string]string{"secretProviderClass": tc.providerClass}, csi.VolumeAttributes)
		require.Len(t, tc.pods.Mounts, 1)
		assert.True(t, tc.pods.Mounts[0].ReadOnly)
		assert.Equal(t, tc.pods.Volumes[0].Name, tc.pods.Mounts[0].Name)
	}
	assert.Equal(t, []string{"rl-hf-reader", "rl-wandb-reader"}, both.Readers())

	none := workloads.Tokens{}
	assert.Equal(t, workloads.PodTokens{}, none.ForPrep(), "no token: the volume's account, nothing mounted")
	assert.Equal(t, workloads.PodTokens{}, none.ForRay())
	assert.Empty(t, none.Readers())
	assert.Equal(t, workloads.PodTokens{}, workloads.Tokens{WandB: true}.ForPrep(), "the data preparation reads no W&B key")
	assert.Equal(t, workloads.PodTokens{}, workloads.Tokens{HF: true}.ForRay(), "the Ray pods run offline and read no Hugging Face token")
}

// Each SecretProviderClass maps one secret's latest version to the file its library reads, in
// the add-on's format (provider gke, a YAML list of resourceName and path).
func TestTokensProviderClass(t *testing.T) {
	tokens := workloads.Tokens{HF: true, WandB: true, Project: "my-project", Prefix: "ray-a4"}
	for tok, want := range map[workloads.Token]map[string]string{
		workloads.HFToken:    {"resourceName": "projects/my-project/secrets/ray-a4-hf-token/versions/latest", "path": "hf-token"},
		workloads.WandBNetrc: {"resourceName": "projects/my-project/secrets/ray-a4-wandb-netrc/versions/latest", "path": "netrc"},
	} {
		class, err := tokens.ProviderClass("gke-rl", tok)
		require.NoError(t, err)
		assert.Equal(t, "secrets-store.csi.x-k8s.io/v1", class.APIVersion)
		assert.Equal(t, tok.ProviderClass, class.Name)
		assert.Equal(t, "gke", string(class.Spec.Provider))
		var entries []map[string]string
		require.NoError(t, yaml.Unmarshal([]byte(class.Spec.Parameters["secrets"]), &entries))
		assert.Equal(t, []map[string]string{want}, entries, "this token's secret alone")
	}
	assert.Equal(t, `read -rs HF_TOKEN && printf %s "$HF_TOKEN" | gcloud secrets versions add ray-a4-hf-token --project my-project --data-file=-`, tokens.AddVersionCommand(workloads.HFToken),
		"the value comes from standard input, never the command line")
}

// The commands that store the tokens, run by bash with the value typed at their prompt: gcloud
// receives the Hugging Face token as it is and the W&B key inside the netrc entry W&B reads.
// gcloud here is a shell function that keeps what it is piped and its arguments: the test is of
// what the command gives gcloud, not of gcloud.
func TestTokenCommandsStoreWhatTheReadersRead(t *testing.T) {
	bash := clitest.Tool(t, "bash")
	tokens := workloads.Tokens{HF: true, WandB: true, Project: "my-project", Prefix: "ray-a4"}
	for tok, want := range map[workloads.Token]string{
		workloads.HFToken:    "hf_secret",
		workloads.WandBNetrc: "machine api.wandb.ai\n  login user\n  password wandb_secret\n",
	} {
		out := filepath.Join(t.TempDir(), "stdin")
		typed := map[workloads.Token]string{workloads.HFToken: "hf_secret\n", workloads.WandBNetrc: "wandb_secret\n"}[tok]
		script := `gcloud() { cat >"$OUT"; printf '%s\n' "$*" >"$OUT.args"; }` + "\n" + tokens.AddVersionCommand(tok)
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append(os.Environ(), "OUT="+out)
		cmd.Stdin = strings.NewReader(typed)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), tok.Secret)
		args, err := os.ReadFile(out + ".args")
		require.NoError(t, err)
		assert.Equal(t, "secrets versions add ray-a4-"+tok.Secret+" --project my-project --data-file=-\n", string(args))
		assert.NotContains(t, string(args), strings.TrimSpace(typed), "the value is on no command line")
	}
}

func TestProjectNumberOfASecret(t *testing.T) {
	n, err := workloads.ProjectNumberOf("projects/123456789012/secrets/ray-a4-hf-token")
	require.NoError(t, err)
	assert.Equal(t, "123456789012", n)
	for _, bad := range []string{"projects/my-project/secrets/x", "projects//secrets/x", "x", "projects/12/topics/x"} {
		_, err := workloads.ProjectNumberOf(bad)
		assert.Error(t, err, bad)
	}
}

func TestNeMoRLPrepStagesTheModelByPathAndTheDatasetsInTheCache(t *testing.T) {
	steps := workloads.NeMoRLPrepSteps(run())
	require.Len(t, steps, 3, "the model, then each Hub dataset DeepScaler loads")
	assert.Equal(t, "/lustre/models/Qwen/Qwen2.5-72B-Instruct", steps[0].Dir)
	assert.Equal(t, []string{"model", "Qwen/Qwen2.5-72B-Instruct", "", "/lustre/models/Qwen/Qwen2.5-72B-Instruct"}, steps[0].Command[4:],
		"unpinned: the default branch, into the directory policy.model_name names")
	assert.Equal(t, []string{"dataset", "agentica-org/DeepScaleR-Preview-Dataset", ""}, steps[1].Command[4:], "into the cache, where load_dataset finds it offline")
	assert.Equal(t, []string{"dataset", "HuggingFaceH4/aime_2024", ""}, steps[2].Command[4:])
	for _, s := range steps {
		assert.False(t, s.Fresh, "downloads resume after an interruption")
	}
	for _, name := range workloads.NeMoRLDatasets {
		assert.NotEmpty(t, workloads.NeMoRLDatasetSources[name], name)
	}
	// The log reports what the download filled (the hub cache), not the empty marker directory.
	assert.Equal(t, "/lustre/prepared/datasets/HuggingFaceH4/aime_2024", steps[2].Dir)
	assert.Equal(t, []string{"/lustre/huggingface/hub/datasets--HuggingFaceH4--aime_2024"}, steps[2].SizeOf)
}

// The downloads hold the token: Python runs isolated, so a package planted in the working
// directory (or named by PYTHONPATH) is not imported in place of huggingface_hub.
func TestHubDownloadsImportNothingPlanted(t *testing.T) {
	clitest.Tool(t, "python3")
	cwd := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(cwd, "huggingface_hub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "huggingface_hub", "__init__.py"), []byte("print('PLANTED: the token is read')\nraise SystemExit(0)\n"), 0o644))
	cmd := workloads.NeMoRLPrepSteps(run())[0].Command
	require.Equal(t, []string{"python3", "-I", "-c"}, cmd[:3])
	res := clitest.RunIn(t, cwd, []string{"PYTHONPATH=" + cwd}, cmd[0], cmd[1:]...)
	assert.NotContains(t, res.Stdout, "PLANTED")
	// Without -I the same line imports the planted package.
	res = clitest.RunIn(t, cwd, nil, cmd[0], cmd[2:]...)
	assert.Contains(t, res.Stdout, "PLANTED", "the test plants what a non-isolated run imports")
}

// A pin names the directory it fills, so that pinning another revision prepares again instead
// of finding the old one complete; the entrypoint loads what the preparation filled.
func TestPinnedRevisionsNameWhatTheyPrepare(t *testing.T) {
	const model, dataset = "495f39366efef23836d0cfae4fbe635880d2be31", "2fe88a2f1091d5048c0f36abc874fb997b3dd99a"
	r := run()
	r.Revisions = map[string]string{"Qwen/Qwen2.5-72B-Instruct": model, "HuggingFaceH4/aime_2024": dataset, "other/model": "main"}
	steps := workloads.NeMoRLPrepSteps(r)
	assert.Equal(t, "/lustre/models/Qwen/Qwen2.5-72B-Instruct@"+model, steps[0].Dir)
	assert.Equal(t, []string{"model", "Qwen/Qwen2.5-72B-Instruct", model, steps[0].Dir}, steps[0].Command[4:])
	assert.Equal(t, "", steps[1].Command[6], "DeepScaleR is not pinned")
	assert.Equal(t, []string{"dataset", "HuggingFaceH4/aime_2024", dataset}, steps[2].Command[4:])
	assert.Equal(t, "/lustre/prepared/datasets/HuggingFaceH4/aime_2024@"+dataset, steps[2].Dir)
	entry := words(t, workloads.NeMoRLEntrypoint(r))
	assert.Equal(t, steps[0].Dir, runEnv(t, entry)["MODEL_SOURCE"], "run.sh copies what the preparation filled")
	assert.Equal(t, "/lustre/checkpoints/.gke-rl/models/Qwen/Qwen2.5-72B-Instruct@"+model, overrides(framework(t, entry))["policy.model_name"])
	assert.Equal(t, runEnv(t, entry)["MODEL_DIR"], overrides(framework(t, entry))["policy.model_name"], "and the run loads the copy")

	r.Revisions = map[string]string{"Qwen/Qwen2.5-72B-Instruct": "refs/pr/1"}
	assert.Equal(t, "/lustre/models/Qwen/Qwen2.5-72B-Instruct@refs--pr--1", workloads.NeMoRLPrepSteps(r)[0].Dir, "one directory, not three levels")
}

func TestCheckRevision(t *testing.T) {
	for _, ok := range []string{"495f39366efef23836d0cfae4fbe635880d2be31", "main", "v1.0", "refs/pr/1", "release_2024-01"} {
		assert.Empty(t, workloads.CheckRevision(ok), ok)
	}
	for bad, why := range map[string]string{
		"495f393":   "abbreviated commit ID",
		"v1..2":     "is not a revision",
		"a b":       "is not a revision",
		"-main":     "is not a revision",
		"main.lock": "is not a revision",
		"main/":     "is not a revision",
		"":          "is not a revision",
		"main~1":    "is not a revision",
	} {
		assert.Contains(t, workloads.CheckRevision(bad), why, bad)
	}
	assert.True(t, workloads.IsCommit("495f39366efef23836d0cfae4fbe635880d2be31"))
	assert.False(t, workloads.IsCommit("main"))
}

// The fetch script is Python the prep image runs: it must at least compile, and take the
// arguments in the order the steps give them.
func TestHubFetchScriptCompiles(t *testing.T) {
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 checks the script's syntax")
	script := workloads.NeMoRLPrepSteps(run())[0].Command[3]
	out, err := exec.Command(python, "-c", "import ast, sys; ast.parse(sys.argv[1])", script).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, script, "repo_type, repo_id, revision = sys.argv[1], sys.argv[2], sys.argv[3] or None")
	assert.Contains(t, script, "local_dir = sys.argv[4] if len(sys.argv) > 4 else None")
}

// A download into a cache reports the cache's size (symbolic links followed, as a Hugging Face
// snapshot links into blobs), not its marker directory's.
func TestPrepScriptReportsWhatTheStepFilled(t *testing.T) {
	root := t.TempDir()
	cache, marker := filepath.Join(root, "hub", "models--org--m"), filepath.Join(root, "prepared", "m")
	blob := filepath.Join(cache, "blobs", "abc")
	download := `mkdir -p "$0/blobs" "$0/snapshots/1" && head -c 3000000 /dev/zero > "$0/blobs/abc" && ln -sf ../../blobs/abc "$0/snapshots/1/model.safetensors"`
	script := workloads.PrepScript([]workloads.PrepStep{
		{Name: "model org/m", Dir: marker, SizeOf: []string{cache, filepath.Join(root, "absent")}, Command: []string{"bash", "-c", download, cache}},
	})
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.FileExists(t, blob)
	assert.Regexp(t, `model org/m: done, 2\.[89]M\n`, string(out), "the 3 MB blob, counted once")
}

func TestVerlPrepSteps(t *testing.T) {
	r := run()
	r.Model, r.Dataset, r.Layout.Root = "Qwen/Qwen2.5-32B-Instruct", "gsm8k", "/data"
	r.Revisions = map[string]string{"openai/gsm8k": "740312add88f781978c0658806c59bc2815b9866"}
	steps := workloads.VerlPrepSteps(r)
	require.Len(t, steps, 4)
	assert.Equal(t, []string{"checkout_commit", "/data/verl/v0.6.0", "https://github.com/volcengine/verl.git", "ddd86f527a4af75095e4677b02b5aa272913a088"}, steps[0].Command)
	raw := "/data/datasets/hub/openai/gsm8k@740312add88f781978c0658806c59bc2815b9866"
	assert.Equal(t, raw, steps[1].Dir)
	assert.Equal(t, []string{"dataset", "openai/gsm8k", "740312add88f781978c0658806c59bc2815b9866", raw}, steps[1].Command[4:])
	assert.Equal(t, []string{"run_verified", "/data/verl/v0.6.0/examples/data_preprocess", "d4b2959ebe2b070646015de73a487a558325cd13",
		"/data/verl/v0.6.0/verl", "21dba16c55f23a0d01e69f444817769d91ce3465", "--", "python3", "/data/verl/v0.6.0/examples/data_preprocess/gsm8k.py", "--local_dataset_path", raw,
		"--local_save_dir", "/data/datasets/gsm8k@740312add88f781978c0658806c59bc2815b9866"}, steps[2].Command,
		"verl's script converts the pinned copy, once its directory is the pinned tree, instead of downloading the default branch itself")
	assert.Equal(t, "/data/models/Qwen/Qwen2.5-32B-Instruct", steps[3].Dir)
	assert.Equal(t, []string{"model", "Qwen/Qwen2.5-32B-Instruct", "", "/data/models/Qwen/Qwen2.5-32B-Instruct"}, steps[3].Command[4:])
	for _, name := range []string{"gsm8k", "math"} {
		assert.NotEmpty(t, workloads.VerlDatasetSources[name], name)
	}
}

// TestPrepScriptRunsOnceAndRedoesAnInterruptedStep runs the generated script with bash.
func TestPrepScriptRunsOnceAndRedoesAnInterruptedStep(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	root := t.TempDir()
	counter := filepath.Join(root, "runs")
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b dir")
	steps := []workloads.PrepStep{
		{Name: "a", Dir: a, Fresh: true, Command: []string{"sh", "-c", `echo a >> "$0"; echo ok > "$1/file"`, counter, a}},
		{Name: "b", Dir: b, Command: []string{"sh", "-c", `echo b >> "$0"; echo ok > "$1/file"`, counter, b}},
	}
	script := workloads.PrepScript(steps)
	runScript := func() string {
		out, err := exec.Command(bash, "-c", script).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	assert.Contains(t, runScript(), "b: done, ", "each step reports its size")
	assert.Contains(t, runScript(), "a: ready, skipped")
	runs, _ := os.ReadFile(counter)
	assert.Equal(t, "a\nb\n", string(runs), "each step ran once over two runs")

	// An interrupted step leaves no marker: the next run starts it again. A fresh step starts
	// from an empty directory; a download keeps what it had, to resume.
	for _, dir := range []string{a, b} {
		require.NoError(t, os.Remove(workloads.CompleteMarker(dir)))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "partial"), []byte("x"), 0o644))
	}
	runScript()
	runs, _ = os.ReadFile(counter)
	assert.Equal(t, "a\nb\na\nb\n", string(runs))
	assert.NoFileExists(t, filepath.Join(a, "partial"))
	assert.FileExists(t, filepath.Join(b, "partial"))

	// A failing step stops the script and is not marked complete.
	failing := workloads.PrepScript([]workloads.PrepStep{{Name: "c", Dir: filepath.Join(root, "c"), Command: []string{"false"}}})
	assert.Error(t, exec.Command(bash, "-c", failing).Run())
	assert.NoFileExists(t, workloads.CompleteMarker(filepath.Join(root, "c")))
}

// Each attempt starts from a state the framework accepts: the resume preparation, run with bash
// on directory layouts that mimic where an attempt can be cut short.
func TestResumePrepLeavesAStateTheFrameworkAccepts(t *testing.T) {
	bash := clitest.Tool(t, "bash")
	cases := []struct {
		sentence  string
		framework kinds.Framework
		// directories and files (ending in .txt=<content>) under the root; {converted} is where
		// NeMo RL converts the model it loads by path (NeMoRLConvertedDir), in the checkpoints
		before []string
		after  []string // what exists afterwards, among before's paths
		log    string
	}{
		{"NeMo RL: a conversion cut short before any checkpoint is converted again", kinds.NeMoRL,
			[]string{"{converted}/iter_0000000"},
			nil, "no checkpoint yet, so its conversion may have been cut short"},
		{"NeMo RL: with a checkpoint, the conversion is kept", kinds.NeMoRL,
			[]string{"{converted}/iter_0000000", "checkpoints/ray-a4-grpo/step_10"},
			[]string{"{converted}/iter_0000000", "checkpoints/ray-a4-grpo/step_10"}, ""},
		{"NeMo RL: a save cut short is removed", kinds.NeMoRL,
			[]string{"checkpoints/ray-a4-grpo/step_10", "checkpoints/ray-a4-grpo/tmp_step_20"},
			[]string{"checkpoints/ray-a4-grpo/step_10"}, "tmp_step_20: a save cut short"},
		{"NeMo RL: a save cut short between its renames is restored", kinds.NeMoRL,
			[]string{"checkpoints/ray-a4-grpo/old_step_20", "checkpoints/ray-a4-grpo/tmp_step_20"},
			[]string{"checkpoints/ray-a4-grpo/step_20"}, "restored"},
		{"NeMo RL: an old copy of a step saved again is removed", kinds.NeMoRL,
			[]string{"checkpoints/ray-a4-grpo/old_step_20", "checkpoints/ray-a4-grpo/step_20"},
			[]string{"checkpoints/ray-a4-grpo/step_20"}, "its step was saved again"},
		{"verl: a save newer than the tracker is removed, and checkpoints beyond keepCheckpoints", kinds.Verl,
			[]string{"checkpoints/ray-a4-grpo/global_step_2", "checkpoints/ray-a4-grpo/global_step_4", "checkpoints/ray-a4-grpo/global_step_6",
				"checkpoints/ray-a4-grpo/global_step_8", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt=6"},
			[]string{"checkpoints/ray-a4-grpo/global_step_4", "checkpoints/ray-a4-grpo/global_step_6", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt=6"},
			"global_step_2: beyond the newest 2"},
		{"verl: without a tracker no save completed", kinds.Verl,
			[]string{"checkpoints/ray-a4-grpo/global_step_2"}, nil, "a save cut short (the last complete one is step -1)"},
		{"verl: an empty tracker (cut short while naming a complete save) names the newest save again", kinds.Verl,
			[]string{"checkpoints/ray-a4-grpo/global_step_2", "checkpoints/ray-a4-grpo/global_step_4", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt="},
			[]string{"checkpoints/ray-a4-grpo/global_step_2", "checkpoints/ray-a4-grpo/global_step_4", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt=4"},
			"rewrote " /* the tracker */},
		{"verl: the newest saves by number, not as text (global_step_10 after global_step_9)", kinds.Verl,
			[]string{"checkpoints/ray-a4-grpo/global_step_8", "checkpoints/ray-a4-grpo/global_step_9", "checkpoints/ray-a4-grpo/global_step_10",
				"checkpoints/ray-a4-grpo/global_step_11", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt=10"},
			[]string{"checkpoints/ray-a4-grpo/global_step_9", "checkpoints/ray-a4-grpo/global_step_10", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt=10"},
			"global_step_8: beyond the newest 2"},
		{"verl: a tracker naming a save that is gone names the newest earlier one", kinds.Verl,
			// verl removed global_step_6 before writing global_step_8, cut short; the tracker
			// still names 6 and global_step_4 is the newest complete save.
			[]string{"checkpoints/ray-a4-grpo/global_step_4", "checkpoints/ray-a4-grpo/global_step_8", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt=6"},
			[]string{"checkpoints/ray-a4-grpo/global_step_4", "checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt=4"},
			"which named step 6, whose directory is gone, with step 4"},
		{"verl: an empty tracker with no save is removed", kinds.Verl,
			[]string{"checkpoints/ray-a4-grpo/latest_checkpointed_iteration.txt="}, nil, "which was empty, with no save to name"},
		{"a first attempt finds nothing to clear", kinds.NeMoRL, nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			r := run()
			r.Layout.Root = t.TempDir()
			stageModel(t, r)
			converted, err := filepath.Rel(r.Layout.Root, workloads.NeMoRLConvertedDir(r.Layout, r.TrainingModelDir()))
			require.NoError(t, err)
			for i := range tc.before {
				tc.before[i] = strings.Replace(tc.before[i], "{converted}", converted, 1)
			}
			for i := range tc.after {
				tc.after[i] = strings.Replace(tc.after[i], "{converted}", converted, 1)
			}
			create := func(p string) {
				name, content, isFile := strings.Cut(p, "=")
				full := filepath.Join(r.Layout.Root, name)
				if isFile {
					require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
					require.NoError(t, os.WriteFile(full, []byte(content+"\n"), 0o644))
				} else {
					require.NoError(t, os.MkdirAll(full, 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(full, "data"), []byte("x"), 0o644))
				}
			}
			for _, p := range tc.before {
				create(p)
			}
			res := clitest.Run(t, nil, bash, "-c", onHead(t, workloads.Command(tc.framework, r, r.Layout.Root, []string{"true"})))
			require.Equal(t, 0, res.Code, res.Stderr)
			res.Stdout = strings.Replace(res.Stdout, "gke-rl run ray-a4-grpo: attempt 1 of 1\n", "", 1)
			res.Stdout = regexp.MustCompile(`gke-rl run ray-a4-grpo: copied the model files .*\n`).ReplaceAllString(res.Stdout, "")
			// What the optimizer's record says of a checkpoint made before it (optimizer_test.go).
			res.Stdout = regexp.MustCompile(`gke-rl run ray-a4-grpo: no record of the optimizer settings .*\n`).ReplaceAllString(res.Stdout, "")
			for _, p := range append(slices.Clone(tc.before), tc.after...) {
				name, _, _ := strings.Cut(p, "=")
				_, err := os.Stat(filepath.Join(r.Layout.Root, name))
				kept := slices.ContainsFunc(tc.after, func(a string) bool { n, _, _ := strings.Cut(a, "="); return n == name })
				assert.Equal(t, kept, err == nil, "%s exists", name)
			}
			for _, p := range tc.after {
				if name, content, isFile := strings.Cut(p, "="); isFile {
					got, err := os.ReadFile(filepath.Join(r.Layout.Root, name))
					require.NoError(t, err)
					assert.Equal(t, content+"\n", string(got), name)
				}
			}
			if tc.log != "" {
				assert.Contains(t, res.Stdout, tc.log)
			} else {
				assert.Empty(t, res.Stdout)
			}
			assert.DirExists(t, r.Layout.Checkpoints())
		})
	}
}

// The operations guide's verl reward sample is a cut of the line verl's quick start documents
// (testdata/recorded/verl-quickstart-step0.txt): each field it shows is in that line.
func TestVerlRewardSampleIsRecorded(t *testing.T) {
	recorded, err := os.ReadFile("../testdata/recorded/verl-quickstart-step0.txt")
	require.NoError(t, err)
	guide, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	for _, field := range []string{"step:0", "critic/score/mean:0.004", "critic/score/max:1.000", "critic/score/min:0.000", "critic/rewards/mean:0.004"} {
		assert.True(t, strings.Contains(string(recorded), field), "%s is in the recorded line", field)
		assert.True(t, strings.Contains(string(guide), field), "the operations guide shows %s", field)
	}
}

// The data preparation mounts Layout.PrepDirs alone: every directory any step of either
// framework fills, sizes or marks complete lies in one of them (a step writing elsewhere would
// write into the container and lose it), and none is the checkpoints'.
func TestPrepDirsHoldEveryStep(t *testing.T) {
	r := run()
	dirs := r.Layout.PrepDirs()
	assert.NotContains(t, dirs, strings.TrimSuffix(r.Layout.CheckpointsPrefix(), "/"))
	under := func(p string) bool {
		for _, d := range dirs {
			if strings.HasPrefix(p, path.Join(r.Layout.Root, d)+"/") {
				return true
			}
		}
		return false
	}
	var steps []workloads.PrepStep
	for dataset := range workloads.NeMoRLDatasetSources {
		r.Dataset = dataset
		steps = append(steps, workloads.NeMoRLPrepSteps(r)...)
	}
	for dataset := range workloads.VerlDatasetSources {
		r.Dataset = dataset
		steps = append(steps, workloads.VerlPrepSteps(r)...)
	}
	require.NotEmpty(t, steps)
	for _, s := range steps {
		for _, p := range append([]string{s.Dir, workloads.CompleteMarker(s.Dir)}, s.SizeOf...) {
			assert.True(t, under(p), "%s: %s is outside the preparation's mounts %v", s.Name, p, dirs)
		}
	}
	assert.True(t, under(r.Layout.HFHome()+"/hub"), "HF_HOME")
}
