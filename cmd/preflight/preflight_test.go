package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"gke-rl/cmd"
	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
)

// project is the answers of a fake project, each a recorded response under testdata/googleapis
// (sources in its SOURCES.md); an empty name answers 404 with the recorded not-found body.
type project struct {
	projectGet, services, region, reservation string
	// computeProject answers Compute Engine's projects.get (the all-regions quotas).
	computeProject string
	// limits, when set, replace the limits of the named metrics in the recorded region and
	// project: a boundary test sets one quota to exactly what a stack needs, or one short.
	limits map[string]float64
	// machineTypes answer machineTypes.get by the machine type's name.
	machineTypes map[string]string
	// denied are the permissions testIamPermissions leaves out of its answer.
	denied []string
	// skus answer the Cloud Billing Catalog's skus.list of Compute Engine by page token ("" the
	// first page); catalogServices its services.list, and lustreSKUs the skus.list of the
	// Managed Lustre service that list names.
	skus            map[string]string
	catalogServices string
	lustreSKUs      string
	// lustre answers Managed Lustre's instances.list of every location.
	lustre string
	// sharedReservation answers reservations.get in the project owner-rl, which shares one.
	sharedReservation string
	// hub answers the Hugging Face Hub's paths with recorded responses under
	// testdata/huggingface (SOURCES.md there); nil leaves the Hub's checks out. hubToken is the
	// HF_TOKEN preflight reads with.
	hub      map[string]string
	hubToken string
}

// catalog is the Compute Engine SKU list in three recorded pages (testdata/googleapis/SOURCES.md).
var catalog = map[string]string{
	"": "googleapis/preflight/cloudbilling-skus-page1-opencost-2023.json",
	"APKCS1HVa0YpwgyTFbqbJ1eGwzKZmsPwLqzMZPTSNia5ck1Hc54Tx_Kz3oBxwSnRIdGVxXoSPdf-XlDpyNBf4QuxKcIEgtrQ1LDLWAgZowI0ns7HjrGta2s=": "googleapis/preflight/cloudbilling-skus-page2-sc-crawler.json",
	"page3": "googleapis/preflight/cloudbilling-skus-page3-opencost-n4.json",
}

// ready is the smoke stack's project on the day it can run: everything enabled, granted and in
// quota.
var ready = project{
	projectGet:     "googleapis/cloudresourcemanager-project.json",
	services:       "googleapis/preflight/serviceusage-batchget-smoke-enabled.json",
	region:         "googleapis/preflight/compute-region-us-east1-b200.json",
	computeProject: "googleapis/preflight/compute-project-acme-rl.json",
	machineTypes: map[string]string{
		"a4-highgpu-8g":  "googleapis/preflight/compute-machinetype-a4-highgpu-8g.json",
		"n2-standard-16": "googleapis/preflight/compute-machinetype-n2-standard-16.json",
	},
	skus:            catalog,
	catalogServices: "googleapis/preflight/cloudbilling-services-assembled.json",
	lustreSKUs:      "googleapis/preflight/cloudbilling-skus-managed-lustre-assembled.json",
	lustre:          "googleapis/lustre-instances-list-empty.json",
}

// yours are the overrides that replace the shipped stacks' placeholders, as a user would.
var yours = []string{"--config", "gcp:project=acme-rl", "--config", "gke-rl:cluster.authorizedNetworks[0]=35.190.0.7/32"}

