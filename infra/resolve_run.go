package infra

import (
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/gate"
	"gke-rl/internal/kinds"
	"gke-rl/internal/kube"
	"gke-rl/ray"
	"gke-rl/workloads"
)

// What Resolve derives for the run: the Ray cluster, the gate, the training job.

// resolveRun builds the Ray objects and runs KubeRay's own validation on them.
func resolveRun(c *Config, bp *Blueprint) (RunPlan, error) {
	release := frameworkRelease(c)
	plan := RunPlan{
		Mode:      queueMode(c),
		Framework: c.Framework,
		Release:   release,
		// The experiment names its checkpoint directory: the same on every retry, another for
		// each experiment (experiment.go).
		Layout: workloads.Layout{Root: c.Storage.MountPath, Run: ExperimentName(c)},
	}
	if c.Job.Enabled {
		billions, _ := modelParameters(c)
		sizeKey := "job.model"
		if c.Job.ModelSize != "" {
			sizeKey = "job.modelSize"
		}
		plan.Hub = HubDownloads{
			Model: c.Job.Model, ModelBillions: billions / 1e9, SizeKey: sizeKey,
			Datasets:  workloads.HubDatasets(c.Framework, c.Job.Dataset),
			Revisions: c.Job.Revisions, Token: c.Tokens.HuggingFace,
		}
		if given := c.Job.Shape(); given != nil {
			plan.Hub.Shape, plan.Hub.ShapeKey = *given, "job.modelShape"
		} else if known, ok := workloads.KnownShape(c.Job.Model); ok {
			plan.Hub.Shape = known
		}
	}
	// Each group of pods mounts only the token it reads (workloads.Tokens.ForRay, ForPrep).
	rayTokens := bp.Tokens.ForRay()
	env := append(slices.Clone(rayTokens.Env), workloads.HFEnv(plan.Layout)...)
	pods := ray.SpecArgs{
		Image:      pulledImage(c, release.Image, bp.Cluster.ImageMirror),
		RayVersion: release.RayVersion,
		Workers:    c.GPU.Nodes,
		GPU: ray.GPU{
			Accelerator:     bp.Hardware.Accelerator,
			GPUsPerNode:     bp.Hardware.GPUsPerNode,
			CPUs:            bp.Hardware.RayWorkerCPUs,
			MemoryGiB:       bp.Hardware.RayWorkerMemoryGiB,
			SharedMemoryGiB: SharedMemoryGiB,
			NCCLTunerConfig: bp.Hardware.NCCLTunerConfig,
		},
		WorkerNodeSelector: bp.WorkerSelector,
		HeadNodeSelector:   bp.HeadSelector,
		NICs:               bp.NICs,
		Storage:            runningAs(bp.Storage.Volume, rayTokens.ServiceAccount),
		HeadRayCPUs:        workloads.HeadRayCPUs(c.Framework),
		// Offline on the Ray pods only: the data preparation is what downloads.
		Env: slices.Concat(env, workloads.OfflineEnv()),
		// run.sh, which the entrypoint runs on the head, from its ConfigMap; the token the Ray
		// pods read.
		Volumes: append([]corev1.Volume{workloads.RunScriptVolume()}, rayTokens.Volumes...),
		Mounts:  append([]corev1.VolumeMount{workloads.RunScriptMount()}, rayTokens.Mounts...),
	}

	if c.Gate.Enabled {
		plan.Gate = resolveGate(c, bp)
	}
	var errs Errors
	if plan.Mode.HasLongLivedCluster() {
		plan.RayCluster = ray.RayClusterObject(c.Cluster.Name, bp.Namespace, ray.ClusterSpec(pods))
		if err := ray.ValidateCluster(plan.RayCluster); err != nil {
			errs.Add(KeyRay, "KubeRay's validation rejects the long-lived cluster: %v", err)
		}
	}
	if plan.Mode.HasJob() {
		job, prep, memory, settings, err := resolveJob(c, bp, plan, pods)
		if err != nil {
			return RunPlan{}, err
		}
		plan.RayJob, plan.Prep, plan.MemoryEstimate, plan.Settings = job, prep, memory, settings
		if !c.Queued() {
			plan.RunSettings = experimentSettings(c.Job, c, settings)
		}
		if err := ray.ValidateJob(job); err != nil {
			errs.Add(KeyJob, "KubeRay's validation rejects the training run: %v", err)
		}
	}
	return plan, errs.Err()
}

