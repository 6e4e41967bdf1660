package infra

import (
	"fmt"
	"maps"
	"math"
	"path"
	"strings"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/cluster"
	"gke-rl/gate"
	"gke-rl/internal/kinds"
	"gke-rl/internal/kube"
	"gke-rl/monitoring"
	"gke-rl/network"
	"gke-rl/ray"
	"gke-rl/storage"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// Deploy registers every component of a Blueprint and returns the stack outputs. It only wires
// what exists after creation: every other value is in the Blueprint.
func Deploy(ctx *pulumi.Context, bp *Blueprint) (pulumi.Map, error) {
	networks, err := network.NewNetworks(ctx, "networks", &bp.Networks)
	if err != nil {
		return nil, err
	}
	attachments, err := networks.Attach(bp.NICs)
	if err != nil {
		return nil, err
	}
	gpuNetworks := make([]cluster.AdditionalNetwork, len(attachments))
	for i, a := range attachments {
		gpuNetworks[i] = cluster.AdditionalNetwork{Network: a.VPC, Subnetwork: a.Subnetwork}
	}
	gke, err := cluster.NewCluster(ctx, "cluster", &cluster.ClusterArgs{
		Spec:        bp.Cluster,
		Network:     networks.MainNetwork.ID(),
		Subnetwork:  networks.MainSubnet.ID(),
		GPUNetworks: gpuNetworks,
	})
	if err != nil {
		return nil, err
	}
	inCluster := gke.Placement()

	shared, outputs, err := deployStorage(ctx, bp, networks, gke)
	if err != nil {
		return nil, err
	}
	// Custom resources wait until their CRDs are established.
	mapping, err := network.NewMapping(ctx, "network-mapping", &network.MappingArgs{NICs: attachments, Placement: inCluster.WaitingFor(gke.CRDs)})
	if err != nil {
		return nil, err
	}

	podNetworks := pulumi.StringArray{}
	for _, nic := range bp.NICs {
		podNetworks = append(podNetworks, pulumi.String(nic.Name))
	}
	maps.Copy(outputs, pulumi.Map{
		"clusterName":     gke.Cluster.Name,
		"clusterEndpoint": gke.Cluster.Endpoint,
		"kubeconfigCommand": pulumi.Sprintf("gcloud container clusters get-credentials %s --location %s --project %s --dns-endpoint",
			gke.Cluster.Name, bp.Region, bp.Project),
		"podNetworks": podNetworks,
		// The node selector the GPU pods of the program use: a pod of your own on the GPU
		// nodes takes the same (on Autopilot it is what asks GKE for the machines).
		"gpuNodeSelector": pulumi.ToStringMap(bp.WorkerSelector),
		"project":         pulumi.String(bp.Project),
		"region":          pulumi.String(bp.Region),
		"zone":            pulumi.String(bp.Zone),
		"gpuType":         pulumi.String(bp.Hardware.Type),
		"machineType":     pulumi.String(bp.Hardware.MachineType),
		"gpuNodes":        pulumi.Int(bp.Cluster.GPUPool.Nodes),
		"mainNetwork":     networks.MainNetwork.SelfLink,
		"gvnicNetwork":    networks.GVNICNetwork.SelfLink,
		"rdmaNetwork":     networks.RDMANetwork.SelfLink,
		"namespace":       gke.Namespace.Metadata.Name().Elem(),
		// The Ray add-on's logging sends the Ray pods' logs to Cloud Logging.
		"rayLogs": pulumi.String(monitoring.LogsExplorerURL(bp.Project, monitoring.RayLogsFilter(bp.Cluster.Name, bp.Namespace))),
	})
	if bp.Monitoring != nil {
		mon, err := monitoring.New(ctx, "monitoring", *bp.Monitoring)
		if err != nil {
			return nil, fmt.Errorf("monitoring: %w", err)
		}
		outputs["dashboardUrl"] = mon.DashboardURL
	}

	// Ray objects wait for what their pods use: the claim, the network objects and the tokens.
	tokens, err := workloads.NewTokens(ctx, "tokens", &workloads.TokensArgs{
		Tokens:    bp.Tokens,
		Principal: tokenReader(bp),
		Placement: inCluster.WaitingFor(gke.CRDs),
	})
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	// The GPU workloads (the gate, the Ray cluster and the run) also wait for the GPU pool and the
	// RDMA installer on its nodes, so that their deadlines count their own work.
	rayPlacement := inCluster.WaitingFor(append(append(append(shared.Ready(), mapping.Objects...), gke.CRDs), gke.GPUsReady()...)...)
	// The data preparation needs only the volume and the tokens: it does not wait for the
	// network objects, the gate or the Ray cluster.
	prepPlacement := inCluster.WaitingFor(shared.Ready()...)
	if tokens != nil {
		rayPlacement = rayPlacement.WaitingFor(tokens.Ready...)
		prepPlacement = prepPlacement.WaitingFor(tokens.Ready...)
		outputs["tokenCommands"] = tokens.Commands
	}
	if gke.Images != nil {
		// Their image is pulled through the mirror.
		rayPlacement = rayPlacement.WaitingFor(gke.Images)
		prepPlacement = prepPlacement.WaitingFor(gke.Images)
	}
	// The Ray pods mount run.sh, which the run's entrypoint runs on the head.
	script := workloads.RunScriptObject(bp.Namespace)
	runScript, err := k8scorev1.NewConfigMap(ctx, "run-script", &k8scorev1.ConfigMapArgs{
		Metadata: &k8smetav1.ObjectMetaArgs{Name: pulumi.String(script.Name), Namespace: pulumi.String(script.Namespace)},
		Data:     pulumi.ToStringMap(script.Data),
	}, inCluster.Namespaced()...)
	if err != nil {
		return nil, fmt.Errorf("run script: %w", err)
	}
	rayPlacement = rayPlacement.WaitingFor(runScript)
	// The Ray pods and the gate start behind the namespace's NetworkPolicies.
	for _, policy := range ray.IngressPolicies(bp.Namespace) {
		// Each policy's logical name is its own name: ray-head-ingress keeps its URN.
		p, err := kube.NewObject(ctx, policy.Name, policy, inCluster.Namespaced()...)
		if err != nil {
			return nil, fmt.Errorf("network policy %s: %w", policy.Name, err)
		}
		rayPlacement = rayPlacement.WaitingFor(p)
	}
	if g := bp.Run.Gate; g != nil {
		// The Ray cluster and the run start only once the gate has passed; its Jobs hold the
		// GPUs while they run and release them when done.
		checks, err := gate.New(ctx, "gate", &gate.ComponentArgs{
			NCCL: g.NCCL, Storage: g.Storage, Kubeconfig: cluster.Kubeconfig(gke.Cluster), Placement: rayPlacement,
		})
		if err != nil {
			return nil, fmt.Errorf("gate: %w", err)
		}
		rayPlacement = rayPlacement.WaitingFor(checks.Jobs...)
		outputs["gateResults"] = checks.Results
	}
	var training pulumi.Map
	if bp.Run.Queue != nil {
		training, err = deployExperiments(ctx, bp.Run, cluster.Kubeconfig(gke.Cluster), rayPlacement, prepPlacement)
	} else {
		training, err = deployRun(ctx, bp.Run, rayPlacement, prepPlacement)
	}
	if err != nil {
		return nil, err
	}
	if d := bp.Deadline; d != nil {
		outputs["runDeadline"] = pulumi.String(d.Summary())
	}
	maps.Copy(outputs, training)
	return outputs, nil
}

// deployStorage registers the configured storage type and returns it with its stack outputs.
func deployStorage(ctx *pulumi.Context, bp *Blueprint, networks *network.Networks, gke *cluster.Cluster) (storage.Shared, pulumi.Map, error) {
	s := bp.Storage
	outputs := pulumi.Map{
		"storageType":      pulumi.String(string(s.Type)),
		"storageClaim":     pulumi.String(s.Volume.ClaimName),
		"storageMountPath": pulumi.String(s.Volume.MountPath),
		"storageWriteMBps": pulumi.Int(int(s.WriteMBps)),
	}
	if e := bp.Checkpoint; e != nil {
		outputs["checkpointEstimate"] = pulumi.String(e.Summary())
		outputs["checkpointSeconds"] = pulumi.Int(int(math.Ceil(e.Seconds)))
	}
	if u := bp.Volume; u != nil {
		// What each experiment keeps, for the next version's `plan --compare` to count what
		// stays on the volume once an experiment leaves the plan.
		kept := pulumi.Map{}
		for dir, gb := range u.KeptGB {
			kept[dir] = pulumi.Int(int(math.Ceil(gb)))
		}
		outputs["volumeUse"] = pulumi.Map{"capacityGB": pulumi.Int(int(u.CapacityGB)), "peakGB": pulumi.Int(int(math.Ceil(u.PeakGB))), "keptGB": kept}
	}
	if s.Bucket != nil {
		bucket, err := storage.NewBucket(ctx, "storage", &storage.BucketArgs{BucketSpec: *s.Bucket, Placement: gke.Placement()})
		if err != nil {
			return nil, nil, fmt.Errorf("storage: %w", err)
		}
		outputs["bucket"] = bucket.Bucket.Url
		// The checkpoints are already objects of the bucket.
		outputs["checkpointExport"] = pulumi.Sprintf("gcloud storage ls %s%s/", bucket.Bucket.Url, strings.TrimPrefix(bp.Run.Layout.Checkpoints(), s.Volume.MountPath))
		outputs["storageServiceAccount"] = pulumi.String(storage.BucketServiceAccount)
		return bucket, outputs, nil
	}
	lustre, err := storage.NewLustre(ctx, "storage", &storage.LustreArgs{
		LustreSpec:         *s.Lustre,
		Network:            networks.MainNetwork.ID(),
		NodeServiceAccount: gke.NodeEmail,
		Placement:          gke.Placement(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("storage: %w", err)
	}
	outputs["lustreInstance"] = lustre.Instance.Name
	outputs["lustreMountPoint"] = lustre.Instance.MountPoint
	// Checkpoints out of Lustre before a destroy that deletes it: the run's directory, from the
	// file system's root, into a bucket of the user's.
	run := path.Join("/", strings.TrimPrefix(bp.Run.Layout.Checkpoints(), s.Volume.MountPath))
	outputs["checkpointExport"] = pulumi.String(storage.ExportCommand(bp.Project, s.Lustre.Zone, storage.LustreInstanceID(s.Lustre.NamePrefix),
		run, "gs://YOUR_BUCKET"+run+"/"))
	return lustre, outputs, nil
}

// deployRun registers the long-lived RayCluster when the run mode has one and the training run
// when it has one, and returns their stack outputs. The data preparation waits for prepPlacement
// only.
func deployRun(ctx *pulumi.Context, run RunPlan, placement, prepPlacement kube.Placement) (pulumi.Map, error) {
	ns := placement.Namespace
	// The experiment names the checkpoint directory, the RayJob and the W&B run (job.name).
	outputs := pulumi.Map{"experiment": pulumi.String(run.Layout.Run), "checkpointDir": pulumi.String(run.Layout.Checkpoints())}
	if run.RayCluster != nil {
		longLived, err := ray.NewLongLivedCluster(ctx, "ray", &ray.LongLivedClusterArgs{RayCluster: run.RayCluster, Placement: placement})
		if err != nil {
			return nil, fmt.Errorf("ray cluster: %w", err)
		}
		outputs["rayCluster"] = pulumi.String(run.RayCluster.Name)
		outputs["rayDashboard"] = dashboardOutput(ray.PortForward(ns, run.RayCluster.Name))
		outputs["rayJobSubmit"] = pulumi.String("ray job submit --address http://localhost:8265 -- python -c 'import ray; ray.init(); print(ray.cluster_resources())'")
		// A job on the long-lived cluster must not start before the cluster exists.
		placement = placement.WaitingFor(longLived.RayCluster)
	}
	if run.RayJob == nil {
		return outputs, nil
	}
	if _, err := workloads.NewGRPO(ctx, "grpo", &workloads.GRPOArgs{Job: run.RayJob, Prep: run.Prep, Placement: placement, PrepPlacement: prepPlacement}); err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	job := run.RayJob.Name
	outputs["rayJob"] = pulumi.String(job)
	outputs["rayJobStatus"] = pulumi.String(fmt.Sprintf("kubectl -n %s get rayjob %s -w", ns, job))
	outputs["rayJobLogs"] = pulumi.String(ray.JobLogsCommand(ns, job))
	outputs["rayJobAttempts"] = pulumi.String(ray.JobAttemptsCommand(ns, job))
	if run.MemoryEstimate != "" {
		outputs["memoryEstimate"] = pulumi.String(run.MemoryEstimate)
	}
	if run.Mode == kinds.OwnCluster {
		// KubeRay names the job's own cluster at run time; the command looks the name up.
		ownCluster := fmt.Sprintf("$(kubectl -n %s get rayjob %s -o jsonpath='{.status.rayClusterName}')", ns, job)
		outputs["rayDashboard"] = dashboardOutput(ray.PortForward(ns, ownCluster))
	}
	return outputs, nil
}

// deployExperiments registers the queue (Kueue, unless the cluster runs one, and the stack's
// queue objects) and each experiment of `jobs`, queued, and returns their stack outputs. A data
// preparation waits for the earlier ones that write what it writes too (prepShares): those run
// one after another, the others at once, so that a failed one holds back only those.
func deployExperiments(ctx *pulumi.Context, run RunPlan, kubeconfig pulumi.StringInput, placement, prepPlacement kube.Placement) (pulumi.Map, error) {
	ns := placement.Namespace
	q, err := queue.New(ctx, "queue", &queue.ComponentArgs{
		Objects: run.Queue.Objects, InstallEnv: run.Queue.InstallEnv, Kubeconfig: kubeconfig, Placement: placement,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	placement = placement.WaitingFor(q.Objects...)
	experiments := pulumi.Map{}
	// The last preparation registered that writes each shared directory.
	writer := map[string]pulumi.Resource{}
	for _, x := range run.Experiments {
		about := pulumi.Map{
			"priority": pulumi.Int(x.Priority), "gpus": pulumi.Int(x.GPUs),
			"start":         pulumi.String(string(x.Start)),
			"checkpointDir": pulumi.String(x.Layout.Checkpoints()),
		}
		experiments[x.Name] = about
		if x.Stopped {
			continue
		}
		shares := prepShares(run.Framework, x.Hub)
		own := prepPlacement
		for _, w := range earlierWriters(writer, shares) {
			own = own.WaitingFor(w)
		}
		grpo, err := workloads.NewGRPO(ctx, "grpo-"+x.Name, &workloads.GRPOArgs{Job: x.RayJob, Prep: x.Prep, Launch: x.Launch, Placement: placement, PrepPlacement: own, Queued: true})
		if err != nil {
			return nil, fmt.Errorf("experiment %s: %w", x.Name, err)
		}
		if grpo.Prep != nil {
			for _, k := range shares {
				writer[k] = grpo.Prep
			}
		}
		about["rayJob"] = pulumi.String(x.RayJob.Name)
		about["status"] = pulumi.String(ray.JobAttemptsCommand(ns, x.RayJob.Name))
		about["logs"] = pulumi.String(ray.JobLogsCommand(ns, x.RayJob.Name))
		if x.MemoryEstimate != "" {
			about["memoryEstimate"] = pulumi.String(x.MemoryEstimate)
		}
		if x.Deadline != nil {
			about["runDeadline"] = pulumi.String(x.Deadline.Summary())
		}
	}
	return pulumi.Map{
		"experiments": experiments,
		"queue":       pulumi.String(queue.StatusCommand(ns)),
		"queueQuota":  pulumi.String(queue.QuotaCommand(run.Queue.Name)),
	}, nil
}

// dashboardOutput is the `rayDashboard` stack output: the port-forward and where to look next.
func dashboardOutput(portForward string) pulumi.String {
	return pulumi.String(fmt.Sprintf("%s  # then `ray job list --address http://localhost:%d`, or open it in a browser that visits nothing else meanwhile (Ray's dashboard trusts pages of other sites: docs/architecture.md, Security)", portForward, ray.DashboardPort))
}

// tokenReader is the Workload Identity principal of a Kubernetes service account of the
// workload namespace: a token's reader (workloads.Token.Reader).
func tokenReader(bp *Blueprint) func(projectNumber, serviceAccount string) string {
	return func(number, serviceAccount string) string {
		return storage.WorkloadIdentityPrincipal(number, bp.Project, bp.Namespace, serviceAccount)
	}
}