func (p project) handler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply := func(name, notFound string) {
			if name == "" {
				clitest.ReplyFile(t, w, http.StatusNotFound, notFound)
				return
			}
			status := http.StatusOK
			if strings.Contains(name, "error-403") {
				status = http.StatusForbidden
			}
			clitest.ReplyFile(t, w, status, name)
		}
		route := r.Method + " " + r.Host + r.URL.Path
		if r.Host == "huggingface.co" {
			replyHub(t, w, r, p)
			return
		}
		switch {
		case route == "GET cloudresourcemanager.googleapis.com/v1/projects/acme-rl":
			reply(p.projectGet, "")
		case route == "POST cloudresourcemanager.googleapis.com/v1/projects/acme-rl:testIamPermissions":
			// The method answers with the subset of the asked permissions the caller holds
			// (Resource Manager v1 reference, TestIamPermissionsResponse).
			var req struct{ Permissions []string }
			require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
			held := slices.DeleteFunc(req.Permissions, func(perm string) bool { return slices.Contains(p.denied, perm) })
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			_ = json.NewEncoder(w).Encode(map[string][]string{"permissions": held})
		case route == "GET serviceusage.googleapis.com/v1/projects/acme-rl/services:batchGet":
			reply(p.services, "")
		case strings.HasPrefix(route, "GET compute.googleapis.com/compute/v1/projects/acme-rl/regions/") && p.limits != nil:
			replyWithLimits(t, w, p.region, p.limits)
		case strings.HasPrefix(route, "GET compute.googleapis.com/compute/v1/projects/acme-rl/regions/"):
			reply(p.region, "")
		case route == "GET compute.googleapis.com/compute/v1/projects/acme-rl" && p.limits != nil:
			replyWithLimits(t, w, p.computeProject, p.limits)
		case route == "GET compute.googleapis.com/compute/v1/projects/acme-rl":
			reply(p.computeProject, "")
		case strings.HasPrefix(route, "GET compute.googleapis.com/compute/v1/projects/acme-rl/zones/") && strings.Contains(route, "/machineTypes/"):
			reply(p.machineTypes[path.Base(r.URL.Path)], "googleapis/preflight/compute-error-404-machinetype.json")
		case route == "GET lustre.googleapis.com/v1/projects/acme-rl/locations/-/instances":
			reply(p.lustre, "")
		case route == "GET cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus":
			assert.Equal(t, "USD", r.URL.Query().Get("currencyCode"), "list prices are asked in USD")
			page, ok := p.skus[r.URL.Query().Get("pageToken")]
			if !ok {
				page = "googleapis/preflight/cloudbilling-error-403-disabled.json"
			}
			reply(page, "")
		case route == "GET cloudbilling.googleapis.com/v1/services":
			reply(p.catalogServices, "")
		case route == "GET cloudbilling.googleapis.com/v1/services/0000-0000-1057/skus":
			assert.Equal(t, "USD", r.URL.Query().Get("currencyCode"), "list prices are asked in USD")
			reply(p.lustreSKUs, "")
		case strings.HasPrefix(route, "GET compute.googleapis.com/compute/v1/projects/acme-rl/zones/") && strings.Contains(route, "/reservations/"):
			reply(p.reservation, "googleapis/preflight/compute-error-404-reservation.json")
		case strings.HasPrefix(route, "GET compute.googleapis.com/compute/v1/projects/owner-rl/zones/") && strings.Contains(route, "/reservations/"):
			reply(p.sharedReservation, "googleapis/preflight/compute-error-404-reservation.json")
		default:
			t.Errorf("preflight made a call no check makes: %s", route)
			w.WriteHeader(http.StatusNotImplemented)
		}
	})
}

// replyWithLimits answers a recorded region or project with the limits of some of its quotas
// replaced; the finding's "limit <n>" shows a test that the replacement was read.
func replyWithLimits(t *testing.T, w http.ResponseWriter, name string, limits map[string]float64) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "testdata", name))
	require.NoError(t, err)
	var resource map[string]any
	require.NoError(t, json.Unmarshal(body, &resource))
	for _, q := range resource["quotas"].([]any) {
		q := q.(map[string]any)
		if limit, ok := limits[q["metric"].(string)]; ok {
			q["limit"] = limit
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	assert.NoError(t, json.NewEncoder(w).Encode(resource))
}

// preflight runs `go run . preflight` on the shipped stacks against the fake project, through
// the production clients (Google's host names and paths), and returns the exit status, the
// output and the calls made.
func preflight(t *testing.T, p project, args ...string) (int, string, []clitest.Call) {
	t.Helper()
	g := clitest.NewGoogle(t, p.handler(t))
	var stdout, stderr bytes.Buffer
	code := run(args, plantest.Env(plantest.RepoRoot(), &stdout, &stderr), func(ctx context.Context, project string) (*Clients, error) {
		c, err := NewClients(ctx, option.WithHTTPClient(g.HTTPClient()))
		if err == nil && p.hub != nil {
			c.Hub = &Hub{Endpoint: HubEndpoint, Token: p.hubToken, HTTP: g.HTTPClient()}
		}
		return c, err
	})
	return code, stdout.String() + stderr.String(), g.Calls()
}

// finding is the line of one check in Write's table ("  STATUS  CHECK         DETAIL"), trimmed.
func finding(t *testing.T, out, check string) string {
	t.Helper()
	if i := findingLine(out, check); i >= 0 {
		return strings.TrimSpace(strings.Split(out, "\n")[i])
	}
	t.Fatalf("no %q finding in:\n%s", check, out)
	return ""
}

// fixOf is the fix line under one check's finding, trimmed.
func fixOf(t *testing.T, out, check string) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	if i := findingLine(out, check); i >= 0 && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "fix: ") {
		return strings.TrimSpace(lines[i+1])
	}
	t.Fatalf("no fix under the %q finding in:\n%s", check, out)
	return ""
}