// resolveGate builds the post-deploy gate: GPU health and NCCL between two GPU nodes, and the
// shared volume from a GPU node.
func resolveGate(c *Config, bp *Blueprint) *GatePlan {
	name := c.Cluster.Name + "-gate"
	if c.Gate.RunID != "" {
		// New names: Pulumi creates the new Jobs and deletes the old ones, so the gate runs again.
		name += "-" + c.Gate.RunID
	}
	args := gate.Args{
		Name: name, Namespace: bp.Namespace,
		GPUsPerNode:         bp.Hardware.GPUsPerNode,
		MinBusBandwidthGBps: c.Gate.MinBusBandwidthGBps,
		StorageMiB:          c.Gate.StorageGiB * 1024,
		CapacityWaitSeconds: c.Gate.CapacityWaitMinutes * 60,
		ExpectedMBps:        int(bp.Storage.WriteMBps),
		NodeSelector:        bp.WorkerSelector,
		NICs:                bp.NICs,
		// The gates do not train: they run as the account whose access stops at the checkpoints.
		Storage: bp.Storage.Volume.Supporting(),
	}
	// Every GPU node: each checks its GPUs, and all_gather spans them all, so that a node with a
	// broken GPU or NIC fails the gate before the run starts on it. One node checks its GPUs.
	args.NCCLNodes = c.GPU.Nodes
	return &GatePlan{NCCL: gate.NCCLJob(args), Storage: gate.StorageJob(args)}
}

// resolveJob builds the RayJob of the run and its data preparation, and estimates its memory
// ("" when the model's size is unknown).
func resolveJob(c *Config, bp *Blueprint, plan RunPlan, pods ray.SpecArgs) (*rayv1.RayJob, *batchv1.Job, string, []workloads.Override, error) {
	run := workloads.Run{
		Release:              c.Job.FrameworkRelease,
		Model:                c.Job.Model,
		Revisions:            c.Job.Revisions,
		ModelBillions:        plan.Hub.ModelBillions,
		Shape:                c.Job.Shape(),
		Dataset:              c.Job.Dataset,
		Recipe:               c.Job.Recipe,
		Nodes:                c.GPU.Nodes,
		GPUsPerNode:          bp.Hardware.GPUsPerNode,
		GPUMemoryGB:          bp.Hardware.GPUMemoryGB,
		MaxSteps:             c.Job.MaxSteps,
		Epochs:               c.Job.Epochs,
		PromptsPerStep:       c.Job.PromptsPerStep,
		GenerationsPerPrompt: c.Job.GenerationsPerPrompt,
		CheckpointPeriod:     c.Job.CheckpointPeriod,
		KeepCheckpoints:      c.Job.KeepCheckpoints,
		WandB:                c.Tokens.WandB,
		Layout:               plan.Layout,
		Extra:                c.Job.Args,
		Attempts:             1,
		ResumeFrom:           c.Job.ResumeFrom,
		Tuning:               c.Job.Tuning,
	}
	if plan.Mode != kinds.OwnCluster {
		// KubeRay cannot retry a job on a shared cluster: the entrypoint does, on the same one.
		run.Attempts = c.Job.BackoffLimit + 1
	}
	args := workloads.JobArgs{
		Name:           plan.Layout.Run,
		Namespace:      bp.Namespace,
		BackoffLimit:   c.Job.BackoffLimit,
		SubmitterImage: pods.Image,
		NodeSelector:   pods.HeadNodeSelector,
		// The submitter reads no token and does not train: it runs as the shared volume's
		// support account, which may read no token and write no checkpoint.
		Storage: bp.Storage.Volume.Supporting(),
	}
	deadline := c.Job.ActiveDeadlineSeconds
	if bp.Deadline != nil {
		deadline = bp.Deadline.Seconds
	}
	if DeadlineScopeOf(plan.Mode) == PerAttempt {
		args.ActiveDeadlineSeconds = deadline
	} else {
		run.DeadlineSeconds = deadline
	}
	var errs Errors
	for _, p := range workloads.CheckRun(c.Framework, run) {
		errs.Add(problemKey(c, p), "%s", p.Message)
	}
	if err := errs.Err(); err != nil {
		return nil, nil, "", nil, err
	}
	// A model that cannot fit fails here, at the plan, and not an hour into the run with CUDA
	// out of memory on nodes already paid for.
	memory := workloads.NodeMemory{GPUGB: bp.Hardware.GPUMemoryGB, HostGiB: bp.Hardware.RayWorkerMemoryGiB, GPUsPerNode: bp.Hardware.GPUsPerNode}
	var estimate string
	if fit, ok := workloads.EstimateFit(c.Framework, run, memory); ok {
		for _, p := range fit.Problems(c.Framework, run, memory, plan.Hub.SizeKey, strings.ToUpper(bp.Hardware.Type), MaxGPUNodes) {
			errs.Add(p.Origin, "%s", p.Message)
		}
		if err := errs.Err(); err != nil {
			return nil, nil, "", nil, err
		}
		estimate = fit.Summary()
		if c.Framework == kinds.NeMoRL {
			estimate += "; recipe " + c.Job.Recipe
		}
	}
	launch := workloads.LaunchOf(c.Framework, run)
	args.Entrypoint, args.RuntimeEnv, args.Verify = launch.Entrypoint, launch.RuntimeEnv, launch.Verify
	// The model and the dataset are staged on CPU nodes before the RayJob asks for GPU
	// workers; on spot and flex-start capacity no GPU node exists meanwhile.
	prepTokens := bp.Tokens.ForPrep()
	steps := launch.PrepSteps
	prepEnv := append(slices.Clone(prepTokens.Env), workloads.HFEnv(plan.Layout)...)
	prepEnv = append(append(prepEnv, launch.PrepEnv...), workloads.XetCacheEnv())
	prep := workloads.PrepJob(workloads.PrepJobArgs{
		Name: prepJobName(c, plan.Layout), Namespace: bp.Namespace,
		Image:        pods.Image,
		Script:       workloads.PrepScript(steps),
		NodeSelector: pods.HeadNodeSelector,
		Storage:      runningAs(bp.Storage.Volume.Supporting(), prepTokens.ServiceAccount),
		Dirs:         plan.Layout.PrepDirs(),
		Env:          prepEnv,
		Volumes:      prepTokens.Volumes,
		Mounts:       prepTokens.Mounts,
	})
	if plan.Mode == kinds.OwnCluster {
		spec := ray.ClusterSpec(pods)
		args.OwnCluster = &spec
	} else {
		args.Cluster = plan.RayCluster
	}
	job, err := workloads.RayJob(args)
	if err != nil {
		return nil, nil, "", nil, internalError("RayJob", err)
	}
	return job, prep, estimate, workloads.Overrides(c.Framework, run), nil
}

