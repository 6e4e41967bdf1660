package kubetest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/gpunode"
	"gke-rl/ray"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// poolDelay stands for a node pool's creation: long enough that a Job created before the pool
// is done would run (and spend its deadline) before any node exists.
const poolDelay = 4 * time.Second

// testCluster is a control plane with KubeRay, the fake dashboard and simulated node pools.
type testCluster struct {
	cp    *kubetest.ControlPlane
	dash  *kubetest.Dashboard
	nodes *kubetest.Nodes
}

func newCluster(t *testing.T) testCluster {
	t.Helper()
	cp := kubetest.Start(t, kubetest.Options{})
	cp.InstallCRDs(t, kubetest.UpstreamCRDs(t)...)
	dash := kubetest.NewDashboard(t)
	cp.StartKubeRay(t, dash)
	return testCluster{cp: cp, dash: dash, nodes: cp.NewNodes(t)}
}

// up walks a planned stack onto the cluster as `pulumi up` would.
func (c testCluster) up(t *testing.T, res *offline.Result) *kubetest.Walk {
	t.Helper()
	w := &kubetest.Walk{CP: c.cp, Nodes: c.nodes, Plan: res, PoolDelay: poolDelay}
	require.NoError(t, w.Run(t), "pulumi up of %s", res.Stack)
	return w
}

// rayJob reads the stack's RayJob as KubeRay left it.
func (c testCluster) rayJob(t *testing.T, bp *infra.Blueprint) *rayv1.RayJob {
	t.Helper()
	u, err := c.cp.As(t, kubetest.Admin).Get(context.Background(), bp.Run.RayJob)
	require.NoError(t, err)
	var job rayv1.RayJob
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job))
	return &job
}

// submitted waits for KubeRay's submitter pod of the RayJob to run, then has the fake
// dashboard know the job as RUNNING (what submit.sh's `ray job submit` does: its own tests run
// it), and waits for KubeRay to report the run as running.
func (c testCluster) submitted(t *testing.T, bp *infra.Blueprint) *rayv1.RayJob {
	t.Helper()
	ctx := context.Background()
	var job *rayv1.RayJob
	kubetest.Eventually(t, 120*time.Second, "KubeRay's submitter pod runs", func() (bool, string) {
		job = c.rayJob(t, bp)
		pods, err := c.cp.Client.CoreV1().Pods(bp.Run.RayJob.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + bp.Run.RayJob.Name})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				return job.Status.JobId != "", ""
			}
		}
		return false, fmt.Sprintf("RayJob %s, %d submitter pods; %s", job.Status.JobDeploymentStatus, len(pods.Items), c.cp.Pods(ctx))
	})
	c.dash.SetJob(job.Status.JobId, "RUNNING")
	kubetest.Eventually(t, 60*time.Second, "KubeRay reports the run running", func() (bool, string) {
		job = c.rayJob(t, bp)
		return job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusRunning && job.Status.JobStatus == rayv1.JobStatusRunning,
			fmt.Sprintf("%s / %s: %s", job.Status.JobDeploymentStatus, job.Status.JobStatus, job.Status.Message)
	})
	return job
}

