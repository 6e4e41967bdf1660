package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// LaunchContainer is the container of an experiment's launch Job (workloads.LaunchJob), whose
// script the harness runs for real: it is what puts a RayJob in Kueue's queue.
const LaunchContainer = "launch"

// IsLaunch says whether a Job's pods are an experiment's launch.
func IsLaunch(spec corev1.PodSpec) bool {
	return len(spec.Containers) == 1 && spec.Containers[0].Name == LaunchContainer
}

// RunLaunches runs the script of each running pod of the launch Job name, here, with bash and
// python3: as the pod's service account (a token the API server issues for it), against this
// control plane, with the shared volume's mount path at volume (a directory standing for the
// volume: a finished run's record is a file in it). A pod whose script succeeds completes, one
// whose script fails fails; the scripts' output is returned.
func (cp *ControlPlane) RunLaunches(ctx context.Context, ns, name, volume string) (string, error) {
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Annotations[CompleteAnnotation] != "" || !IsLaunch(p.Spec) {
			continue
		}
		log, ok, err := cp.runLaunch(ctx, &p, volume)
		out.WriteString(log)
		if err != nil {
			return out.String(), err
		}
		if ok {
			err = cp.CompleteRunningPods(ctx, ns, "batch.kubernetes.io/job-name="+name)
		} else {
			err = cp.FailPod(ctx, &p)
		}
		if err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

// runLaunch runs one launch pod's container command and says whether it succeeded.
func (cp *ControlPlane) runLaunch(ctx context.Context, p *corev1.Pod, volume string) (string, bool, error) {
	return cp.RunLaunchContainer(ctx, p.Namespace, p.Spec.ServiceAccountName, p.Spec.Containers[0], volume)
}

// RunLaunchContainer runs a launch container's command here, as the service account account of
// namespace ns, and says whether it succeeded (RunLaunches).
func (cp *ControlPlane) RunLaunchContainer(ctx context.Context, ns, account string, c corev1.Container, volume string) (string, bool, error) {
	token, err := cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", false, fmt.Errorf("a token for %s/%s: %w", ns, account, err)
	}
	dir, err := os.MkdirTemp(cp.Dir, "launch-")
	if err != nil {
		return "", false, err
	}
	ca, err := os.ReadFile(filepath.Join(cp.Dir, "certs", "apiserver.crt"))
	if err != nil {
		return "", false, err
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token.Status.Token), 0o600); err != nil {
		return "", false, err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		return "", false, err
	}
	mountPath := ""
	for _, m := range c.VolumeMounts {
		if m.Name == "shared" {
			mountPath = m.MountPath
		}
	}
	host, port, _ := strings.Cut(strings.TrimPrefix(cp.Host, "https://"), ":")
	env := []string{"PATH=" + os.Getenv("PATH"), "KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port}
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.Name == "SERVICE_ACCOUNT_DIR":
			v = dir
		case mountPath != "" && (v == mountPath || strings.HasPrefix(v, mountPath+"/")):
			v = volume + strings.TrimPrefix(v, mountPath)
		}
		env = append(env, e.Name+"="+v)
	}
	cmd := exec.CommandContext(ctx, "bash", c.Command[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return string(out), false, err
		}
		return string(out), false, nil
	}
	return string(out), true, nil
}

// FailPod ends a running pod as a failed script would: exit code 1.
func (cp *ControlPlane) FailPod(ctx context.Context, p *corev1.Pod) error {
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodFailed
	for i := range p.Status.ContainerStatuses {
		s := &p.Status.ContainerStatuses[i]
		s.Ready = false
		s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: p.CreationTimestamp, FinishedAt: metav1.Now()}}
	}
	_, err := cp.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}
