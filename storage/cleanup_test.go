package storage_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/storage"
	"gke-rl/test/clitest"
)

// psaAPI is a fake of the Google APIs the PSA cleanup reaches through the real gcloud: Compute
// (the network and its peerings), Resource Manager (the project number), Service Networking (the
// connection) and Managed Lustre (instances left on the network). Bodies are the recorded
// responses under testdata/googleapis (see SOURCES.md there).
type psaAPI struct {
	t  *testing.T
	mu sync.Mutex
	// peering is on the network until a delete succeeds.
	peering bool
	// producerRefusals is how many deleteConnection calls fail with "still using this connection".
	producerRefusals int
	// lustreLeft keeps an instance on the network.
	lustreLeft bool
	// forbidden answers the network listing with 403.
	forbidden bool
}

const psaProject = "/compute/v1/projects/acme-rl/global"

func (a *psaAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	reply := func(status int, file string) { clitest.ReplyFile(a.t, w, status, "googleapis/"+file) }
	route := r.Method + " " + r.Host + r.URL.Path
	raw, _ := io.ReadAll(r.Body)
	body := string(raw)
	switch {
	case route == "GET compute.googleapis.com"+psaProject+"/networks":
		switch {
		case a.forbidden:
			reply(http.StatusForbidden, "compute-error-403.json")
		case a.peering:
			reply(http.StatusOK, "compute-networks-list-peering.json")
		default:
			reply(http.StatusOK, "compute-networks-list-no-peering.json")
		}
	case route == "GET compute.googleapis.com"+psaProject+"/networks/ray-a4-gpu-spot-net":
		if a.peering {
			reply(http.StatusOK, "compute-network-peering.json")
		} else {
			reply(http.StatusOK, "compute-network-no-peering.json")
		}
	case route == "POST compute.googleapis.com"+psaProject+"/networks/ray-a4-gpu-spot-net/removePeering":
		if !strings.Contains(body, `"name": "servicenetworking-googleapis-com"`) {
			a.t.Errorf("removePeering of another peering: %s", body)
		}
		a.peering = false
		reply(http.StatusOK, "compute-operation-removepeering-done.json")
	case strings.HasPrefix(route, "GET compute.googleapis.com"+psaProject+"/operations/"),
		strings.HasPrefix(route, "POST compute.googleapis.com"+psaProject+"/operations/"):
		reply(http.StatusOK, "compute-operation-removepeering-done.json")
	case route == "GET cloudresourcemanager.googleapis.com/v1/projects/acme-rl":
		reply(http.StatusOK, "cloudresourcemanager-project.json")
	// gcloud 528 posts deleteConnection to the connection's name, `connections/-`, with the
	// consumer network (by project number) in the body; the discovery document's path is v1/{+name}.
	case route == "POST servicenetworking.googleapis.com"+deleteConnection:
		if !strings.Contains(body, `"consumerNetwork": "projects/123456789012/global/networks/ray-a4-gpu-spot-net"`) {
			a.t.Errorf("deleteConnection for another network: %s", body)
		}
		if a.producerRefusals > 0 {
			a.producerRefusals--
			reply(http.StatusOK, "servicenetworking-operation-producer-error.json")
			return
		}
		a.peering = false
		reply(http.StatusOK, "servicenetworking-operation-done.json")
	// gcloud polls the operation it got back, done or not.
	case route == "GET servicenetworking.googleapis.com/v1/operations/pssn.p24-123456789012-7c6b5a49-3827-4165-a0f9-e8d7c6b5a493":
		reply(http.StatusOK, "servicenetworking-operation-producer-error.json")
	case route == "GET servicenetworking.googleapis.com/v1/operations/pssn.p24-123456789012-0f3a1c2b-9d8e-47a1-b2c3-d45e6f7a8b9c":
		reply(http.StatusOK, "servicenetworking-operation-done.json")
	case route == "GET lustre.googleapis.com/v1/projects/acme-rl/locations/-/instances":
		if a.lustreLeft {
			reply(http.StatusOK, "lustre-instances-list.json")
		} else {
			reply(http.StatusOK, "lustre-instances-list-empty.json")
		}
	default:
		a.t.Errorf("the fake API does not know %s (%s)", route, r.RequestURI)
		w.WriteHeader(http.StatusNotFound)
	}
}

