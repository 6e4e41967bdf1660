package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// KueueNamespace is where Kueue's release runs its manager (config/default, namespace
// kueue-system), and where its manager keeps its webhook certificate's Secret.
const KueueNamespace = "kueue-system"

// kueueConversionCRDs are the CRDs whose release manifest converts their versions through
// Kueue's webhook (config/components/crd/kustomization.yaml, v0.17.0: the webhook_in_*
// patches). Kueue's certificate bootstrap injects its CA into each and waits until it has
// (pkg/util/cert/cert.go), so they are installed as the release installs them.
var kueueConversionCRDs = []string{
	"localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "cohorts.kueue.x-k8s.io",
	"workloads.kueue.x-k8s.io", "multikueueclusters.kueue.x-k8s.io",
}

// kueueConfig is the manager's Configuration: the release's
// (config/components/manager/controller_manager_config.yaml, v0.17.0) with the RayJob
// integration only, no leader election, and its servers on loopback ports of the test.
const kueueConfig = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: "127.0.0.1:%d"
metrics:
  bindAddress: "127.0.0.1:%d"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: kueue-webhook-service
  webhookSecretName: kueue-webhook-server-cert
integrations:
  frameworks:
  - "ray.io/rayjob"
`

// StartKueue installs Kueue's CRDs and runs its manager (built by .ci/kube/build from the Go
// module proxy at workloads/queue.KueueVersion, a binary of its own: Kueue's module requires
// a newer KubeRay than this one pins) against the control plane, as Kueue's release runs it,
// minus its admission webhooks: the API server here cannot reach a Service's pods, so the
// RayJobs the program builds must be queued by their labels and suspension alone.
func (cp *ControlPlane) StartKueue(t testing.TB) {
	t.Helper()
	bin := binary(t, "kueue")
	var files []string
	for _, f := range KueueCRDs(t) {
		files = append(files, withConversionWebhook(t, f, cp.Dir))
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("namespace %s: %v", KueueNamespace, err)
	}
	// The release's Secret, empty, which the certificate rotator fills
	// (config/components/internalcert/secret.yaml).
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kueue-webhook-server-cert", Namespace: KueueNamespace}}
	if _, err := cp.Client.CoreV1().Secrets(KueueNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Kueue's certificate Secret: %v", err)
	}
	cp.InstallCRDs(t, files...)

	dir := filepath.Join(cp.Dir, "kueue")
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	write(t, config, fmt.Sprintf(kueueConfig, freePort(t), freePort(t), freePort(t), filepath.Join(dir, "certs")))
	// The release's Deployment mounts the Secret at the webhook's certificate directory; here
	// the test does kubelet's part, once the rotator has filled it.
	go mountSecret(ctx, cp, secret.Name, filepath.Join(dir, "certs"))
	startWithEnv(t, cp.Dir, "kueue", bin, []string{"KUBECONFIG=" + cp.Kubeconfig(t, Admin)},
		"--config", config,
		// The release's own log level (config/components/manager/manager.yaml): admissions and
		// requeues are logged at V(2), which the dashboard's queue panels read.
		"--zap-log-level=2",
		// The visibility API is an aggregated API server the API server here does not route to.
		"--feature-gates", "VisibilityOnDemand=false")
}

// mountSecret writes the Secret's keys as files into dir once it has any, as kubelet mounts a
// Secret volume, and gives up when ctx ends.
func mountSecret(ctx context.Context, cp *ControlPlane, name, dir string) {
	for ctx.Err() == nil {
		s, err := cp.Client.CoreV1().Secrets(KueueNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && len(s.Data["tls.crt"]) > 0 {
			for k, v := range s.Data {
				_ = os.WriteFile(filepath.Join(dir, k), v, 0o600)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// KueueCRDs are the files of Kueue's CRDs that .ci/kube/build puts next to its manager, as they
// ship in its module (without the release's conversion webhook, which only a running manager
// serves: StartKueue installs them with it).
func KueueCRDs(t testing.TB) []string {
	t.Helper()
	bin := binary(t, "kueue")
	crds, err := filepath.Glob(filepath.Join(filepath.Dir(bin), "kueue-crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no Kueue CRDs next to %s: build the control plane with .ci/kube/build", bin)
	}
	return crds
}

// withConversionWebhook is the CRD file as Kueue's release installs it: with its conversion
// webhook when the release has one (kueueConversionCRDs), as is otherwise.
func withConversionWebhook(t testing.TB, file, dir string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatalf("%s: %v", filepath.Base(file), err)
	}
	if !slices.Contains(kueueConversionCRDs, crd.Name) {
		return file
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Namespace: KueueNamespace, Name: "kueue-webhook-service", Path: ptr.To("/convert"),
			}},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(file))
	write(t, path, string(out))
	return path
}
