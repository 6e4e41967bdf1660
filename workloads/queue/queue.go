// Package queue builds the Kueue objects that queue a stack's experiments on its GPUs: a
// ResourceFlavor, a ClusterQueue whose GPU quota is the stack's GPU pool, a LocalQueue in the
// stack's namespace and a WorkloadPriorityClass per experiment priority; labels each RayJob with
// its priority class; and the Role with which each experiment's launch (workloads.LaunchJob)
// labels its RayJob for the LocalQueue, unless the experiment finished. Kueue admits a RayJob
// (it clears spec.suspend) when its pods fit the quota, and holds the others suspended, with no
// pod and so no GPU node, until a running one finishes.
package queue

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// releaseManifest is ManifestFile, whose checksum the install step holds it to.
//
//go:embed kueue-v0.17.0.yaml.gz
var releaseManifest []byte

// ManifestSHA256 is the SHA-256 of ManifestFile as this program was built with it: the install
// step applies nothing else.
func ManifestSHA256() string {
	sum := sha256.Sum256(releaseManifest)
	return hex.EncodeToString(sum[:])
}

// installBody is kueue-install.sh.
//
//go:embed kueue-install.sh
var installBody string

// InstallScript is the step that installs Kueue unless the cluster runs one (kueue-install.sh):
// a script for kube.KubectlScript, with InstallEnv.
func InstallScript() string { return installBody }

// InstallEnv is the install step's environment; stackNamespace marks a release it installs.
func InstallEnv(stackNamespace string) map[string]string {
	return map[string]string{
		"KUEUE_VERSION": KueueVersion, "KUEUE_IMAGE": Image,
		"KUEUE_MANIFEST": ManifestFile, "KUEUE_MANIFEST_SHA256": ManifestSHA256(),
		"KUEUE_NAMESPACE": Namespace, "KUEUE_DEPLOYMENT": Deployment, "STACK_NAMESPACE": stackNamespace,
		"NAMESPACE_LABEL": NamespaceLabel + "=" + NamespaceLabelValue, "KUEUE_REPLICAS": fmt.Sprint(Replicas),
	}
}

// NamespaceLabel marks a namespace whose jobs Kueue queues (NamespaceLabelValue). The release's
// webhooks for pods, Deployments, StatefulSets, Jobs, RayJobs and the other jobs Kueue knows
// select every namespace but kube-system and kueue-system and fail closed
// (config/components/webhook at v0.17.0: failurePolicy Fail): while Kueue's manager is down,
// no pod or Job could be created anywhere in the cluster. The install step narrows them to the
// namespaces that carry this label, the stack's workload namespace when it has jobs; the
// webhooks of Kueue's own kinds stay as they are.
const (
	NamespaceLabel      = "gke-rl/queue"
	NamespaceLabelValue = "kueue"
)

// Replicas run Kueue's manager the program installs, with a disruption budget of one: every
// replica serves the webhooks, one leads the controllers (controller_manager_config.yaml:
// leaderElect), so a node drain or a crash leaves the webhooks served. Kueue's own Helm chart
// offers the same (charts/kueue values.yaml: controllerManager.replicas,
// podDisruptionBudget.minAvailable 1).
const Replicas = 2

// Kueue's release the program installs on a cluster that has none; .ci/kube/build builds the
// same version's manager for the harness tests.
const (
	KueueVersion = "v0.17.0"
	// ManifestFile is the release's manifest, as the program installs it (kubectl apply
	// --server-side, as Kueue's installation guide says: its CRDs exceed the client-side apply
	// annotation's size), gzipped: the path from the repository's root, where `pulumi up` runs
	// the program and its commands. It is built from Kueue's sources at KueueVersion (the Go
	// module, which `go mod download` checks against the Go checksum database) as the release's
	// Makefile builds manifests.yaml (`make artifacts`: `kustomize edit set image
	// controller=<Image>`, then `kustomize build config/default`), and test/kubetest holds it to
	// that build. A copy of the program's, not the release's URL, so that what is applied is what
	// was reviewed: no download at `up`, nothing a changed release file or a redirect could swap.
	ManifestFile = "workloads/queue/kueue-" + KueueVersion + ".yaml.gz"
	// Image is the manager's image the release manifest names, by tag: its digest is published
	// with the release, where the install step checks the running image's tag.
	Image = "registry.k8s.io/kueue/kueue:" + KueueVersion
	// Namespace and Deployment are where the release runs its manager.
	Namespace  = "kueue-system"
	Deployment = "kueue-controller-manager"
)

// The labels Kueue reads on a job (sigs.k8s.io/kueue v0.17.0 pkg/controller/constants).
const (
	QueueLabel    = "kueue.x-k8s.io/queue-name"
	PriorityLabel = "kueue.x-k8s.io/priority-class"
)