// frameworkRelease is the run's release (job.frameworkRelease) with its pinned image and Ray
// version, or `ray.image` and `ray.version`.
func frameworkRelease(c *Config) workloads.Release {
	release := workloads.ReleaseOf(c.Framework, c.Job.FrameworkRelease)
	if c.Ray.Image != "" {
		release.Image = c.Ray.Image
	}
	if c.Ray.Version != "" {
		release.RayVersion = c.Ray.Version
	}
	return release
}

// runningAs is the shared volume as pods that run as account use it (the readers of a token:
// workloads.PodTokens.ServiceAccount); an empty account keeps the volume's.
func runningAs(v kube.SharedVolume, account string) kube.SharedVolume {
	if account != "" {
		v.ServiceAccountName = account
	}
	return v
}

// derivedDeadline is a run's derived deadline (`job`'s or an experiment's), nil when it sets its
// own, trains nothing or its length is unknown.
func derivedDeadline(e *Config) *RunDeadline {
	if !e.Job.Enabled || e.explicit["job.activeDeadlineSeconds"] {
		return nil
	}
	return deriveDeadline(e)
}

// prepJobName is the data preparation Job's name: the stack's, or each experiment's own in a
// queued stack, whose experiments prepare different models and datasets.
func prepJobName(c *Config, l workloads.Layout) string {
	if c.Queued() {
		return l.Run + "-data-prep"
	}
	return c.Cluster.Name + "-data-prep"
}

// problemKey is the key to name a framework's refusal under: among the config keys its check
// reads (Problem.Origins), the first that an experiment's entry sets itself (`jobs.a.nodes=3`
// against the batches it takes from job: experimentError then names the entry's key), else the
// check's own first.
func problemKey(c *Config, p workloads.Problem) string {
	for _, o := range p.Origins {
		own := c.Job.own[o]
		if o == "gpu.nodes" {
			own = c.Job.own["jobs.nodes"]
		}
		if own {
			return o
		}
	}
	return p.Origin
}