func findingLine(out, check string) int {
	for i, line := range strings.Split(out, "\n") {
		if len(line) > 22 && strings.TrimSpace(line[8:20]) == check {
			return i
		}
	}
	return -1
}

func TestSmokeReadyPassesEveryCheckReadOnly(t *testing.T) {
	code, out, calls := preflight(t, ready, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, finding(t, out, CheckProject), "acme-rl (number 123456789012) is ACTIVE")
	assert.Contains(t, finding(t, out, CheckAPIs), "the 9 services up uses are enabled")
	assert.Contains(t, finding(t, out, CheckMachineType), "us-east1-b offers a4-highgpu-8g for the GPU nodes (224 vCPUs, 3968 GiB, 8 × nvidia-b200) and n2-standard-16 for the CPU pool (16 vCPUs, 64 GiB, no GPU)")
	assert.Contains(t, finding(t, out, CheckQuota), "PREEMPTIBLE_NVIDIA_B200_GPUS in us-east1: limit 64, in use 0, 64 free; the run needs 8")
	assert.Contains(t, finding(t, out, CheckReservation), "skip  reservation   gpu.provisioning is spot")
	assert.Contains(t, finding(t, out, CheckPermissions), "you hold the 29 permissions up uses")
	assert.Contains(t, out, "every check passed")

	// Read-only: every call is a get or a list, but for testIamPermissions, which is a POST
	// that changes nothing; and these are the production clients' real addresses.
	var got []string
	for _, c := range calls {
		got = append(got, c.String())
	}
	assert.Equal(t, []string{
		"GET cloudresourcemanager.googleapis.com/v1/projects/acme-rl",
		"GET serviceusage.googleapis.com/v1/projects/acme-rl/services:batchGet",
		"GET compute.googleapis.com/compute/v1/projects/acme-rl/zones/us-east1-b/machineTypes/a4-highgpu-8g",
		"GET compute.googleapis.com/compute/v1/projects/acme-rl/zones/us-east1-b/machineTypes/n2-standard-16",
		"GET compute.googleapis.com/compute/v1/projects/acme-rl/regions/us-east1",
		"GET compute.googleapis.com/compute/v1/projects/acme-rl",
		"POST cloudresourcemanager.googleapis.com/v1/projects/acme-rl:testIamPermissions",
	}, got)
}

func TestJSONIsTheFindings(t *testing.T) {
	code, out, _ := preflight(t, ready, append([]string{"--stack", "smoke", "--json"}, yours...)...)
	require.Equal(t, cmd.ExitOK, code, out)
	var findings []map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &findings), out)
	require.Len(t, findings, 11)
	assert.Equal(t, map[string]string{"check": CheckReservation, "status": "skip", "detail": "gpu.provisioning is spot"}, findings[8])
	assert.Equal(t, map[string]string{"check": CheckLustre, "status": "skip", "detail": "storage.type is not lustre"}, findings[9])
	assert.Regexp(t, `^\[\n  \{\n    "check": "project",\n    "status": "ok",\n    "detail": `, out, "each finding's fields in order, its name first")
}

func TestUnreadableProjectSkipsTheRest(t *testing.T) {
	p := ready
	p.projectGet = "googleapis/preflight/cloudresourcemanager-error-403.json"
	code, out, calls := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckProject), "FAIL  project       acme-rl cannot be read with your credentials: The caller does not have permission (HTTP 403)")
	assert.Contains(t, fixOf(t, out, CheckProject), "`gcloud projects describe acme-rl`")
	assert.Contains(t, finding(t, out, CheckQuota), "skip  gpu quota     the project could not be read")
	assert.Len(t, calls, 1)
}

