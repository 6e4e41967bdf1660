// Package workloads builds the GRPO training run: the framework's command line from typed
// options (NeMo RL or verl), the one-time data preparation, the Secret Manager secrets that
// carry the Hugging Face and Weights & Biases tokens, and the KubeRay RayJob that runs it all.
package workloads

import (
	"path"

	corev1 "k8s.io/api/core/v1"

	"gke-rl/internal/kinds"
)

// HeadRayCPUs are the CPUs the Ray head must advertise for a framework's startup to finish.
// NeMo RL v0.5.0 builds its worker environments with one {"CPU": 1} bundle on every alive Ray
// node, STRICT_SPREAD, and waits for the placement group without a timeout
// (nemo_rl/utils/venvs.py lines 161-167, create_local_venv_on_each_node, called for every
// worker group whose Python environment is a `uv` command, nemo_rl/distributed/worker_groups.py
// line 446): a head with no CPU makes that group unplaceable and the run waits forever. (v0.7.0
// skips CPU-less nodes, commit a760f1c3c.) One CPU admits that bundle; the head still has no GPU,
// so no training lands on it. verl v0.6.0 places its TaskRunner on a worker: its head
// advertises none.
func HeadRayCPUs(f kinds.Framework) int {
	if f == kinds.NeMoRL {
		return 1
	}
	return 0
}

// OfflineEnv keeps the Ray pods off the Hugging Face Hub once the data preparation has staged
// the model and the datasets: every rank would otherwise resolve them on the Hub at every start
// and retry, through the cluster's one NAT address. A job on the long-lived cluster that needs
// the Hub sets them to 0 in its runtime environment.
func OfflineEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "HF_HUB_OFFLINE", Value: "1"}, {Name: "HF_DATASETS_OFFLINE", Value: "1"}}
}

// ResumeRefusal says why a framework cannot start an experiment from another one's checkpoint,
// or "" when it can (verl: trainer.resume_mode=resume_path, which run.sh gives while the
// experiment has no checkpoint of its own).
func ResumeRefusal(f kinds.Framework) string {
	if f == kinds.NeMoRL {
		// nemo_rl/algorithms/grpo.py setup: CheckpointManager(checkpointing).get_latest_checkpoint_path()
		// reads checkpointing.checkpoint_dir alone; no key of v0.5.0 or v0.7.0 (their
		// checkpointing sections) loads another directory.
		return "NeMo RL (v0.5.0, v0.7.0) resumes only from its own checkpointing.checkpoint_dir (nemo_rl/algorithms/grpo.py, setup: get_latest_checkpoint_path); no key loads another experiment's checkpoint"
	}
	return ""
}

// Launch is how a framework starts a run: what the RayJob submits and ships, what the
// submitter checks first, and how the data preparation stages the model and the datasets.
type Launch struct {
	// Entrypoint is the command the RayJob submits (Command: run.sh, then the framework's).
	Entrypoint string
	// RuntimeEnv is the Ray job's runtime environment: verl ships its checked package to every
	// node with it.
	RuntimeEnv RuntimeEnv
	// Verify is the code on the shared volume the submitter checks before it submits; empty
	// for NeMo RL, whose code is the image's.
	Verify PinnedTree
	// PrepSteps are the data preparation's steps, in order.
	PrepSteps []PrepStep
	// PrepEnv is what the framework adds to the data preparation's environment, besides the
	// token readers' and the Hugging Face cache's.
	PrepEnv []corev1.EnvVar
}

// LaunchOf is the framework's launch of the run.
func LaunchOf(f kinds.Framework, r Run) Launch {
	if f != kinds.Verl {
		return Launch{Entrypoint: NeMoRLEntrypoint(r), PrepSteps: NeMoRLPrepSteps(r)}
	}
	return Launch{
		Entrypoint: VerlEntrypoint(r),
		RuntimeEnv: VerlRuntimeEnv(r),
		Verify:     PinnedTree{Dir: path.Join(r.verlSource(), VerlPackageDir), Tree: r.release(f).Source.PackageTree},
		PrepSteps:  VerlPrepSteps(r),
		// The verl image installs verl and uninstalls it again (verl v0.7.0's
		// docker/Dockerfile.stable.vllm: `pip install ...verl.git@v0.6.0 && pip uninstall -y verl`), and the preparation scripts import
		// verl.utils: they run against the checkout the first step makes, without writing
		// bytecode next to it. The checkout reaches the import path of the checked commands only,
		// through their checked copy (run_verified, prep.sh): on the Job's own PYTHONPATH, a
		// package planted there (huggingface_hub) would run in every step, the downloads that hold
		// the Hugging Face token among them.
		PrepEnv: []corev1.EnvVar{
			{Name: VerifiedPythonPathEnv, Value: r.verlSource()},
			{Name: "PYTHONDONTWRITEBYTECODE", Value: "1"},
		},
	}
}
