package infra

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/cluster"
	"gke-rl/gate"
	"gke-rl/internal/gpunode"
	"gke-rl/internal/kinds"
	"gke-rl/internal/kube"
	"gke-rl/monitoring"
	"gke-rl/network"
	"gke-rl/ray"
	"gke-rl/storage"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// namespacePrefix starts every stack's workload namespace.
const namespacePrefix = "gke-rl"

// WorkloadNamespace is the namespace of a stack's storage claim, Ray cluster, training run and
// tokens' readers, from its cluster name: the cluster name, with "gke-rl-" before it unless it
// starts with "gke-rl" already. Every Workload Identity principal of a project shares one pool
// (<project>.svc.id.goog) and names only the namespace and the service account, so a namespace
// of its own is what keeps two stacks of one project from reading each other's tokens and
// writing each other's buckets. The cluster name is the stack's name in the project: its VPCs,
// secrets and buckets are named after it, and two stacks of one project cannot share it. The
// prefix keeps it clear of the namespaces Kubernetes and GKE reserve (default, kube-*, gke-*
// system namespaces), and within 63 characters (cluster names stop at 40).
func WorkloadNamespace(clusterName string) string {
	if strings.HasPrefix(clusterName, namespacePrefix) {
		return clusterName
	}
	return namespacePrefix + "-" + clusterName
}