func TestDisabledAPIsAreNamedWithTheCommandThatEnablesThem(t *testing.T) {
	p := ready
	p.services = "googleapis/preflight/serviceusage-batchget-smoke-new-project.json"
	code, out, calls := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckAPIs), "5 of the 9 services up uses are not enabled: artifactregistry.googleapis.com, compute.googleapis.com, container.googleapis.com, containerfilesystem.googleapis.com, iam.googleapis.com")
	assert.Contains(t, fixOf(t, out, CheckAPIs), "`gcloud services enable artifactregistry.googleapis.com compute.googleapis.com container.googleapis.com containerfilesystem.googleapis.com iam.googleapis.com --project acme-rl`")
	// Without Compute Engine its checks are not asked (they would only fail the same way).
	assert.Contains(t, finding(t, out, CheckMachineType), "skip  machine type  the Compute Engine API is not enabled")
	for _, c := range calls {
		assert.NotEqual(t, "compute.googleapis.com", c.Host, c.String())
	}
	assert.Contains(t, finding(t, out, CheckPermissions), "ok    permissions")
}

func TestZoneThatDoesNotOfferTheMachineTypeToTheProject(t *testing.T) {
	p := ready
	p.machineTypes = map[string]string{"n2-standard-16": ready.machineTypes["n2-standard-16"]}
	code, out, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckMachineType), "FAIL  machine type  us-east1-b does not offer a4-highgpu-8g (the GPU nodes, gpu.type) to acme-rl")
	assert.Contains(t, fixOf(t, out, CheckMachineType), "`gcloud compute machine-types list --filter=name=a4-highgpu-8g --project acme-rl --format='value(zone)'` lists the zones that do")
}

// A mistyped cluster.cpuMachineType fails here, not at the CPU pool after the cluster's minutes;
// Autopilot, without a CPU pool, does not ask for it.
func TestCPUMachineTypeIsAskedInStandardMode(t *testing.T) {
	code, out, _ := preflight(t, ready, append([]string{"--stack", "smoke", "--config", "gke-rl:cluster.cpuMachineType=n2-standard-17"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckMachineType), "us-east1-b does not offer n2-standard-17 (the CPU pool, cluster.cpuMachineType) to acme-rl")

	code, out, calls := preflight(t, ready, append([]string{"--stack", "smoke", "--config", "gke-rl:cluster.mode=autopilot"}, yours...)...)
	assert.Equal(t, cmd.ExitOK, code, out)
	for _, c := range calls {
		assert.NotContains(t, c.Path, "n2-standard", "Autopilot has no CPU pool to ask about")
	}
}

func TestNoGPUQuotaInTheRegion(t *testing.T) {
	p := ready
	p.region = "googleapis/preflight/compute-region-us-east1-no-b200.json"
	code, out, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckQuota), "FAIL  gpu quota     us-east1 has no PREEMPTIBLE_NVIDIA_B200_GPUS quota: the project holds none of it, and the run needs 8 (1 node × 8 GPUs)")
	assert.Contains(t, fixOf(t, out, CheckQuota), "request PREEMPTIBLE_NVIDIA_B200_GPUS in us-east1 at https://console.cloud.google.com/iam-admin/quotas?project=acme-rl")
}

// A read the caller may not make fails its check with the API's own message and names the role
// that holds the permission; the other checks are still asked.
func TestAReadYouMayNotMakeNamesTheRole(t *testing.T) {
	p := ready
	p.region = "googleapis/preflight/compute-error-403-regions.json"
	code, out, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckQuota), "FAIL  gpu quota     the quotas of us-east1 cannot be read: Required 'compute.regions.get' permission for 'projects/acme-rl/regions/us-east1' (HTTP 403)")
	assert.Equal(t, "fix: reading it takes compute.regions.get: have roles/compute.viewer (or another role that holds it) granted at https://console.cloud.google.com/iam-admin/iam?project=acme-rl", fixOf(t, out, CheckQuota))
	assert.Contains(t, finding(t, out, CheckMachineType), "ok    machine type")
	assert.Contains(t, finding(t, out, CheckPermissions), "ok    permissions")
}

// At the boundary: a run that needs exactly what is free passes (64 of 64), one node more fails.
func TestQuotaExactlyEnoughPasses(t *testing.T) {
	p := ready
	p.region = "googleapis/preflight/compute-region-us-east1-b200-in-use.json"
	// 56 free: 7 nodes need exactly 56 (a batch of 56 prompts × 4 divides over 56 GPUs), 8 nodes
	// need 64.
	_, out, _ := preflight(t, p, append([]string{"--stack", "smoke", "--config", "gke-rl:gpu.nodes=7", "--config", "gke-rl:job.promptsPerStep=56"}, yours...)...)
	assert.Contains(t, finding(t, out, CheckQuota), "ok    gpu quota     PREEMPTIBLE_NVIDIA_B200_GPUS in us-east1: limit 64, in use 8, 56 free; the run needs 56", out)
	_, out, _ = preflight(t, p, append([]string{"--stack", "smoke", "--config", "gke-rl:gpu.nodes=8"}, yours...)...)
	assert.Contains(t, finding(t, out, CheckQuota), "FAIL  gpu quota     PREEMPTIBLE_NVIDIA_B200_GPUS in us-east1: limit 64, in use 8, 56 free; the run needs 64 (8 nodes × 8 GPUs)")
}