// MaxPodSets is Kueue's limit on a workload's pod sets (apis/kueue/v1beta2/workload_types.go,
// v0.17.0: podSets MaxItems=8). A RayJob's are its head, each worker group and, in K8sJobMode,
// its submitter (pkg/controller/jobs/rayjob/rayjob_controller.go, PodSets).
const MaxPodSets = 8

// MaxPriority bounds jobs.<name>.priority: a WorkloadPriorityClass's value is an int32, and the
// program names one class per value.
const MaxPriority = 1_000_000

// GPUResource is the extended resource of NVIDIA GPUs, which the quota counts.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// LocalQueueName is the LocalQueue of the stack's namespace.
const LocalQueueName = "experiments"

const apiVersion = "kueue.x-k8s.io/v1beta2"

// Args are a stack's queue.
type Args struct {
	// Name names the cluster-scoped objects (the ClusterQueue, the flavor, the priority
	// classes): the stack's namespace, unique among the stacks of a cluster.
	Name, Namespace string
	// GPUs is the quota: how many GPUs the experiments may hold at once.
	GPUs int
	// Jobs are the RayJobs the queue admits; the other resources they request are covered with
	// what they all request together, so that only GPUs decide what runs.
	Jobs []*rayv1.RayJob
	// Priorities are the experiments' priorities, by RayJob name.
	Priorities map[string]int
}

// LauncherServiceAccount is the Kubernetes service account the experiments' launches run as
// (workloads.LaunchJob): the one account that may put the stack's RayJobs in the queue.
const LauncherServiceAccount = "rl-launcher"

// LauncherRole names the Role and RoleBinding that let LauncherServiceAccount patch the stack's
// queued RayJobs.
const LauncherRole = "gke-rl-launcher"

// Launcher is the launches' Role and its binding to LauncherServiceAccount (which the
// component creates): the Role names each RayJob of a.Jobs and the patch verb alone. A rule
// that names no RayJob would cover every RayJob of the namespace, so with no RayJob (every
// experiment stopped) there is none.
func Launcher(a Args) []*unstructured.Unstructured {
	names := make([]any, 0, len(a.Jobs))
	for _, j := range a.Jobs {
		names = append(names, j.Name)
	}
	if len(names) == 0 {
		return nil
	}
	slices.SortFunc(names, func(x, y any) int { return strings.Compare(x.(string), y.(string)) })
	role := rbacObject("Role", LauncherRole, a.Namespace)
	role.Object["rules"] = []any{map[string]any{
		"apiGroups": []any{rayv1.GroupVersion.Group}, "resources": []any{"rayjobs"},
		"resourceNames": names, "verbs": []any{"patch"},
	}}
	binding := rbacObject("RoleBinding", LauncherRole, a.Namespace)
	binding.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": LauncherRole}
	binding.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": LauncherServiceAccount, "namespace": a.Namespace}}
	return []*unstructured.Unstructured{role, binding}
}

func rbacObject(kind, name, namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("rbac.authorization.k8s.io/v1")
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(namespace)
	return u
}

// Objects are the queue's Kueue objects, in the order they are applied.
func Objects(a Args) []*unstructured.Unstructured {
	objs := []*unstructured.Unstructured{
		object("ResourceFlavor", a.Name, "", map[string]any{}),
		object("ClusterQueue", a.Name, "", map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: a.Namespace}},
			// An experiment that cannot run yet does not hold back a smaller one that can.
			"queueingStrategy": "BestEffortFIFO",
			// A running experiment is never stopped for another: priorities order the waiting ones.
			"preemption": map[string]any{"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
			"resourceGroups": []any{map[string]any{
				"coveredResources": toAny(covered(a)),
				"flavors":          []any{map[string]any{"name": a.Name, "resources": quotas(a)}},
			}},
		}),
		object("LocalQueue", LocalQueueName, a.Namespace, map[string]any{"clusterQueue": a.Name}),
	}
	for _, p := range priorities(a) {
		u := object("WorkloadPriorityClass", PriorityClassName(a.Name, p), "", nil)
		u.Object["value"] = int64(p)
		u.Object["description"] = fmt.Sprintf("experiments of %s with priority %d", a.Namespace, p)
		objs = append(objs, u)
	}
	return objs
}

// StatusCommand lists the stack's experiments as the queue sees them: each RayJob's workload,
// its priority, whether it was admitted (a waiting one shows <none>) and whether it finished.
func StatusCommand(namespace string) string {
	return "kubectl -n " + namespace + " get workloads.kueue.x-k8s.io -o 'custom-columns=" + statusColumns + "'"
}

// statusColumns are StatusCommand's columns (Workload v1beta2 fields).
const statusColumns = "EXPERIMENT:.metadata.ownerReferences[0].name,PRIORITY:.spec.priority,ADMITTED:.status.conditions[?(@.type==\"Admitted\")].status,FINISHED:.status.conditions[?(@.type==\"Finished\")].status,CREATED:.metadata.creationTimestamp"