// runCleanup runs the shipped cleanup script with the real gcloud against api and returns what
// it did and the API calls it made, one "METHOD host/path" a call.
func runCleanup(t *testing.T, api *psaAPI, attempts string) (clitest.Result, []string) {
	t.Helper()
	api.t = t
	clitest.Tool(t, "gcloud")
	google := clitest.NewGoogle(t, api)
	env := append(google.GcloudEnv(t), "PROJECT=acme-rl", "NETWORK=ray-a4-gpu-spot-net", "ATTEMPTS="+attempts, "RETRY_SECONDS=0")
	res := clitest.RunScript(t, storage.PeeringCleanupScript, env...)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	var calls []string
	for _, c := range google.Calls() {
		calls = append(calls, c.String())
	}
	return res, calls
}

const (
	listNetworks     = "GET compute.googleapis.com" + psaProject + "/networks"
	projectNumber    = "GET cloudresourcemanager.googleapis.com/v1/projects/acme-rl"
	listLustre       = "GET lustre.googleapis.com/v1/projects/acme-rl/locations/-/instances"
	removePeering    = "POST compute.googleapis.com" + psaProject + "/networks/ray-a4-gpu-spot-net/removePeering"
	deleteConnection = "/v1/services/servicenetworking.googleapis.com/connections/-"
)

func count(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func TestPeeringCleanupDeletesTheConnection(t *testing.T) {
	res, calls := runCleanup(t, &psaAPI{peering: true, producerRefusals: 2}, "40")
	require.Equal(t, 0, res.Code)
	assert.Equal(t, 3, count(calls, "POST servicenetworking.googleapis.com"+deleteConnection), "retried while the producer held the range")
	assert.Zero(t, count(calls, removePeering), "the service's own delete succeeded")
	assert.Zero(t, count(calls, listLustre))
	assert.Equal(t, listNetworks, calls[0], "it reads the network first")
	assert.Contains(t, res.Stderr, "attempt 2 of 40: the producer still holds the range")
}

func TestPeeringCleanupFallsBackOnlyWithoutLustre(t *testing.T) {
	api := &psaAPI{peering: true, producerRefusals: 1000}
	res, calls := runCleanup(t, api, "3")
	require.Equal(t, 0, res.Code)
	assert.Equal(t, 3, count(calls, "POST servicenetworking.googleapis.com"+deleteConnection))
	require.Equal(t, 1, count(calls, removePeering))
	assert.Less(t, slices.Index(calls, listLustre), slices.Index(calls, removePeering),
		"after the retries it looks for Lustre instances, then removes the peering from the VPC's side")
	assert.Greater(t, slices.Index(calls, listLustre), slices.IndexFunc(calls, func(c string) bool { return c == "POST servicenetworking.googleapis.com"+deleteConnection }))
	assert.False(t, api.peering)
}

func TestPeeringCleanupNeverCutsOffALiveInstance(t *testing.T) {
	api := &psaAPI{peering: true, producerRefusals: 1000, lustreLeft: true}
	res, calls := runCleanup(t, api, "2")
	assert.Equal(t, 1, res.Code)
	assert.Zero(t, count(calls, removePeering))
	assert.True(t, api.peering)
	assert.Contains(t, res.Stderr, "Managed Lustre instances still use it")
	assert.Contains(t, res.Stderr, "projects/acme-rl/locations/us-east1-b/instances/ray-a4-gpu-spot-lustre")
}

func TestPeeringCleanupWhenThePeeringIsGone(t *testing.T) {
	res, calls := runCleanup(t, &psaAPI{}, "40")
	require.Equal(t, 0, res.Code)
	assert.Equal(t, []string{listNetworks}, calls)
	assert.Contains(t, res.Stdout, "no servicenetworking-googleapis-com peering left on ray-a4-gpu-spot-net")
}

func TestPeeringCleanupFailsWhenGcloudCannotReadTheNetwork(t *testing.T) {
	res, calls := runCleanup(t, &psaAPI{peering: true, forbidden: true}, "40")
	assert.NotEqual(t, 0, res.Code)
	assert.Equal(t, []string{listNetworks}, calls, "nothing is deleted")
	assert.Contains(t, res.Stderr, "Required 'compute.networks.list' permission", "gcloud's own error")
	assert.NotContains(t, res.Stdout, "no servicenetworking-googleapis-com peering left")
}