func TestQuotaInUseLeavesTooFewGPUs(t *testing.T) {
	p := ready
	p.region = "googleapis/preflight/compute-region-us-east1-b200-in-use.json"
	// b200-spot's 8 nodes while smoke's one node runs: 56 of 64 free.
	code, out, _ := preflight(t, p, append([]string{"--stack", "b200-spot"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckQuota), "PREEMPTIBLE_NVIDIA_B200_GPUS in us-east1: limit 64, in use 8, 56 free; the run needs 64 (8 nodes × 8 GPUs)")
	// The same quota passes smoke, which needs 8.
	code, out, _ = preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitOK, code, out)
}

// The run's nodes decide pass or fail; what the autoscaler may add beyond them is said, not
// failed.
func TestQuotaNamesWhatTheAutoscalerCouldNotAdd(t *testing.T) {
	code, out, _ := preflight(t, ready, append([]string{"--stack", "smoke", "--config", "gke-rl:gpu.maxNodes=9"}, yours...)...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, finding(t, out, CheckQuota), "64 free; the run needs 8 (the autoscaler's gpu.maxNodes=9 would need 72)")
	_, out, _ = preflight(t, ready, append([]string{"--stack", "smoke"}, yours...)...)
	assert.NotContains(t, finding(t, out, CheckQuota), "autoscaler")
}

