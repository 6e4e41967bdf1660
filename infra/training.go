package infra

import (
	"fmt"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/cluster"
	"gke-rl/network"
	"gke-rl/ray"
	"gke-rl/storage"
	"gke-rl/workloads"
)

// Release is the image and Ray version the stack runs: `ray.image` and `ray.version` when
// set, the framework's pinned release otherwise.
func (c *Config) Release() workloads.Release {
	r := workloads.Releases[workloads.Framework(c.Framework)]
	if c.Ray.Image != "" {
		r.Image = c.Ray.Image
	}
	if c.Ray.Version != "" {
		r.RayVersion = c.Ray.Version
	}
	return r
}

// JobOwnsCluster reports whether the run brings its own Ray cluster: on spot and flex-start
// capacity a preemption then costs one retry on a fresh cluster, resuming from the newest
// checkpoint. On reserved and on-demand capacity the run shares the long-lived RayCluster.
func (c *Config) JobOwnsCluster() bool {
	return c.Job.Enabled && (c.GPU.Provisioning == ProvisioningSpot || c.GPU.Provisioning == ProvisioningFlexStart)
}

// JobName is the RayJob's name; it also names the run's checkpoint directory.
func (c *Config) JobName() string { return c.Cluster.Name + "-grpo" }

// Run is the GRPO run's typed options.
func (c *Config) Run() workloads.Run {
	return workloads.Run{
		Model:                c.Job.Model,
		Dataset:              c.Job.Dataset,
		Recipe:               c.Job.Recipe,
		Nodes:                c.GPU.Nodes,
		GPUsPerNode:          c.GPUSpec().GPUsPerNode,
		MaxSteps:             c.Job.MaxSteps,
		Epochs:               c.Job.Epochs,
		PromptsPerStep:       c.Job.PromptsPerStep,
		GenerationsPerPrompt: c.Job.GenerationsPerPrompt,
		CheckpointPeriod:     c.Job.CheckpointPeriod,
		KeepCheckpoints:      c.Job.KeepCheckpoints,
		WandB:                c.WandbAPIKey.IsSet(),
		Layout:               workloads.Layout{Root: c.Storage.MountPath, Run: c.JobName()},
		Extra:                c.Job.Args,
	}
}

// rayClusterArgs are the Ray pods' settings for this stack.
func (c *Config) rayClusterArgs(gke *cluster.Cluster, podNetworks []string, vol storage.Volume, env []corev1.EnvVar) ray.ClusterArgs {
	spec := c.GPUSpec()
	release := c.Release()
	return ray.ClusterArgs{
		Image:      release.Image,
		RayVersion: release.RayVersion,
		Workers:    c.GPU.Nodes,
		GPU: ray.GPU{
			Accelerator:     spec.Accelerator,
			GPUsPerNode:     spec.GPUsPerNode,
			CPUs:            spec.RayWorkerCPUs,
			MemoryGiB:       spec.RayWorkerMemoryGiB,
			SharedMemoryGiB: SharedMemoryGiB,
			NCCLTunerConfig: spec.NCCLTunerConfig,
		},
		WorkerNodeSelector: gke.GPUNodeSelector,
		HeadNodeSelector:   gke.HeadNodeSelector,
		PodNetworks:        podNetworks,
		Storage:            vol.SharedVolume,
		Env:                env,
	}
}

