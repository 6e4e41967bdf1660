package workloads

import (
	_ "embed"
	"fmt"
	"path"

	"al.essio.dev/pkg/shellescape"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/internal/kinds"
)

//go:embed run.sh
var runSteps string

// trainedLibrary is trained.sh: the finished run's record, which run.sh writes and reads and
// launch.sh reads.
//
//go:embed trained.sh
var trainedLibrary string

// runScript is run.sh with trained.sh's functions.
var runScript = withLibrary(runSteps, trainedLibrary)

//go:embed reward.py
var rewardModule string

// The run's script reaches the Ray pods as a file of a ConfigMap, not inlined in the entrypoint:
// Ray shows every job's entrypoint (`ray job list`, the dashboard) and stores it with the job,
// and run.sh with its comments is some 7 KB. The entrypoint stays a short command that names it.
const (
	// RunScriptConfigMap holds run.sh (key RunScriptKey) in the workload namespace.
	RunScriptConfigMap = "gke-rl-run-script"
	RunScriptKey       = "run.sh"
	// RewardKey is verl's reward module (reward.py) in the same ConfigMap: the program's
	// choice of scorer, which only `pulumi up` writes (VerlReward says why).
	RewardKey = "reward.py"
	// RunScriptDir is where the Ray pods mount it, read-only.
	RunScriptDir    = "/etc/gke-rl"
	runScriptVolume = "run-script"
)

// RunScriptPath is run.sh's path on the Ray pods.
var RunScriptPath = path.Join(RunScriptDir, RunScriptKey)

// RewardPath is the reward module's path on the Ray pods.
var RewardPath = path.Join(RunScriptDir, RewardKey)

// RunScript is run.sh, what RunScriptPath holds.
func RunScript() string { return runScript }

// RewardModule is reward.py, what RewardPath holds.
func RewardModule() string { return rewardModule }

// RunScriptObject is the ConfigMap that holds run.sh and verl's reward module. A new release of the script updates it in
// place: the kubelet swaps the mounted file atomically, so an attempt that is running keeps
// reading the script it started with, and the next attempt runs the new one.
func RunScriptObject(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: RunScriptConfigMap, Namespace: namespace},
		Data:       map[string]string{RunScriptKey: runScript, RewardKey: rewardModule},
	}
}

// RunScriptVolume and RunScriptMount put RunScriptObject's file at RunScriptPath, read-only.
func RunScriptVolume() corev1.Volume {
	return corev1.Volume{Name: runScriptVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: RunScriptConfigMap},
		DefaultMode:          ptr.To(int32(0o444)),
	}}}
}

// RunScriptMount mounts RunScriptVolume at RunScriptDir.
func RunScriptMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: runScriptVolume, MountPath: RunScriptDir, ReadOnly: true}
}

// Retry pauses of run.sh between a failed attempt and the next, on the long-lived cluster.
const (
	// RetryPauseSeconds lets Ray notice a lost node before the retry counts the GPUs (Ray's
	// GCS marks a node dead after its health checks fail, some tens of seconds).
	RetryPauseSeconds = 120
	// RetryGPUWaitSeconds is how long a retry waits for the cluster's GPUs: a GKE auto-repair
	// or a host maintenance event re-creates the node and KubeRay its worker pod.
	RetryGPUWaitSeconds = 2 * 3600
	// RetryPollSeconds is how often it looks.
	RetryPollSeconds = 30
)

// Command is the entrypoint of a run: run.sh (the file at RunScriptPath) with its values, then
// the framework's command line. It is one list of words with no shell operator, quoted for bash,
// which alone reads it: the submitter hands it to Ray encoded (submit.sh), so Ray's `/bin/sh -c`
// on the head expands nothing of it.
func Command(f kinds.Framework, r Run, workdir string, argv []string) string {
	attempts := max(r.Attempts, 1)
	env := []string{
		"EXPERIMENT=" + r.Layout.Run,
		"FRAMEWORK=" + string(f),
		"CHECKPOINT_DIR=" + r.Layout.Checkpoints(),
		"KEEP_CHECKPOINTS=" + fmt.Sprint(r.KeepCheckpoints),
		"WORKDIR=" + workdir,
		"ATTEMPTS=" + fmt.Sprint(attempts),
		"GPUS=" + fmt.Sprint(r.Nodes*r.GPUsPerNode),
		"GPU_WAIT_SECONDS=" + fmt.Sprint(RetryGPUWaitSeconds),
		"PAUSE_SECONDS=" + fmt.Sprint(RetryPauseSeconds),
		"POLL_SECONDS=" + fmt.Sprint(RetryPollSeconds),
		"RUN_DEADLINE_SECONDS=" + fmt.Sprint(r.DeadlineSeconds),
		// What the run trains to: a finished run records it, and a later RayJob of the same
		// experiment trains only if it grew.
		fmt.Sprintf("BUDGET=%d %d", r.MaxSteps, r.Epochs),
		// The data preparation's download, and the checked copy the framework loads.
		"MODEL_SOURCE=" + r.ModelDir(),
		"MODEL_DIR=" + r.TrainingModelDir(),
		// The settings a checkpoint's optimizer state holds: a change is applied or refused
		// when the run resumes (optimizer.go).
		"OPTIMIZER=" + OptimizerSettings(f, Overrides(f, r)),
	}
	if f == kinds.NeMoRL {
		env = append(env, "NRL_MEGATRON_CHECKPOINT_DIR="+NeMoRLConversionDir(r.Layout),
			"CONVERTED_DIR="+NeMoRLConvertedDir(r.Layout, r.TrainingModelDir()))
	}
	if f == kinds.Verl && r.ResumeFrom != "" {
		env = append(env, "RESUME_FROM="+r.Layout.Of(r.ResumeFrom).Checkpoints())
	}
	words := append([]string{"env"}, env...)
	// `bash FILE ARGS...`: ARGS are the script's "$@".
	words = append(words, "bash", RunScriptPath)
	return shellescape.QuoteCommand(append(words, argv...))
}