// Resolve checks a loaded configuration and derives everything the program will create from it:
// the Blueprint. It is pure (no Pulumi context, no resource, no invoke), so that a configuration
// it rejects registers nothing, and it returns Errors listing every problem at once. now is the
// moment the stack is planned at: the warnings about dates (the maintenance exclusion) compare
// with it.
func Resolve(c *Config, now time.Time) (*Blueprint, error) {
	var errs Errors
	if c.Queued() {
		errs = perExperiment(c, validate)
		if spec, ok := LookupGPU(c.GPU.Type); ok {
			validateJobs(c, spec, &errs)
		}
	} else {
		validate(c, &errs)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	hw, _ := LookupGPU(c.GPU.Type) // validate checked the type
	addrs, err := resolveAddressPlan(c.Network)
	if err != nil {
		return nil, internalError("address plan", err)
	}
	bp := &Blueprint{
		Project: c.Project, Region: c.Region, Zone: c.Zone,
		Namespace: WorkloadNamespace(c.Cluster.Name),
		Hardware:  hw,
		Addresses: addrs,
		NICs:      gpunode.NICs(c.Network.RDMASubnets),
		Networks: network.NetworksArgs{
			Project: c.Project, Region: c.Region, Zone: c.Zone,
			NamePrefix: c.Cluster.Name,
			NodeCIDR:   addrs.Node, PodCIDR: addrs.Pod, ServiceCIDR: addrs.Service,
			GVNICCIDR:   addrs.GVNIC,
			RDMASubnets: addrs.RDMA,
			MTU:         c.Network.MTU,
			// The Lustre instance that an earlier destroy kept holds on to the main VPC.
			AdoptMain: c.Storage.Adopt && c.Storage.Type == kinds.Lustre,
		},
		Tokens: workloads.Tokens{
			HF: c.Tokens.HuggingFace, WandB: c.Tokens.WandB,
			Project: c.Project, Prefix: c.Cluster.Name,
		},
	}
	if c.Queued() {
		// The bucket's bill and the checkpoint outputs take the first experiment's; each
		// experiment has its own deadline (resolveQueuedRun).
		bp.Checkpoint = estimateCheckpoint(c.ForExperiment(c.Jobs[0]))
	} else {
		bp.Checkpoint, bp.Deadline = estimateCheckpoint(c), derivedDeadline(c)
	}
	bp.Volume = volumeUse(c)
	bp.Cluster = resolveCluster(c, bp)
	bp.WorkerSelector, bp.HeadSelector = cluster.NodeSelectors(bp.Cluster.Mode, bp.Cluster.CPUPool, bp.Cluster.GPUPool)
	bp.Storage = resolveStorage(c, bp.Hardware)
	if b := bp.Storage.Bucket; b != nil {
		// The pods that read a token run as its reader, which mounts the bucket too: the W&B
		// token's with the Ray pods' access, the Hugging Face token's with the data
		// preparation's, which stops at the checkpoints.
		if reader := bp.Tokens.ForRay().ServiceAccount; reader != "" {
			b.Readers = []string{reader}
		}
		if reader := bp.Tokens.ForPrep().ServiceAccount; reader != "" {
			b.SupportReaders = []string{reader}
		}
		b.CheckpointsPrefix = workloads.Layout{Root: c.Storage.MountPath}.CheckpointsPrefix()
	}
	bp.Placeholders = placeholders(c)
	if c.Queued() {
		bp.Warnings = perExperiment(c, func(e *Config, warns *Errors) {
			*warns = warnings(e, estimateCheckpoint(e), derivedDeadline(e), now)
		})
	} else {
		bp.Warnings = warnings(c, bp.Checkpoint, bp.Deadline, now)
	}
	if c.Monitoring.Enabled {
		bp.Monitoring = &monitoring.Args{
			Project: c.Project, Cluster: c.Cluster.Name, Namespace: bp.Namespace,
			GPUsPerNode:          hw.GPUsPerNode,
			Spot:                 c.GPU.Provisioning == kinds.Spot,
			Queue:                c.Queued(),
			NotificationChannels: c.Monitoring.NotificationChannels,
		}
		if l := bp.Storage.Lustre; l != nil {
			bp.Monitoring.Lustre = &monitoring.Lustre{InstanceID: storage.LustreInstanceID(l.NamePrefix), ThroughputMBps: bp.Storage.WriteMBps}
		}
	}
	if c.Queued() {
		bp.Run, err = resolveQueuedRun(c, bp)
	} else {
		bp.Run, err = resolveRun(c, bp)
	}
	if err != nil {
		return nil, err
	}
	// The GPU nodes bill for what trains: with a queue, the experiments that run at once.
	bp.Bill = billOf(c, bp)
	if bp.Cluster.CRDFields, err = ray.CRDFields(bp.Run.anyRayJob(), bp.Run.RayCluster); err != nil {
		return nil, internalError("custom resource fields", err)
	}
	return bp, nil
}

// internalError is a failure of the program, not of the configuration: validate should have
// caught whatever caused it.
func internalError(what string, err error) error {
	return fmt.Errorf("internal error: %s of a validated configuration: %w", what, err)
}

func resolveCluster(c *Config, bp *Blueprint) cluster.Spec {
	authorized := make([]netip.Prefix, 0, len(c.Cluster.AuthorizedNetworks))
	for _, cidr := range c.Cluster.AuthorizedNetworks {
		p, _ := parseCIDR(cidr) // validate checked every CIDR
		authorized = append(authorized, p)
	}
	cpuPool, gpuPool := cluster.PoolNames(c.Cluster.Name)
	return cluster.Spec{
		Project: c.Project, Region: c.Region, Zone: c.Zone,
		Name:               c.Cluster.Name,
		Mode:               c.Cluster.Mode,
		NodeServiceAccount: c.Cluster.NodeServiceAccount,
		// In-cluster access for pull-request previews.
		PreviewServiceAccount: c.Cluster.PreviewServiceAccount,
		// In-cluster access for the deploy workflow.
		DeployServiceAccount: c.Cluster.DeployServiceAccount,
		ReleaseChannel:       c.Cluster.ReleaseChannel,
		AuthorizedNetworks:   authorized,
		PodRangeName:         bp.Networks.PodRangeName(),
		ServiceRangeName:     bp.Networks.ServiceRangeName(),
		// The instance listens on GKE's port (6988) exactly when it has GKE support, and the
		// cluster's Lustre CSI driver must then use the legacy port.
		LustreLegacyPort: c.Storage.Type == kinds.Lustre && c.Storage.GKESupport,
		CPUPool: cluster.CPUPoolSpec{Name: cpuPool, MachineType: c.Cluster.CPUMachineType,
			// The Ray head and the data preparation mount Lustre from this pool.
			SecureBoot: c.Storage.Type != kinds.Lustre},
		GPUPool: cluster.GPUPoolSpec{
			Name:             gpuPool,
			MachineType:      bp.Hardware.MachineType,
			Accelerator:      bp.Hardware.Accelerator,
			GPUsPerNode:      bp.Hardware.GPUsPerNode,
			Nodes:            c.GPU.Nodes,
			MinNodes:         c.GPU.MinNodes,
			MaxNodes:         c.GPU.MaxNodes,
			Provisioning:     c.GPU.Provisioning,
			Reservation:      c.GPU.Reservation,
			LocalSSDs:        bp.Hardware.LocalSSDs,
			CompactPlacement: c.GPU.Placement == PlacementCompact,
			Queued:           len(c.Jobs) > 0,
		},
		Namespace:       bp.Namespace,
		NamespaceLabels: workloadNamespaceLabels(c),
		ImageMirror:     imageMirror(c),
		// The tokens' CSI driver.
		SecretManager: c.Tokens.HuggingFace || c.Tokens.WandB,
		Maintenance: cluster.Maintenance{
			DailyStart:      c.Cluster.MaintenanceStart,
			NoUpgradesFrom:  c.Cluster.NoUpgradesFrom,
			NoUpgradesUntil: noUpgradesUntil(c.Cluster.NoUpgradesUntil),
		},
	}
}

// workloadNamespaceLabels mark a namespace whose experiments wait in the queue: the program's
// Kueue calls its webhooks for pods and jobs only there (queue.NamespaceLabel).
func workloadNamespaceLabels(c *Config) map[string]string {
	if len(c.Jobs) == 0 {
		return nil
	}
	return map[string]string{queue.NamespaceLabel: queue.NamespaceLabelValue}
}

func noUpgradesUntil(v string) string {
	if v == NoUpgradesNone {
		return ""
	}
	return v
}

func resolveStorage(c *Config, hw GPUSpec) StoragePlan {
	s := c.Storage
	plan := StoragePlan{Type: s.Type, WriteMBps: storageWriteMBps(c)}
	if s.Type == kinds.GCSFuse {
		plan.Bucket = &storage.BucketSpec{Project: c.Project, Region: c.Region, Name: s.Bucket, NamePrefix: c.Cluster.Name, Protect: s.Protect, Adopt: s.Adopt,
			// Half of a GPU node's local SSDs: the file cache lives in the FUSE sidecar's
			// ephemeral storage, and an unbounded one would fill the node.
			FileCacheMiB: hw.LocalSSDs * LocalSSDGiB * 1024 / 2}
		plan.Volume = storage.BucketVolume(s.MountPath)
		return plan
	}
	plan.Lustre = &storage.LustreSpec{
		Project: c.Project, Zone: c.Zone, NamePrefix: c.Cluster.Name,
		PSAPrefixLength:      c.Network.PSAPrefixLength,
		CapacityGiB:          s.CapacityGiB,
		ThroughputMBpsPerTiB: s.Throughput,
		Filesystem:           s.Filesystem,
		GKESupport:           s.GKESupport,
		Protect:              s.Protect,
		Adopt:                s.Adopt,
	}
	plan.Volume = storage.LustreVolume(s.MountPath)
	return plan
}

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
	}
	// Each group of pods mounts only the token it reads (workloads.Tokens.ForRay, ForPrep).
	rayTokens := bp.Tokens.ForRay()
	env := append(slices.Clone(rayTokens.Env), workloads.HFEnv(plan.Layout)...)
	pods := ray.SpecArgs{
		Image:      pulledImage(release.Image, bp.Cluster.ImageMirror),
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
		Model:                c.Job.Model,
		Revisions:            c.Job.Revisions,
		ModelBillions:        plan.Hub.ModelBillions,
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
		errs.Add(gpuCountSetter(c, p), "%s", p.Message)
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

// frameworkRelease is the framework's pinned image and Ray version, or `ray.image` and
// `ray.version`.
func frameworkRelease(c *Config) workloads.Release {
	release := workloads.Releases[c.Framework]
	if c.Ray.Image != "" {
		release.Image = c.Ray.Image
	}
	if c.Ray.Version != "" {
		release.RayVersion = c.Ray.Version
	}
	return release
}

// imageMirror is the framework image's Artifact Registry mirror (`ray.mirror`), nil when it is
// off or the image is in a registry the program does not mirror.
func imageMirror(c *Config) *cluster.ImageMirror {
	if !c.Ray.Mirror {
		return nil
	}
	m, ok := cluster.MirrorOf(frameworkRelease(c).Image, c.Project, c.Region, c.Cluster.Name)
	if !ok {
		return nil
	}
	return &m
}

// pulledImage is the image as nodes pull it: through the mirror when there is one.
func pulledImage(image string, m *cluster.ImageMirror) string {
	if m != nil {
		return m.Image
	}
	return image
}

// runningAs is the shared volume as pods that run as account use it (the readers of a token:
// workloads.PodTokens.ServiceAccount); an empty account keeps the volume's.
func runningAs(v kube.SharedVolume, account string) kube.SharedVolume {
	if account != "" {
		v.ServiceAccountName = account
	}
	return v
}

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
		if n := queue.PodSets(x.RayJob); n > queue.MaxPodSets {
			errs.Add(KeyJobs+"."+j.Name, "the RayJob has %d pod sets, more than Kueue's %d (its head, worker groups and submitter each count); allowed: at most %d worker groups", n, queue.MaxPodSets, queue.MaxPodSets-2)
		}
		x.Prep, x.MemoryEstimate, x.Hub, x.Deadline = run.Prep, run.MemoryEstimate, run.Hub, ebp.Deadline
		x.Settings = experimentSettings(j, e, run.Settings)
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
	plan.Queue = &QueuePlan{Name: args.Name, Objects: queue.Objects(args), GPUs: args.GPUs, InstallEnv: queue.InstallEnv(bp.Namespace)}
	return plan, nil
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

// gpuCountSetter is the key to name for a framework's refusal: its origin, unless the refusal
// is about how the batches split over the GPUs and the stack set the node count, not the
// origin's key (`jobs.a.nodes=3` under smoke's default batches): then the node count, which
// experimentError names as the entry's own when it sets it.
func gpuCountSetter(c *Config, p workloads.Problem) string {
	switch {
	case !strings.Contains(p.Message, " GPUs"):
		return p.Origin
	case c.Job.own["jobs.nodes"] && !c.Job.own[p.Origin]:
		// The experiment's own node count against batches it takes from job.
		return "gpu.nodes"
	case c.explicit["gpu.nodes"] && !c.explicit[p.Origin]:
		return "gpu.nodes"
	}
	return p.Origin
}
