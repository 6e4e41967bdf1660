package kubetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"gke-rl/infra/offline"
	"gke-rl/internal/machine"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// Machine is what a Compute Engine machine type brings to a node: vCPUs, memory and GPUs
// (Compute Engine's machine families resource and comparison guide: n2-standard-16 16 vCPU and
// 64 GB; a3-ultragpu-8g 224 vCPU, 2,952 GB and 8 H200; a4-highgpu-8g 224 vCPU, 3,968 GB and 8
// B200). Compute Engine's GB are GiB: its API gives a machine type's memory in MiB
// (machineTypes memoryMb: 1740 for the "1.7 GB" g1-small).
type Machine struct {
	CPUs      int
	MemoryGiB int
	GPUs      int
	Ephemeral string
}

// Machines are the machine types the shipped stacks use.
var Machines = map[string]Machine{
	"n2-standard-16": {CPUs: 16, MemoryGiB: 64, Ephemeral: "300Gi"},
	"a3-ultragpu-8g": {CPUs: 224, MemoryGiB: 2952, GPUs: 8, Ephemeral: "12000Gi"},
	"a4-highgpu-8g":  {CPUs: 224, MemoryGiB: 3968, GPUs: 8, Ephemeral: "12000Gi"},
}

// Allocatable is what GKE leaves pods of a node of this machine (machine.Shape.Allocatable).
func (m Machine) Allocatable() (cpuMilli, memMiB int64) {
	return machine.Shape{CPUs: m.CPUs, MemoryGiB: float64(m.MemoryGiB)}.Allocatable()
}

// Pool is a simulated GKE node pool: its nodes are shaped as GKE makes them.
type Pool struct {
	// Name is the node pool's name in GKE (label cloud.google.com/gke-nodepool).
	Name    string
	Machine string
	// Labels are the pool's node labels (nodeConfig.labels) and GKE's own.
	Labels map[string]string
	Taints []corev1.Taint
	// Initial and Max bound its node count: the autoscaler adds nodes up to Max for pods that
	// fit no node.
	Initial, Max int
}

// PoolOf is the simulated pool of a planned node pool, with the labels GKE adds to its nodes:
// the pool's name, the accelerator, spot, the machine type and the zone.
func PoolOf(res *offline.Resource, zone string) (Pool, error) {
	in := func(path string) any { v, _ := res.Input(path); return v }
	p := Pool{Name: fmt.Sprint(in("name")), Machine: fmt.Sprint(in("nodeConfig.machineType")), Labels: map[string]string{}}
	if _, ok := Machines[p.Machine]; !ok {
		return p, fmt.Errorf("node pool %s: no simulated machine %s", p.Name, p.Machine)
	}
	if m, ok := in("nodeConfig.labels").(map[string]any); ok {
		for k, v := range m {
			p.Labels[k] = fmt.Sprint(v)
		}
	}
	p.Labels["cloud.google.com/gke-nodepool"] = p.Name
	p.Labels["node.kubernetes.io/instance-type"] = p.Machine
	p.Labels["topology.kubernetes.io/zone"] = zone
	if acc, ok := in("nodeConfig.guestAccelerators").([]any); ok && len(acc) > 0 {
		p.Labels["cloud.google.com/gke-accelerator"] = fmt.Sprint(acc[0].(map[string]any)["type"])
		// GKE taints every GPU node so (GKE's GPU documentation, "Run GPUs in Standard node
		// pools"); the pool's own taint list says the same.
		p.Taints = append(p.Taints, corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule})
	}
	if spot, _ := in("nodeConfig.spot").(bool); spot {
		p.Labels["cloud.google.com/gke-spot"] = "true"
	}
	p.Initial, _ = strconv.Atoi(fmt.Sprint(in("initialNodeCount")))
	p.Max, _ = strconv.Atoi(fmt.Sprint(in("autoscaling.totalMaxNodeCount")))
	p.Max = max(p.Max, p.Initial)
	return p, nil
}

// Nodes simulates the node pools and the cluster autoscaler: a pool's nodes exist once it has
// been created, and a pod that no node can take gets a node of a pool whose nodes it selects,
// up to the pool's maximum.
type Nodes struct {
	cp    *ControlPlane
	mu    sync.Mutex
	pools []Pool
	count map[string]int
}