// Each shipped stack's first `up` on the control plane, to a submitted run: every object is
// accepted, every pod KubeRay and the Job controller make is admitted by the namespace's Pod
// Security level, runs on the pool meant for it and is selected by the NetworkPolicies meant
// for it; the gate's Jobs start after the GPU pool and the RDMA installer on its nodes.
func TestFirstUpSubmitsTheRun(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			c := newCluster(t)
			res := plantest.Plan(t, stack)
			bp := res.Blueprint
			w := c.up(t, res)
			job := c.submitted(t, bp)
			ctx := context.Background()
			// The day after: a refresh replaces nothing KubeRay wrote (the RayJob's, the long-lived
			// RayCluster's), as pulumi-kubernetes reads them back.
			assert.Empty(t, c.cp.RefreshReplacements(t, res), "the submitted run, refreshed")

			clusterName := job.Status.RayClusterName
			if bp.Run.RayCluster != nil {
				assert.Equal(t, bp.Run.RayCluster.Name, clusterName, "the run is on the long-lived cluster")
			} else {
				assert.NotEmpty(t, clusterName, "KubeRay made the run's own cluster")
			}
			pods, err := c.cp.Client.CoreV1().Pods(bp.Namespace).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			policies, err := c.cp.Client.NetworkingV1().NetworkPolicies(bp.Namespace).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			ns, err := c.cp.Client.CoreV1().Namespaces().Get(ctx, bp.Namespace, metav1.GetOptions{})
			require.NoError(t, err)
			assert.NotEmpty(t, ns.Labels["pod-security.kubernetes.io/enforce"], "the namespace enforces a Pod Security level")

			cpuPool, gpuPool := bp.Cluster.CPUPool.Name, bp.Cluster.GPUPool.Name
			roles := map[string]int{}
			for _, p := range pods.Items {
				node, err := c.cp.NodeOf(ctx, &p)
				require.NoError(t, err)
				require.NotNil(t, node, "pod %s is on a node; %s", p.Name, c.cp.Pods(ctx))
				role, wantPool, wantPolicies := podRole(p, bp)
				roles[role]++
				assert.Equal(t, wantPool(cpuPool, gpuPool), kubetest.PoolName(node), "%s pod %s", role, p.Name)
				assert.ElementsMatch(t, wantPolicies, selecting(policies.Items, p), "%s pod %s is selected by", role, p.Name)
				// A Device network's NIC is beyond every NetworkPolicy: only the GPU workers and
				// the gate's NCCL pods may hold one (docs/architecture.md, gVNIC VPC).
				_, onGVNIC := p.Annotations[gpunode.InterfacesAnnotation]
				ncclGate := bp.Run.Gate != nil && p.Labels["batch.kubernetes.io/job-name"] == bp.Run.Gate.NCCL.Name
				assert.Equal(t, role == "ray worker" || ncclGate, onGVNIC, "%s pod %s has a gVNIC and RDMA NICs", role, p.Name)
				if role == "submitter" {
					// KubeRay passes the submitter's template on as it is: its pods carry the
					// label that the head's job API admits.
					for k, v := range ray.SubmitterLabels {
						assert.Equal(t, v, p.Labels[k], "submitter pod %s", p.Name)
					}
				}
			}
			dashboardReach(t, c, bp, pods.Items, policies.Items)
			assert.Equal(t, 1, roles["ray head"], "one head of the run's cluster: %v", roles)
			assert.Equal(t, bp.Cluster.GPUPool.Nodes, roles["ray worker"], "a worker per GPU node: %v", roles)
			assert.Equal(t, 1, roles["submitter"], "%v", roles)

			if g := bp.Run.Gate; g != nil {
				gpuDone := w.DoneAt(t, "gcp:container/nodePool:NodePool", "cluster-gpu")
				installerDone := w.DoneAt(t, "kubernetes:apps/v1:DaemonSet", "cluster-rdma")
				for _, gate := range []string{g.NCCL.Name, g.Storage.Name} {
					created := c.jobCreated(t, bp.Namespace, gate)
					assert.False(t, created.Before(gpuDone.Truncate(time.Second)), "gate %s created %s, before the GPU pool was done %s", gate, created, gpuDone)
					assert.False(t, created.Before(installerDone.Truncate(time.Second)), "gate %s created before the RDMA installer was ready", gate)
				}
				installer, err := c.cp.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=nccl-rdma-installer"})
				require.NoError(t, err)
				assert.Len(t, installer.Items, bp.Cluster.GPUPool.Nodes, "the installer on every GPU node the pool starts with")
			}
		})
	}
}

// dashboardReach evaluates the head's job API (8265) against the NetworkPolicies as the API
// server stores them, for the pods the controllers made, with cyclonus's implementation of the
// NetworkPolicy specification: the submitter and the API server's Konnectivity agents reach it;
// a pod of another namespace (a namespace the API server made, labels and all), any other pod
// of kube-system and the namespace's other pods do not.
func dashboardReach(t *testing.T, c testCluster, bp *infra.Blueprint, pods []corev1.Pod, policies []networkingv1.NetworkPolicy) {
	t.Helper()
	ctx := context.Background()
	stored := make([]*networkingv1.NetworkPolicy, len(policies))
	for i := range policies {
		stored[i] = &policies[i]
	}
	engine := matcher.BuildNetworkPolicies(false, stored)
	peer := func(namespace string, podLabels map[string]string) *matcher.TrafficPeer {
		ns, err := c.cp.Client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			ns, err = c.cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
		}
		require.NoError(t, err)
		return &matcher.TrafficPeer{IP: "10.4.9.9", Internal: &matcher.InternalPeer{Namespace: namespace, NamespaceLabels: ns.Labels, PodLabels: podLabels}}
	}
	var head *corev1.Pod
	byRole := map[string]corev1.Pod{}
	for _, p := range pods {
		role, _, _ := podRole(p, bp)
		byRole[role] = p
		if role == "ray head" {
			head = &p
		}
	}
	require.NotNil(t, head, "the run's head")
	reaches := func(from *matcher.TrafficPeer) bool {
		return engine.IsTrafficAllowed(&matcher.Traffic{
			Source:       from,
			Destination:  peer(head.Namespace, head.Labels),
			ResolvedPort: ray.DashboardPort, Protocol: corev1.ProtocolTCP,
		}).Ingress.IsAllowed()
	}
	submitter := byRole["submitter"]
	assert.True(t, reaches(peer(submitter.Namespace, submitter.Labels)), "the submitter reaches the job API")
	assert.True(t, reaches(peer(ray.KonnectivityNamespace, ray.KonnectivityAgentLabels)), "the API server's agents (the operator's requests) reach it")
	assert.False(t, reaches(peer("team-b", map[string]string{"batch.kubernetes.io/job-name": "team-b-job"})), "a job of another namespace does not")
	assert.False(t, reaches(peer("team-b", submitter.Labels)), "nor a pod of another namespace labelled as the submitter")
	assert.False(t, reaches(peer("kube-system", map[string]string{"k8s-app": "kube-dns"})), "nor another pod of kube-system")
	if prep, ok := byRole["data preparation"]; ok {
		assert.False(t, reaches(peer(prep.Namespace, prep.Labels)), "nor the data preparation")
	}
}

