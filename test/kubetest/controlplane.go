// Package kubetest runs a Kubernetes control plane on loopback for the tests: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler of the GKE minor
// version new clusters get (built from the Go module proxy by .ci/kube), and kwok for nodes that
// run no containers but go through the lifecycle kwok's stages describe. Objects the tests
// apply meet the real admission chain (RBAC, ValidatingAdmissionPolicy, Pod Security) and the
// real control loops (Jobs, DaemonSets, the scheduler).
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"gke-rl/test/clitest"
	"gke-rl/test/golden"
)

// BinEnv names a directory holding etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok; without it they are looked up on PATH. .ci/kube/build builds them
// there.
const BinEnv = "GKE_RL_KUBE_BIN"

// LogsEnv names a directory where a failed test leaves the control plane's logs.
const LogsEnv = "GKE_RL_KUBE_LOGS"

// Admin is the user the harness acts as (a member of system:masters), as the deploy identity's
// cluster-admin access does on GKE.
const Admin = "gke-rl-test-admin"

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Dir holds the control plane's files: etcd's data, the certificates, the kubeconfigs.
	Dir string
	// Host is the API server's address, https://127.0.0.1:PORT.
	Host string
	// Client acts as Admin.
	Client kubernetes.Interface
	tokens map[string]string
}

// Options are the users the API server knows besides Admin: each name gets a token of its own
// (the API server's static token file), as GKE authenticates a Google service account by its
// email.
type Options struct {
	Users []string
}

// binary is the path of a control-plane binary, or the test is skipped (failed under
// clitest.RequireEnv) with how to build it.
func binary(t testing.TB, name string) string {
	t.Helper()
	if dir := os.Getenv(BinEnv); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is neither in $%s nor on PATH: build the control plane with .ci/kube/build DIR and set %s=DIR", name, BinEnv, BinEnv)
	if os.Getenv(clitest.RequireEnv) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start starts etcd, the API server, the controller manager, the scheduler and kwok, waits until
// the API server is ready, and stops them all when the test ends.
func Start(t testing.TB, o Options) *ControlPlane {
	t.Helper()
	bins := map[string]string{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		bins[name] = binary(t, name)
	}
	dir := t.TempDir()
	cp := &ControlPlane{Dir: dir, tokens: map[string]string{}}

	// Every user authenticates with a bearer token of the static token file:
	// token,user,uid[,"group1,group2"].
	var tokenFile strings.Builder
	for _, user := range append([]string{Admin}, o.Users...) {
		cp.tokens[user] = randomHex(t)
		groups := ""
		if user == Admin {
			groups = ",system:masters"
		}
		fmt.Fprintf(&tokenFile, "%s,%s,%s%s\n", cp.tokens[user], user, user, groups)
	}
	write(t, filepath.Join(dir, "tokens.csv"), tokenFile.String())
	saKey := filepath.Join(dir, "service-accounts.key")
	writeKey(t, saKey)

	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	start(t, dir, "etcd", bins["etcd"],
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL)

	certs := filepath.Join(dir, "certs")
	start(t, dir, "kube-apiserver", bins["kube-apiserver"],
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort), "--cert-dir", certs,
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		// GKE authorizes with RBAC; Pod Security and ValidatingAdmissionPolicy are among the
		// default admission plugins.
		"--authorization-mode", "RBAC",
		// GKE admits privileged pods where Pod Security lets them in (the RDMA installer).
		"--allow-privileged=true",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/16")
	cp.Host = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cp.waitReady(t)

	admin := cp.Kubeconfig(t, Admin)
	start(t, dir, "kube-controller-manager", bins["kube-controller-manager"],
		"--kubeconfig", admin, "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(freePort(t)),
		"--service-account-private-key-file", saKey,
		"--root-ca-file", filepath.Join(certs, "apiserver.crt"),
		"--use-service-account-credentials=false")
	start(t, dir, "kube-scheduler", bins["kube-scheduler"],
		"--kubeconfig", admin, "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(freePort(t)))
	start(t, dir, "kwok", bins["kwok"],
		"--kubeconfig", admin, "--manage-all-nodes=true", "--config", kwokStages(t, dir),
		// The node heartbeat stage renews each node's lease; 40 s as kwokctl sets it
		// (kwok v0.8.0 pkg/kwokctl/runtime), inside the node lifecycle controller's grace period.
		"--node-lease-duration-seconds=40")

	client, err := kubernetes.NewForConfig(cp.Config(Admin))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	cp.Client = client
	return cp
}

// Config is a client configuration that authenticates as user.
func (cp *ControlPlane) Config(user string) *rest.Config {
	return &rest.Config{
		Host:            cp.Host,
		BearerToken:     cp.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             200, Burst: 400,
	}
}

// Kubeconfig writes a kubeconfig file for user and returns its path.
func (cp *ControlPlane) Kubeconfig(t testing.TB, user string) string {
	t.Helper()
	path := filepath.Join(cp.Dir, user+".kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.Host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cp.tokens[user]}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: user}
	cfg.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	return path
}

// apiserverStartTimeout bounds the wait for /readyz. The API server is ready in seconds alone;
// beside test/engine's control planes on 2 cores one went past 90 s once (EOF on /readyz), so
// the bound leaves room for a loaded machine without hiding a server that never starts.
const apiserverStartTimeout = 180 * time.Second

// SettleTimeout bounds a wait for a component's first reaction to something the test did: the
// PV controller's first bind, an admission policy the API server loads asynchronously, a CRD
// established. Each takes well under a second on an idle machine; its first one after a start
// also waits for the component's informers to sync, which beside test/engine's control planes
// on 2 cores took more than 30 s once (the first claim's bind). The wait ends as soon as the
// event is seen, so the bound only decides how long a real failure takes to report.
const SettleTimeout = 180 * time.Second

// waitReady waits until the API server answers /readyz.
func (cp *ControlPlane) waitReady(t testing.TB) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a loopback test server's self-signed certificate
	var last string
	for deadline := time.Now().Add(apiserverStartTimeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, cp.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.tokens[Admin])
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		last = resp.Status
	}
	t.Fatalf("kube-apiserver not ready after %s (%s); its log: %s", apiserverStartTimeout, last, filepath.Join(cp.Dir, "kube-apiserver.log"))
}

// start runs a control-plane process with its output in DIR/NAME.log, and stops it when the
// test ends.
func start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	startWithEnv(t, dir, name, bin, nil, args...)
}