// NewNodes starts the simulated autoscaler; it stops when the test ends.
func (cp *ControlPlane) NewNodes(t testing.TB) *Nodes {
	n := &Nodes{cp: cp, count: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go n.autoscale(ctx)
	return n
}

// CreatePool adds a pool and its initial nodes, and waits until they are Ready.
func (n *Nodes) CreatePool(ctx context.Context, p Pool) error {
	n.mu.Lock()
	n.pools = append(n.pools, p)
	n.mu.Unlock()
	for range p.Initial {
		if err := n.add(p); err != nil {
			return fmt.Errorf("node of %s: %w", p.Name, err)
		}
	}
	return poll(ctx, func() (bool, error) {
		nodes, err := n.cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + p.Name})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, node := range nodes.Items {
			if nodeReady(&node) {
				ready++
			}
		}
		return ready >= p.Initial, nil
	})
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// add creates one node of p, managed by kwok.
func (n *Nodes) add(p Pool) error {
	n.mu.Lock()
	if n.count[p.Name] >= p.Max {
		n.mu.Unlock()
		return fmt.Errorf("pool %s is at its maximum of %d nodes", p.Name, p.Max)
	}
	i := n.count[p.Name]
	n.count[p.Name]++
	n.mu.Unlock()
	m := Machines[p.Machine]
	cpu, mem := m.Allocatable()
	name := fmt.Sprintf("gke-%s-%d", p.Name, i)
	lbls := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
	for k, v := range p.Labels {
		lbls[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(m.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(int64(m.MemoryGiB)<<30, resource.BinarySI),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse(m.Ephemeral),
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem<<20, resource.BinarySI),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse(m.Ephemeral),
	}
	if m.GPUs > 0 {
		gpus := *resource.NewQuantity(int64(m.GPUs), resource.DecimalSI)
		capacity["nvidia.com/gpu"], allocatable["nvidia.com/gpu"] = gpus, gpus
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(p.Taints)},
		// An address of its own: kwok gives a hostNetwork pod (the RDMA installer) its node's
		// InternalIP, and without one keeps creating the pod again.
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: allocatable, Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", 128+n.poolIndex(p.Name), i/250, i%250+2)},
			{Type: corev1.NodeHostName, Address: name},
		}},
	}
	_, err := n.cp.Client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	return err
}

// poolIndex is the pool's place among the pools, for its nodes' addresses.
func (n *Nodes) poolIndex(name string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.IndexFunc(n.pools, func(p Pool) bool { return p.Name == name })
}

// autoscale adds a node to a pool while pods that no node can take select it, one at a time
// (each new node gets a few seconds to become Ready and take pods before the next), up to the
// pool's maximum, as the cluster autoscaler scales a pool up from zero.
func (n *Nodes) autoscale(ctx context.Context) {
	lastAdd := map[string]time.Time{}
	for ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		pods, err := n.cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		if err != nil {
			continue
		}
		n.mu.Lock()
		pools := slices.Clone(n.pools)
		n.mu.Unlock()
		for _, p := range pools {
			if time.Since(lastAdd[p.Name]) < 3*time.Second {
				continue
			}
			for _, pod := range pods.Items {
				if unschedulable(&pod) && selects(&pod, p.Labels) && tolerates(&pod, p.Taints) {
					if n.add(p) == nil {
						lastAdd[p.Name] = time.Now()
					}
					break
				}
			}
		}
	}
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// selects reports whether a pod's node selector and required node affinity match labels.
func selects(pod *corev1.Pod, lbls map[string]string) bool {
	if !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(lbls)) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ok := true
		for _, e := range term.MatchExpressions {
			v, has := lbls[e.Key]
			switch e.Operator {
			case corev1.NodeSelectorOpIn:
				ok = ok && has && slices.Contains(e.Values, v)
			case corev1.NodeSelectorOpNotIn:
				ok = ok && !slices.Contains(e.Values, v)
			case corev1.NodeSelectorOpExists:
				ok = ok && has
			case corev1.NodeSelectorOpDoesNotExist:
				ok = ok && !has
			default:
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func tolerates(pod *corev1.Pod, taints []corev1.Taint) bool {
	for _, taint := range taints {
		ok := false
		for _, tol := range pod.Spec.Tolerations {
			if tol.ToleratesTaint(klog.Background(), &taint, false) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// NodeOf is the node a pod runs on, nil when it has none yet.
func (cp *ControlPlane) NodeOf(ctx context.Context, pod *corev1.Pod) (*corev1.Node, error) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return node, err
}

// PoolName is the pool a node belongs to.
func PoolName(node *corev1.Node) string { return node.Labels["cloud.google.com/gke-nodepool"] }