// On demand (offered for A3 Ultra, not for A4), the run draws on the GPU's own quota, which
// the recorded region lacks.
func TestOnDemandDrawsOnTheGPUsOwnQuota(t *testing.T) {
	p := ready
	p.machineTypes = map[string]string{
		"a3-ultragpu-8g": "googleapis/preflight/compute-machinetype-a3-ultragpu-8g.json",
		"n2-standard-16": "googleapis/preflight/compute-machinetype-n2-standard-16.json",
	}
	code, out, _ := preflight(t, p, append([]string{"--stack", "smoke", "--config", "gke-rl:gpu.type=h200", "--config", "gcp:region=us-south1",
		"--config", "gke-rl:zone=us-south1-b", "--config", "gke-rl:gpu.provisioning=on-demand"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckQuota), "us-south1 has no NVIDIA_H200_GPUS quota")
}

// reserved is h200-reserved moved to the reservation of Google's docs: two A3 Ultra machines in
// europe-west4-b (a zone the offline table lacks, which a reservation only warns about).
var reserved = []string{"--stack", "h200-reserved", "--config", "gcp:region=europe-west4", "--config", "gke-rl:zone=europe-west4-b",
	"--config", "gke-rl:gpu.reservation=example-reservation"}

func reservedProject(reservation string) project {
	return project{
		projectGet: "googleapis/cloudresourcemanager-project.json",
		services:   "googleapis/preflight/serviceusage-batchget-smoke-enabled.json",
		// The region's quotas are read for the CPU pool; the answer is the recorded us-east1's.
		region: "googleapis/preflight/compute-region-us-east1-b200.json",
		machineTypes: map[string]string{
			"a3-ultragpu-8g": "googleapis/preflight/compute-machinetype-a3-ultragpu-8g.json",
			"n2-standard-16": "googleapis/preflight/compute-machinetype-n2-standard-16.json",
		},
		reservation: reservation,
	}
}

func TestReservationThatFits(t *testing.T) {
	code, out, calls := preflight(t, reservedProject("googleapis/preflight/compute-reservation-a3-ultragpu-8g.json"), append(reserved, yours...)...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, finding(t, out, CheckReservation), `ok    reservation   reservation "example-reservation" in europe-west4-b: 2 × a3-ultragpu-8g, 0 in use`)
	for _, check := range []string{CheckQuota, CheckGlobalGPUs, CheckLocalSSD} {
		assert.Contains(t, finding(t, out, check), "a reservation's capacity comes with its own quota")
	}
	// The CPU pool is not in the reservation: its quotas are asked.
	assert.Contains(t, finding(t, out, CheckCPUQuota), "ok    cpu quota     N2_CPUS in europe-west4")
	assert.Contains(t, calls[len(calls)-2].String(), "GET compute.googleapis.com/compute/v1/projects/acme-rl/zones/europe-west4-b/reservations/example-reservation")
}

func TestReservationOfAnotherMachineTypeAndTooFewFree(t *testing.T) {
	code, out, _ := preflight(t, reservedProject("googleapis/preflight/compute-reservation-a4x-highgpu-4g.json"), append(reserved, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	line := finding(t, out, CheckReservation)
	assert.Contains(t, line, "it holds a4x-highgpu-4g, and gpu.type needs a3-ultragpu-8g")
	assert.Contains(t, line, "1 of its 36 machines are free (35 in use), and gpu.nodes is 2")
}

func TestMissingReservationNamesTheCommandThatFindsIt(t *testing.T) {
	code, out, _ := preflight(t, reservedProject(""), append(reserved, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckReservation), `acme-rl has no reservation "example-reservation" in europe-west4-b`)
	assert.Contains(t, fixOf(t, out, CheckReservation), "`gcloud compute reservations list --project acme-rl --filter=name=example-reservation`")
}

// A reservation that another project shares is named by its full name, which GKE's reservation
// affinity takes as it is, and read in the project that owns it.
func TestSharedReservationIsReadInItsOwnersProject(t *testing.T) {
	shared := []string{"--stack", "h200-reserved", "--config", "gcp:region=europe-west4", "--config", "gke-rl:zone=europe-west4-b",
		"--config", "gke-rl:gpu.reservation=projects/owner-rl/reservations/example-reservation"}
	p := reservedProject("")
	p.sharedReservation = "googleapis/preflight/compute-reservation-a3-ultragpu-8g-shared.json"
	code, out, calls := preflight(t, p, append(shared, yours...)...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, finding(t, out, CheckReservation), `ok    reservation   reservation "example-reservation" of owner-rl in europe-west4-b: 2 × a3-ultragpu-8g, 0 in use`)
	var asked []string
	for _, c := range calls {
		if strings.Contains(c.String(), "/reservations/") {
			asked = append(asked, c.String())
		}
	}
	assert.Equal(t, []string{"GET compute.googleapis.com/compute/v1/projects/owner-rl/zones/europe-west4-b/reservations/example-reservation"}, asked)

	// The owner's reservation that is not shared (LOCAL) is refused, naming its share settings.
	p.sharedReservation = "googleapis/preflight/compute-reservation-a3-ultragpu-8g.json"
	code, out, _ = preflight(t, p, append(shared, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckReservation), "owner-rl does not share it with acme-rl (shareSettings: LOCAL)")

	p.sharedReservation = ""
	code, out, _ = preflight(t, p, append(shared, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckReservation), `owner-rl has no reservation "example-reservation" in europe-west4-b`)
	assert.Contains(t, fixOf(t, out, CheckReservation), "`gcloud compute reservations list --project owner-rl --filter=name=example-reservation`")
}

func TestSplitReservation(t *testing.T) {
	for in, want := range map[string][2]string{
		"r":                                {"acme-rl", "r"},
		"r/reservationBlocks/b":            {"acme-rl", "r"},
		"projects/owner-rl/reservations/r": {"owner-rl", "r"},
		"projects/owner-rl/reservations/r/reservationBlocks/b": {"owner-rl", "r"},
	} {
		owner, name := SplitReservation("acme-rl", in)
		assert.Equal(t, want, [2]string{owner, name}, in)
	}
}

func TestMissingPermissionsAreNamed(t *testing.T) {
	p := ready
	// A deployer with roles/container.developer instead of container.admin, and without
	// roles/iam.serviceAccountUser.
	p.denied = []string{"container.clusters.create", "iam.serviceAccounts.actAs"}
	code, out, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckPermissions), "you lack 2 of the 29 permissions up uses: container.clusters.create, iam.serviceAccounts.actAs")
	assert.Contains(t, fixOf(t, out, CheckPermissions), "README's Prerequisites")
}

func TestPlaceholdersAreRefusedBeforeAnyCall(t *testing.T) {
	code, out, calls := preflight(t, ready, "--stack", "smoke")
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, out, "placeholder: gcp:project:")
	assert.Contains(t, out, "error: replace the project's and the reservation's placeholders first")
	assert.Empty(t, calls)

	// The workstation's address is not asked about: its placeholder is named, not refused.
	code, out, _ = preflight(t, ready, "--stack", "smoke", "--config", "gcp:project=acme-rl")
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, out, "placeholder: cluster.authorizedNetworks[0]:")
}

