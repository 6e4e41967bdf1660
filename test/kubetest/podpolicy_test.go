package kubetest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"

	"gke-rl/cluster"
	"gke-rl/internal/gpunode"
	"gke-rl/test/kubetest"
)

// The workload namespace's pod policy, on a real API server: every pod the program makes there
// (each shipped stack's Jobs, Ray heads, workers and submitters, with and without jobs) is
// admitted, and a pod that would be root on its node is refused, one per rule (privileged, the
// node's network, a host directory other than the driver's and the plugin's or those mounted
// writable, an added capability, Unconfined seccomp or AppArmor, an unmasked /proc, a host port,
// an unsafe sysctl, an SELinux type, an ephemeral container), to the deploy identity's Jobs as
// to anyone.
func TestWorkloadPodPolicy(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	admin := cp.As(t, kubetest.Admin)
	const ns = "gke-rl-policy"
	_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: cluster.PodSecurityLabels}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, obj := range cluster.WorkloadPodPolicy(ns) {
		_, err := admin.Apply(ctx, obj, false)
		require.NoError(t, err)
	}
	create := func(spec corev1.PodSpec) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns}, Spec: spec}
		_, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	plain := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.37"}}}
	privileged := *plain.DeepCopy()
	privileged.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(bool)}
	*privileged.Containers[0].SecurityContext.Privileged = true
	// The API server loads a new policy asynchronously: wait until it refuses.
	deadline := time.Now().Add(kubetest.SettleTimeout)
	for create(privileged) == nil {
		require.True(t, time.Now().Before(deadline), "the policy never refused a privileged pod")
		time.Sleep(200 * time.Millisecond)
	}

	refused := map[string]func(s *corev1.PodSpec){
		"may not run a privileged container": func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "i", Image: "busybox:1.37", SecurityContext: privileged.Containers[0].SecurityContext}}
		},
		"may not share the node's network, PID or IPC namespace": func(s *corev1.PodSpec) { s.HostPID = true },
		"may mount no host directory but": func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "etc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
		},
		"mounts host directories read-only": func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "gib", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: gpunode.GIBHostPath}}}}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "gib", MountPath: "/usr/local/gib"}}
		},
		// Each root on the node without privileged.
		"may add no capability but": func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		},
		"may not run Unconfined by seccomp": func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		},
		"may not run Unconfined by AppArmor": func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
		},
		"may not unmask /proc": func(s *corev1.PodSpec) {
			// The API server accepts Unmasked only with the pod's own user namespace.
			s.HostUsers = new(bool)
			s.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptrTo(corev1.UnmaskedProcMount)}
		},
		"may not bind a host port": func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 22, HostPort: 2222}}
		},
		"may set no sysctl outside Pod Security baseline's safe set": func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
		},
		"may not choose its SELinux user, role or a type": func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
		},
	}
	for message, change := range refused {
		spec := *plain.DeepCopy()
		change(&spec)
		err := create(spec)
		require.Error(t, err, message)
		assert.Contains(t, err.Error(), message)
	}
	require.NoError(t, create(plain))

	// An ephemeral container (kubectl debug) goes through the pod's ephemeralcontainers
	// subresource, where the rules on containers do not look: refused.
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debug-target", Namespace: ns}, Spec: plain}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The pod's status moves meanwhile (the scheduler): each try starts from its latest version.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		target, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "debug-target", metav1.GetOptions{})
		if err != nil {
			return err
		}
		target.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox:1.37", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}}}}
		_, err = cp.Client.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, target.Name, target, metav1.UpdateOptions{})
		return err
	})
	require.Error(t, err, "an ephemeral container")
	assert.Contains(t, err.Error(), "may have no ephemeral container")

	// Every pod template of every shipped stack, as the program renders it.
	admitted := 0
	for _, obj := range managedObjects(t, nil, queuedVariant) {
		for where, tmpl := range podTemplatesOf(obj.object) {
			var spec corev1.PodSpec
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &spec), "%s %s", obj, where)
			// What other admission plugins look up (the account, the priority class) is not
			// what the policy judges, and is not in this namespace.
			spec.ServiceAccountName, spec.PriorityClassName, spec.Priority = "", "", nil
			assert.NoError(t, create(spec), "%s %s is admitted", obj, where)
			admitted++
		}
	}
	t.Logf("%d pod templates admitted", admitted)
	assert.Greater(t, admitted, 10)
}

// podTemplatesOf are the pod specs an object renders, by where they are: a Job's template, a
// RayCluster's (or a RayJob's own cluster's) head and worker groups, a RayJob's submitter.
func podTemplatesOf(obj map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	spec, _ := obj["spec"].(map[string]any)
	podSpec := func(template any) map[string]any {
		m, _ := template.(map[string]any)
		s, _ := m["spec"].(map[string]any)
		return s
	}
	cluster := func(prefix string, c map[string]any) {
		if head, ok := c["headGroupSpec"].(map[string]any); ok {
			out[prefix+"head"] = podSpec(head["template"])
		}
		groups, _ := c["workerGroupSpecs"].([]any)
		for i, g := range groups {
			out[fmt.Sprintf("%sworker %d", prefix, i)] = podSpec(g.(map[string]any)["template"])
		}
	}
	switch obj["kind"] {
	case "Job":
		out["template"] = podSpec(spec["template"])
	case "RayCluster":
		cluster("", spec)
	case "RayJob":
		if c, ok := spec["rayClusterSpec"].(map[string]any); ok {
			cluster("own cluster ", c)
		}
		if sub, ok := spec["submitterPodTemplate"]; ok {
			out["submitter"] = podSpec(sub)
		}
	}
	for k, v := range out {
		if v == nil || !strings.Contains(fmt.Sprint(v["containers"]), "name") {
			delete(out, k)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