// jobCreated is when the Job named name was created; its pods count their deadline from then.
func (c testCluster) jobCreated(t *testing.T, namespace, name string) time.Time {
	t.Helper()
	job, err := c.cp.Client.BatchV1().Jobs(namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return job.CreationTimestamp.Time
}

// podRole says what a pod of the workload namespace is, the pool it must run on and the
// NetworkPolicies that must select it: the Ray pods the Ray pods' policy and the metrics one,
// the heads the dashboard's too; every other pod the namespace's default.
func podRole(p corev1.Pod, bp *infra.Blueprint) (string, func(cpu, gpu string) string, []string) {
	cpu := func(c, _ string) string { return c }
	gpu := func(_, g string) string { return g }
	switch p.Labels["ray.io/node-type"] {
	case "head":
		return "ray head", cpu, []string{ray.RayPolicyName, ray.HeadPolicyName, ray.MetricsPolicyName}
	case "worker":
		return "ray worker", gpu, []string{ray.RayPolicyName, ray.MetricsPolicyName}
	}
	job := p.Labels["batch.kubernetes.io/job-name"]
	switch {
	case job == bp.Run.RayJob.Name:
		return "submitter", cpu, []string{ray.WorkloadPolicyName}
	case bp.Run.Prep != nil && job == bp.Run.Prep.Name:
		return "data preparation", cpu, []string{ray.WorkloadPolicyName}
	case bp.Run.Gate != nil && (job == bp.Run.Gate.NCCL.Name || job == bp.Run.Gate.Storage.Name):
		return "gate", gpu, []string{ray.WorkloadPolicyName}
	}
	return "unknown " + p.Name, cpu, nil
}

// selecting are the names of the NetworkPolicies whose pod selector selects p, sorted.
func selecting(policies []networkingv1.NetworkPolicy, p corev1.Pod) []string {
	var out []string
	for _, pol := range policies {
		sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.PodSelector)
		if err == nil && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, pol.Name)
		}
	}
	slices.Sort(out)
	return out
}

// A preempted attempt on spot, as KubeRay retries it: the Ray job fails, the submitter (which
// waits for the job's end) finishes, and KubeRay deletes the attempt's cluster and makes a new
// one, counting the failure, with the deadline's clock started again (the deadline is per
// attempt, as runDeadline says).
func TestSpotRunIsRetriedOnANewCluster(t *testing.T) {
	c := newCluster(t)
	res := plantest.Plan(t, "b200-spot")
	bp := res.Blueprint
	c.up(t, res)
	first := c.submitted(t, bp)
	require.NotNil(t, first.Status.StartTime)
	ctx := context.Background()

	c.dash.SetJob(first.Status.JobId, "FAILED")
	require.NoError(t, c.cp.CompleteRunningPods(ctx, bp.Namespace, "batch.kubernetes.io/job-name="+bp.Run.RayJob.Name))
	var job *rayv1.RayJob
	kubetest.Eventually(t, 120*time.Second, "KubeRay retries on a new cluster", func() (bool, string) {
		job = c.rayJob(t, bp)
		return job.Status.Failed != nil && *job.Status.Failed == 1 && job.Status.RayClusterName != "" && job.Status.RayClusterName != first.Status.RayClusterName,
			fmt.Sprintf("%s, failed %v, cluster %q", job.Status.JobDeploymentStatus, job.Status.Failed, job.Status.RayClusterName)
	})
	assert.NotEqual(t, first.Status.JobId, job.Status.JobId, "a new Ray job id")
	require.NotNil(t, job.Status.StartTime)
	assert.True(t, job.Status.StartTime.After(first.Status.StartTime.Time), "the deadline counts from the retry's start")
	assert.EqualValues(t, *bp.Run.RayJob.Spec.ActiveDeadlineSeconds, *job.Spec.ActiveDeadlineSeconds)
	kubetest.Eventually(t, 60*time.Second, "the first attempt's cluster is deleted", func() (bool, string) {
		_, err := c.cp.As(t, kubetest.Admin).Get(ctx, map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster",
			"metadata": map[string]any{"name": first.Status.RayClusterName, "namespace": bp.Namespace}})
		return err != nil, "still there"
	})
	c.submitted(t, bp)
}