func TestRefusedConfigurationIsNotAsked(t *testing.T) {
	code, out, calls := preflight(t, ready, append([]string{"--stack", "smoke", "--config", "gke-rl:gpu.nodes=0"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, out, "error: gpu.nodes:")
	assert.Empty(t, calls)
}

func TestWithoutCredentialsNothingIsAsked(t *testing.T) {
	// The production clients, with no Application Default Credentials anywhere.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	t.Setenv("GCE_METADATA_HOST", "")
	t.Setenv("NO_GCE_CHECK", "true") // not on GCE: cloud.google.com/go/auth's detection skips the metadata server
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"--stack", "smoke"}, yours...), plantest.Env(plantest.RepoRoot(), &stdout, &stderr))
	if code != cmd.ExitCannotAsk {
		t.Fatalf("exit %d, want %d (cannot ask):\n%s%s", code, cmd.ExitCannotAsk, stdout.String(), stderr.String())
	}
	assert.Contains(t, stderr.String(), "`gcloud auth application-default login`")
}

// Offline, preflight says the network is missing, not the login.
func TestWithoutNetworkPreflightSaysSo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	unreachable := func(ctx context.Context, project string) (*Clients, error) {
		// A port nothing listens on: the connection is refused, as with no route.
		return NewClients(ctx, option.WithEndpoint("http://127.0.0.1:1/"), option.WithoutAuthentication())
	}
	code := run(append([]string{"--stack", "smoke"}, yours...), plantest.Env(plantest.RepoRoot(), &stdout, &stderr), unreachable)
	require.Equal(t, cmd.ExitCannotAsk, code, stderr.String())
	assert.Contains(t, stderr.String(), "Google's APIs do not answer from this machine")
	assert.NotContains(t, stderr.String(), "gcloud auth application-default login")
}

func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, cmd.ExitUsage, run(nil, plantest.Env(plantest.RepoRoot(), &stdout, &stderr), nil))
	assert.Contains(t, stderr.String(), "usage: go run . preflight --stack NAME")
	stdout.Reset()
	assert.Equal(t, cmd.ExitOK, run([]string{"--help"}, plantest.Env(plantest.RepoRoot(), &stdout, &stderr), nil))
	assert.Contains(t, stdout.String(), "read-only")
	assert.Contains(t, stdout.String(), "the quotas it draws on (GPUs in the region and in all regions, the CPU pool's vCPUs, SSD, local SSD)", "--help names every quota preflight checks")
	assert.Equal(t, cmd.ExitUsage, run([]string{"--stack", "nosuch"}, plantest.Env(plantest.RepoRoot(), &stdout, &stderr), nil))
}

// Every quota `up` draws on besides the region's GPUs, at its boundary on the smoke stack (one
// spot A4 node with 32 local SSDs, one n2-standard-16 CPU node with a 300 GB pd-balanced boot
// disk): exactly enough free passes, one short fails and names the quota to request.
func TestEveryQuotaAtItsBoundary(t *testing.T) {
	for _, tc := range []struct {
		check, metric string
		// enough is the limit that leaves exactly what smoke needs free (the recorded usage
		// plus the need).
		enough float64
		need   int
		pass   string
	}{
		{CheckQuota, "PREEMPTIBLE_NVIDIA_B200_GPUS", 8, 8, "PREEMPTIBLE_NVIDIA_B200_GPUS in us-east1: limit 8, in use 0, 8 free; the run needs 8"},
		{CheckGlobalGPUs, "GPUS_ALL_REGIONS", 8, 8, "GPUS_ALL_REGIONS in all regions: limit 8, in use 0, 8 free; the run needs 8"},
		{CheckCPUQuota, "N2_CPUS", 16, 16, "N2_CPUS in us-east1: limit 16, in use 0, 16 free; the run needs 16 (the CPU pool's autoscaler at its 3 nodes would need 48)"},
		{CheckSSDQuota, "SSD_TOTAL_GB", 896 + 300, 300, "SSD_TOTAL_GB in us-east1: limit 1196, in use 896, 300 free; the run needs 300 (the CPU pool's autoscaler at its 3 nodes would need 900)"},
		{CheckLocalSSD, "PREEMPTIBLE_LOCAL_SSD_GB", 12000, 12000, "PREEMPTIBLE_LOCAL_SSD_GB in us-east1: limit 12000, in use 0, 12000 free; the run needs 12000"},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			p := ready
			p.limits = map[string]float64{tc.metric: tc.enough}
			code, out, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
			assert.Equal(t, cmd.ExitOK, code, out)
			assert.Contains(t, finding(t, out, tc.check), "ok    "+tc.check)
			assert.Contains(t, finding(t, out, tc.check), tc.pass)

			p.limits = map[string]float64{tc.metric: tc.enough - 1}
			code, out, _ = preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
			assert.Equal(t, cmd.ExitCheckFailed, code, out)
			assert.Contains(t, finding(t, out, tc.check), "FAIL  "+tc.check)
			assert.Contains(t, finding(t, out, tc.check), fmt.Sprintf("%d free; the run needs %d (", tc.need-1, tc.need))
			assert.Contains(t, fixOf(t, out, tc.check), "request "+tc.metric+" in ")
		})
	}
}