// deployTraining registers the tokens Secret, the long-lived RayCluster when one is wanted and
// the GRPO run, and returns their stack outputs. Ray objects wait for what their pods use: the
// claim, the network objects and the Secret.
func deployTraining(ctx *pulumi.Context, cfg *Config, gke *cluster.Cluster, mapping *network.Mapping, shared storage.Shared) (pulumi.Map, error) {
	tokens := workloads.Tokens{
		HF: cfg.HFToken.Output(), HasHF: cfg.HFToken.IsSet(),
		WandB: cfg.WandbAPIKey.Output(), HasWandB: cfg.WandbAPIKey.IsSet(),
	}
	secret, err := workloads.NewTokensSecret(ctx, "tokens", tokens, gke.Namespace, gke.InClusterOptions()...)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	vol := shared.Volume()
	ready := append(slices.Clone(vol.Ready), mapping.Objects...)
	if secret != nil {
		ready = append(ready, secret)
	}
	inCluster := gke.InClusterOptions(pulumi.DependsOn(ready))

	run := cfg.Run()
	env := append(tokens.Env(), corev1.EnvVar{Name: "HF_HOME", Value: run.Layout.HFHome()})
	clusterArgs := cfg.rayClusterArgs(gke, mapping.Names, vol, env)
	ns := WorkloadNamespace
	outputs := pulumi.Map{"checkpointDir": pulumi.String(run.Layout.Checkpoints())}

	var longLived *ray.Cluster
	if !cfg.JobOwnsCluster() {
		longLived, err = ray.NewCluster(ctx, "ray", &ray.RayClusterArgs{
			Name: cfg.Cluster.Name, Namespace: ns, NamespaceInput: gke.Namespace,
			Spec: clusterArgs, InCluster: inCluster,
		})
		if err != nil {
			return nil, fmt.Errorf("ray cluster: %w", err)
		}
		outputs["rayCluster"] = pulumi.String(longLived.Name)
		outputs["rayDashboard"] = dashboardOutput(longLived.Dashboard)
		outputs["rayJobSubmit"] = pulumi.String("ray job submit --address http://localhost:8265 -- python -c 'import ray; ray.init(); print(ray.cluster_resources())'")
	}
	if !cfg.Job.Enabled {
		return outputs, nil
	}

	jobArgs := workloads.JobArgs{
		Name: cfg.JobName(), Namespace: ns,
		BackoffLimit:          cfg.Job.BackoffLimit,
		ActiveDeadlineSeconds: cfg.Job.ActiveDeadlineSeconds,
	}
	var prep *batchv1.Job
	switch workloads.Framework(cfg.Framework) {
	case workloads.Verl:
		jobArgs.Entrypoint = workloads.VerlEntrypoint(run)
		jobArgs.Env = map[string]string{"PYTHONPATH": run.Layout.VerlSource()}
		prep = verlPrepJob(cfg, run, clusterArgs, env)
	default:
		jobArgs.Entrypoint = workloads.NeMoRLEntrypoint(run)
	}
	if cfg.JobOwnsCluster() {
		spec := ray.ClusterSpec(clusterArgs)
		jobArgs.OwnCluster = &spec
	} else {
		jobArgs.ClusterName = longLived.Name
		// The job must not start before its cluster exists.
		inCluster = append(slices.Clone(inCluster), pulumi.DependsOn([]pulumi.Resource{longLived.RayCluster}))
	}
	job, err := workloads.RayJob(jobArgs)
	if err != nil {
		return nil, err
	}
	if err := ray.ValidateJob(job); err != nil {
		return nil, err
	}
	grpoArgs := &workloads.GRPOArgs{Job: job, Prep: prep, NamespaceInput: gke.Namespace, InCluster: inCluster}
	if _, err := workloads.NewGRPO(ctx, "grpo", grpoArgs); err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}

	follow := fmt.Sprintf("kubectl -n %s get rayjob %s -w", ns, job.Name)
	outputs["rayJob"] = pulumi.String(job.Name)
	outputs["rayJobStatus"] = pulumi.String(follow)
	outputs["rayJobLogs"] = pulumi.String(fmt.Sprintf("kubectl -n %s logs -f job/%s", ns, job.Name))
	if cfg.JobOwnsCluster() {
		// KubeRay names the job's own cluster at run time; the command looks the name up.
		ownCluster := fmt.Sprintf("$(kubectl -n %s get rayjob %s -o jsonpath='{.status.rayClusterName}')", ns, job.Name)
		outputs["rayDashboard"] = dashboardOutput(ray.PortForward(ns, ownCluster))
	}
	return outputs, nil
}

// dashboardOutput is the `rayDashboard` stack output: the port-forward and where to look next.
func dashboardOutput(portForward string) pulumi.String {
	return pulumi.String(fmt.Sprintf("%s  # then open http://localhost:%d", portForward, ray.DashboardPort))
}

// verlPrepJob is verl's one-time data preparation, on the head's CPU nodes with the Ray pods'
// storage, service account and environment.
func verlPrepJob(cfg *Config, run workloads.Run, pods ray.ClusterArgs, env []corev1.EnvVar) *batchv1.Job {
	return workloads.PrepJob(workloads.PrepJobArgs{
		Name: cfg.Cluster.Name + "-data-prep", Namespace: WorkloadNamespace,
		Image:        pods.Image,
		Script:       workloads.PrepScript(workloads.VerlPrepSteps(run)),
		NodeSelector: pods.HeadNodeSelector,
		Storage:      pods.Storage,
		Env:          env,
	})
}