// QuotaCommand shows the ClusterQueue's quota, what the admitted experiments use of it and how
// many wait.
func QuotaCommand(name string) string {
	return "kubectl get clusterqueues.kueue.x-k8s.io " + name + " -o 'custom-columns=" + quotaColumns + "'"
}

// quotaColumns are QuotaCommand's columns (ClusterQueue v1beta2 status).
const quotaColumns = "QUEUE:.metadata.name,GPUS:.spec.resourceGroups[0].flavors[0].resources[?(@.name==\"nvidia.com/gpu\")].nominalQuota,GPUS_USED:.status.flavorsUsage[0].resources[?(@.name==\"nvidia.com/gpu\")].total,ADMITTED:.status.admittedWorkloads,PENDING:.status.pendingWorkloads"

// PriorityClassName is the WorkloadPriorityClass of a priority value in a stack.
func PriorityClassName(name string, priority int) string {
	return name + "-priority-" + strconv.Itoa(priority)
}

// Queued is the RayJob as the queue takes it: labelled with its priority class and created
// suspended, outside the queue. Its launch (workloads.LaunchJob) adds the LocalQueue's label
// unless the experiment already trained its budget: Kueue then makes its workload and admits it
// when its GPUs fit, while a finished experiment's RayJob stays suspended, with no Ray cluster
// and so no GPU node. Kueue leaves a job without the label alone (its configuration's
// manageJobsWithoutQueueName is false) and lets the label be added while the job is suspended
// (v0.17.0 pkg/controller/jobframework/validation.go, validateUpdateForQueueName). Created
// suspended, it waits for its launch even where Kueue's webhook is down.
func Queued(job *rayv1.RayJob, name string, priority int) *rayv1.RayJob {
	q := job.DeepCopy()
	if q.Labels == nil {
		q.Labels = map[string]string{}
	}
	q.Labels[PriorityLabel] = PriorityClassName(name, priority)
	q.Spec.Suspend = true
	// Kueue frees the quota when the job finishes; the finished cluster would keep its GPU
	// nodes from the next experiment for its TTL. Its logs are in Cloud Logging (rayLogs).
	q.Spec.TTLSecondsAfterFinished = 0
	return q
}

// PodSets counts a RayJob's pod sets as Kueue does (MaxPodSets).
func PodSets(job *rayv1.RayJob) int {
	n := 0
	if s := job.Spec.RayClusterSpec; s != nil {
		n = 1 + len(s.WorkerGroupSpecs)
	}
	if job.Spec.SubmissionMode == rayv1.K8sJobMode || job.Spec.SubmissionMode == "" {
		n++
	}
	return n
}

// Demand is what a RayJob's pods request together while it runs: the head, every worker
// replica and the submitter.
func Demand(job *rayv1.RayJob) corev1.ResourceList {
	total := corev1.ResourceList{}
	add := func(spec corev1.PodSpec, replicas int32) {
		for name, q := range PodRequests(spec) {
			for range replicas {
				sum := total[name]
				sum.Add(q)
				total[name] = sum
			}
		}
	}
	if s := job.Spec.RayClusterSpec; s != nil {
		add(s.HeadGroupSpec.Template.Spec, 1)
		for _, g := range s.WorkerGroupSpecs {
			add(g.Template.Spec, ptr.Deref(g.Replicas, 1)*max(1, g.NumOfHosts))
		}
	}
	if t := job.Spec.SubmitterPodTemplate; t != nil {
		add(t.Spec, 1)
	}
	return total
}

// PodRequests is what one pod of spec requests: its containers' requests together.
func PodRequests(spec corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// GPUs is how many GPUs a RayJob holds while it runs.
func GPUs(job *rayv1.RayJob) int {
	q := Demand(job)[GPUResource]
	return int(q.Value())
}

// covered are the resources the jobs request, GPUs first.
func covered(a Args) []string {
	names := map[string]bool{string(GPUResource): true}
	for _, j := range a.Jobs {
		for name := range Demand(j) {
			names[string(name)] = true
		}
	}
	delete(names, string(GPUResource))
	return append([]string{string(GPUResource)}, slices.Sorted(maps.Keys(names))...)
}

// quotas are the flavor's nominal quotas: the GPUs, and of every other resource what all the
// jobs request together.
func quotas(a Args) []any {
	total := corev1.ResourceList{}
	for _, j := range a.Jobs {
		for name, q := range Demand(j) {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	total[GPUResource] = *resource.NewQuantity(int64(a.GPUs), resource.DecimalSI)
	var out []any
	for _, name := range covered(a) {
		q := total[corev1.ResourceName(name)]
		out = append(out, map[string]any{"name": name, "nominalQuota": q.String()})
	}
	return out
}

func priorities(a Args) []int {
	seen := map[int]bool{}
	for _, p := range a.Priorities {
		seen[p] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

func object(kind, name, namespace string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