// A new project holds no GPU in any region (Compute Engine's default GPUS_ALL_REGIONS is 0):
// the regional quota alone does not let a GPU node start.
func TestNewProjectHasNoGPUsInAnyRegion(t *testing.T) {
	p := ready
	p.computeProject = "googleapis/preflight/compute-project-acme-rl-new.json"
	code, out, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckQuota), "ok    gpu quota")
	assert.Contains(t, finding(t, out, CheckGlobalGPUs), "FAIL  global gpus   GPUS_ALL_REGIONS in all regions: limit 0, in use 0, 0 free; the run needs 8 (1 node × 8 GPUs)")
	assert.Contains(t, fixOf(t, out, CheckGlobalGPUs), "request GPUS_ALL_REGIONS in all regions at https://console.cloud.google.com/iam-admin/quotas?project=acme-rl")
}

// Spot nodes draw on the preemptible local SSD quota only where the project holds some; where
// it holds none, on the standard quota, which the recorded region's 10000 GB do not cover for
// one A4 node's 32 disks.
func TestSpotLocalSSDWithoutPreemptibleQuotaDrawsOnTheStandardOne(t *testing.T) {
	p := ready
	p.limits = map[string]float64{"PREEMPTIBLE_LOCAL_SSD_GB": 0}
	code, out, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckLocalSSD), "FAIL  local ssd     LOCAL_SSD_TOTAL_GB in us-east1: limit 10000, in use 0, 10000 free; the run needs 12000 (1 node × 12000 GB)")
}

// The b200-spot stack's 8 nodes while smoke's one runs: the GPUs and the local SSDs its node
// holds leave too few of each.
func TestAnotherStacksNodeHoldsLocalSSDQuota(t *testing.T) {
	p := ready
	p.region = "googleapis/preflight/compute-region-us-east1-b200-in-use.json"
	code, out, _ := preflight(t, p, append([]string{"--stack", "b200-spot", "--config", "gcp:region=us-east1", "--config", "gke-rl:zone=us-east1-b"}, yours...)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckLocalSSD), "PREEMPTIBLE_LOCAL_SSD_GB in us-east1: limit 96000, in use 12000, 84000 free; the run needs 96000 (8 nodes × 12000 GB)")
}

// Autopilot has no CPU pool of the stack's: its CPU and boot disk quotas are not the stack's to
// count.
func TestAutopilotSkipsTheCPUPoolsQuotas(t *testing.T) {
	_, out, _ := preflight(t, ready, append([]string{"--stack", "smoke", "--config", "gke-rl:cluster.mode=autopilot"}, yours...)...)
	assert.Contains(t, finding(t, out, CheckCPUQuota), "skip  cpu quota     Autopilot has no CPU pool")
	assert.Contains(t, finding(t, out, CheckSSDQuota), "skip  ssd quota     Autopilot has no CPU pool")
	assert.Contains(t, finding(t, out, CheckLocalSSD), "ok    local ssd")
}

func TestCPUFamilyMetric(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "testdata", ready.region))
	require.NoError(t, err)
	var region struct{ Quotas []*compute.Quota }
	require.NoError(t, json.Unmarshal(body, &region))
	assert.Equal(t, "N2_CPUS", CPUFamilyMetric(region.Quotas, "n2-standard-16"))
	// The recorded region has no family quota of N2D or N1 machines: they draw on CPUS.
	assert.Equal(t, "CPUS", CPUFamilyMetric(region.Quotas, "n2d-standard-16"))
	assert.Equal(t, "CPUS", CPUFamilyMetric(region.Quotas, "n1-standard-16"))
}
