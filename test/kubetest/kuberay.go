package kubetest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/dashboardclient"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"gke-rl/test/golden"
)

// StartKubeRay runs KubeRay v1.5.0's RayCluster and RayJob reconcilers in-process against the
// control plane, as GKE's Ray add-on runs the operator, so that the head and worker pods, the
// services and the submitter Job are the ones KubeRay builds from the program's specs. The Ray
// dashboard the RayJob controller asks for a job's status is dashboard.
func (cp *ControlPlane) StartKubeRay(t testing.TB, dashboard *Dashboard) {
	t.Helper()
	log.SetLogger(zap.New(zap.WriteTo(kubeRayLog(t, cp.Dir))))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cp.Config(Admin), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each test runs an operator of its own, one after the other in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("KubeRay's manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := ray.NewReconciler(ctx, mgr, ray.RayClusterReconcilerOptions{}).SetupWithManager(mgr, 1); err != nil {
		t.Fatalf("RayCluster controller: %v", err)
	}
	if err := ray.NewRayJobReconciler(ctx, mgr, ray.RayJobReconcilerOptions{}, dashboardProvider{dashboard}).SetupWithManager(mgr, 1); err != nil {
		t.Fatalf("RayJob controller: %v", err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("KubeRay: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped })
}

func kubeRayLog(t testing.TB, dir string) *os.File {
	f, err := os.Create(filepath.Join(dir, "kuberay.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// dashboardProvider gives KubeRay's RayJob controller a dashboard client of the fake
// dashboard, whatever the cluster's address (the head service's DNS name does not resolve
// here).
type dashboardProvider struct{ d *Dashboard }

func (p dashboardProvider) GetDashboardClient(manager.Manager) func(*rayv1.RayCluster, string) (dashboardclient.RayDashboardClientInterface, error) {
	return func(*rayv1.RayCluster, string) (dashboardclient.RayDashboardClientInterface, error) {
		c := &dashboardclient.RayDashboardClient{}
		c.InitClient(&http.Client{Timeout: 2 * time.Second}, p.d.server.URL)
		return c, nil
	}
}

func (p dashboardProvider) GetHttpProxyClient(mgr manager.Manager) func(string, string, string, int) utils.RayHttpProxyClientInterface { //nolint:revive // KubeRay's interface names it so
	return utils.GetRayHttpProxyClientFunc(mgr, false)
}

// Dashboard is a loopback fake of Ray's job API (GET /api/jobs/<id>): a job the test has set
// is answered with Ray's recorded JobDetails (testdata/recorded/ray-job-info.json) carrying the
// job's id and status; any other is not found, as Ray answers for a job never submitted.
type Dashboard struct {
	server   *httptest.Server
	mu       sync.Mutex
	jobs     map[string]string
	recorded map[string]any
}

// NewDashboard starts the fake dashboard; it stops when the test ends.
func NewDashboard(t testing.TB) *Dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata", "recorded", "ray-job-info.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := &Dashboard{jobs: map[string]string{}}
	if err := json.Unmarshal(b, &d.recorded); err != nil {
		t.Fatal(err)
	}
	d.server = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.server.Close)
	return d
}

// SetJob makes the job with submission id exist with Ray status (RUNNING, FAILED,
// SUCCEEDED, STOPPED), as a submission and the job's own course would.
func (d *Dashboard) SetJob(id, status string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.jobs[id] = status
}

func (d *Dashboard) serve(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/api/jobs/")
	d.mu.Lock()
	status, known := d.jobs[id]
	d.mu.Unlock()
	if r.Method != http.MethodGet || !ok || !known {
		http.NotFound(w, r)
		return
	}
	info := map[string]any{}
	for k, v := range d.recorded {
		info[k] = v
	}
	info["submission_id"], info["status"] = id, status
	if status == "RUNNING" {
		delete(info, "end_time")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(info)
}
