package infra

import (
	"errors"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// What Resolve derives for a queue of experiments (jobs).

// queueMode is the run mode of a queued experiment: its own Ray cluster, whatever the capacity.
// Kueue queues a RayJob that brings its cluster; one on a long-lived cluster it leaves unmanaged
// (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/rayjob/rayjob_webhook.go, validateCreate), and
// such a cluster would hold the GPUs the queue hands out.
func queueMode(c *Config) kinds.RunMode {
	if c.Queued() && c.Job.Enabled {
		return kinds.OwnCluster
	}
	return kinds.RunModeOf(c.Job.Enabled, c.GPU.Provisioning)
}

// resolveQueuedRun builds each experiment of `jobs` as resolveRun builds `job`'s run, queued
// (queue.Queued), and the queue's objects, whose GPU quota is the GPU pool at gpu.maxNodes.
func resolveQueuedRun(c *Config, bp *Blueprint) (RunPlan, error) {
	plan := RunPlan{
		Mode: kinds.OwnCluster, Framework: c.Framework, Release: frameworkRelease(c),
		Layout: workloads.Layout{Root: c.Storage.MountPath},
	}
	if c.Gate.Enabled {
		plan.Gate = resolveGate(c, bp)
	}
	args := queue.Args{Name: bp.Namespace, Namespace: bp.Namespace, GPUs: c.GPU.MaxNodes * bp.Hardware.GPUsPerNode, Priorities: map[string]int{}}
	var errs Errors
	runs := map[string]string{}
	for _, j := range c.Jobs {
		runs[j.Name] = QueuedRunName(c.ForExperiment(j))
	}
	for _, j := range c.Jobs {
		e := c.ForExperiment(j)
		// The experiment runs under its run's name; one it starts from is named by its key.
		e.Job.Name = runs[j.Name]
		if from, ok := runs[e.Job.ResumeFrom]; ok {
			e.Job.ResumeFrom = from
		}
		x := ExperimentPlan{Name: j.Name, Priority: j.Priority, Nodes: j.Nodes, GPUs: j.Nodes * bp.Hardware.GPUsPerNode,
			Layout: workloads.Layout{Root: c.Storage.MountPath, Run: runs[j.Name]}}
		if !j.Enabled {
			x.Stopped, x.Start = true, NotStarted
			plan.Experiments = append(plan.Experiments, x)
			continue
		}
		// The gate runs once for the stack, before every experiment.
		e.Gate.Enabled = false
		ebp := *bp
		ebp.Deadline = derivedDeadline(e)
		run, err := resolveRun(e, &ebp)
		if err != nil {
			var fe Errors
			if errors.As(err, &fe) {
				for _, e := range fe {
					errs = append(errs, experimentError(j, e))
				}
				continue
			}
			return RunPlan{}, err
		}
		x.RayJob = queue.Queued(run.RayJob, bp.Namespace, j.Priority)
		checkPodSets(j.Name, x.RayJob, &errs)
		x.Launch, err = launchJob(e, bp, x)
		if err != nil {
			return RunPlan{}, err
		}
		x.Prep, x.MemoryEstimate, x.Hub, x.Deadline = run.Prep, run.MemoryEstimate, run.Hub, ebp.Deadline
		x.Settings = experimentSettings(j, e, run.Settings)
		x.Release = run.Release
		args.Jobs = append(args.Jobs, x.RayJob)
		args.Priorities[x.RayJob.Name] = j.Priority
		plan.Experiments = append(plan.Experiments, x)
	}
	if err := errs.Err(); err != nil {
		return RunPlan{}, err
	}
	checkCPUPool(c, plan.Experiments, args.GPUs, &errs)
	if err := errs.Err(); err != nil {
		return RunPlan{}, err
	}
	order(plan.Experiments, args.GPUs)
	plan.Queue = &QueuePlan{Name: args.Name, Objects: append(queue.Objects(args), queue.Launcher(args)...), GPUs: args.GPUs, InstallEnv: queue.InstallEnv(bp.Namespace)}
	return plan, nil
}

// checkPodSets refuses a RayJob that Kueue could not admit: a workload has at most
// queue.MaxPodSets pod sets. Every RayJob the program builds today has three (ray/spec.go
// makes one worker group); the check keeps a second worker group from reaching Kueue's
// webhook as an unexplained refusal at `up`.
func checkPodSets(name string, job *rayv1.RayJob, errs *Errors) {
	if n := queue.PodSets(job); n > queue.MaxPodSets {
		errs.Add(KeyJobs+"."+name, "the RayJob has %d pod sets, more than Kueue's %d (its head, worker groups and submitter each count); allowed: at most %d worker groups", n, queue.MaxPodSets, queue.MaxPodSets-2)
	}
}

// launchJob is an experiment's launch (workloads.LaunchJob): on the Ray head's node and image,
// running as the launches' account, which reads the experiment's record on the shared volume.
func launchJob(e *Config, bp *Blueprint, x ExperimentPlan) (*batchv1.Job, error) {
	head := x.RayJob.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
	volume := bp.Storage.Volume
	volume.ServiceAccountName = queue.LauncherServiceAccount
	job, err := workloads.LaunchJob(workloads.LaunchJobArgs{
		RayJob: x.RayJob, Experiment: x.Layout.Run, CheckpointDir: x.Layout.Checkpoints(),
		MaxSteps: e.Job.MaxSteps, Epochs: e.Job.Epochs,
		QueueLabel: queue.QueueLabel, Queue: queue.LocalQueueName,
		Image: head.Containers[0].Image, NodeSelector: head.NodeSelector,
		Storage: volume,
	})
	if err != nil {
		return nil, internalError("launch Job", err)
	}
	return job, nil
}

// order says which experiments run as soon as the stack is applied and which wait, as Kueue
// admits them from an empty queue: highest priority first, then in creation order (Pulumi
// creates them in name order), each that fits the GPUs left; BestEffortFIFO lets a smaller
// one past a larger one that does not fit.
func order(xs []ExperimentPlan, gpus int) {
	idx := make([]int, 0, len(xs))
	for i := range xs {
		if !xs[i].Stopped {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return xs[b].Priority - xs[a].Priority })
	free := gpus
	for _, i := range idx {
		if xs[i].GPUs <= free {
			xs[i].Start = StartsAtOnce
			free -= xs[i].GPUs
		} else {
			xs[i].Start = Waits
		}
	}
}