// startWithEnv is start with env added to the process's environment.
func startWithEnv(t testing.TB, dir, name, bin string, env []string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatalf("%s log: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
		// LogsEnv names a directory to keep the logs of a failed test in.
		if keep := os.Getenv(LogsEnv); keep != "" && t.Failed() {
			b, _ := os.ReadFile(log.Name())
			_ = os.WriteFile(filepath.Join(keep, name+".log"), b, 0o644)
			t.Logf("%s log: %s", name, filepath.Join(keep, name+".log"))
		}
	})
}

// CompleteAnnotation on a Job's pod lets kwok complete it: the pod's script has succeeded.
const CompleteAnnotation = "kubetest.gke-rl/complete"

// kwokStages writes kwok's configuration, the node and pod lifecycles of kwok v0.8.0's own
// stages (testdata/kwok, copied from kubernetes-sigs/kwok kustomize/stage), and returns its path.
func kwokStages(t testing.TB, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(golden.RepoRoot(), "testdata", "kwok", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("kwok stages in testdata/kwok: %v", err)
	}
	var docs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("kwok stage: %v", err)
		}
		doc := string(b)
		if filepath.Base(f) == "pod-complete.yaml" {
			// A Job's pod completes when the test says its script succeeded (CompleteAnnotation),
			// not a few seconds after it starts: the submitter, for one, runs as long as its job.
			doc = strings.Replace(doc, "    matchExpressions:\n", "    matchExpressions:\n    - key: '.metadata.annotations[\""+CompleteAnnotation+"\"]'\n      operator: 'Exists'\n", 1)
		}
		docs = append(docs, doc)
	}
	path := filepath.Join(dir, "kwok.yaml")
	write(t, path, strings.Join(docs, "\n---\n"))
	return path
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatalf("free port: %v", err)
	}
	return port
}

func randomHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeKey(t testing.TB, path string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
}

func write(t testing.TB, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
