package preflight

import (
	"testing"

	"gke-rl/cmd"

	"github.com/stretchr/testify/assert"
)

// withLustre is the b200-spot stack's project (Managed Lustre and Service Networking enabled)
// with the given answer of instances.list.
func withLustre(list string) project {
	p := ready
	p.services = "googleapis/preflight/serviceusage-batchget-b200-spot-enabled.json"
	p.lustre = list
	return p
}

var b200Spot = append([]string{"--stack", "b200-spot"}, yours...)

func TestLustreWithRoomForTheInstance(t *testing.T) {
	code, out, _ := preflight(t, withLustre("googleapis/lustre-instances-list-empty.json"), b200Spot...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, finding(t, out, CheckLustre), "ok    lustre        the project has 0 other Managed Lustre instances of the 20 it may have")
}

// The recorded list holds b200-spot's own instance: deployed, or kept by an earlier destroy.
func TestLustreInstanceOfTheSameName(t *testing.T) {
	code, out, _ := preflight(t, withLustre("googleapis/lustre-instances-list.json"), b200Spot...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, finding(t, out, CheckLustre), "projects/acme-rl/locations/us-east1-b/instances/ray-a4-gpu-spot-lustre exists (ACTIVE, 18000 GiB): this stack's, if it is deployed; if an earlier destroy kept it, up fails to create it again unless storage.adopt is on")

	code, out, _ = preflight(t, withLustre("googleapis/lustre-instances-list.json"), append(b200Spot, "--config", "gke-rl:storage.adopt=true")...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, finding(t, out, CheckLustre), "exists (ACTIVE, 18000 GiB) and storage.adopt takes it over")
}

func TestLustreAdoptWithNothingToTakeOver(t *testing.T) {
	code, out, _ := preflight(t, withLustre("googleapis/lustre-instances-list-empty.json"), append(b200Spot, "--config", "gke-rl:storage.adopt=true")...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckLustre), "FAIL  lustre        storage.adopt is on, and there is no instance projects/acme-rl/locations/us-east1-b/instances/ray-a4-gpu-spot-lustre to take over")
	assert.Contains(t, fixOf(t, out, CheckLustre), "`pulumi config set --path storage.adopt false`")
}

func TestLustreProjectAtItsLimit(t *testing.T) {
	code, out, _ := preflight(t, withLustre("googleapis/preflight/lustre-instances-list-20.json"), b200Spot...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckLustre), "FAIL  lustre        the project has 20 Managed Lustre instances (team-01-lustre, ")
	assert.Contains(t, finding(t, out, CheckLustre), "the most a project may have, and up creates one more")
	assert.Contains(t, fixOf(t, out, CheckLustre), "`gcloud lustre instances list --project acme-rl --location=-`")
}

func TestLustreUnreadable(t *testing.T) {
	code, out, _ := preflight(t, withLustre("googleapis/preflight/cloudresourcemanager-error-403.json"), b200Spot...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckLustre), "the project's Managed Lustre instances cannot be read: The caller does not have permission (HTTP 403)")
	assert.Equal(t, "fix: reading it takes lustre.instances.list: have roles/lustre.viewer (or another role that holds it) granted at https://console.cloud.google.com/iam-admin/iam?project=acme-rl", fixOf(t, out, CheckLustre))
	assert.Contains(t, finding(t, out, CheckPermissions), "ok    permissions", "the other checks are still asked")
}

// Without the Managed Lustre API enabled, the check is skipped (the apis check names the fix),
// and no call is made to it.
func TestLustreSkippedWithItsAPIOff(t *testing.T) {
	p := withLustre("")
	p.services = ready.services
	_, out, calls := preflight(t, p, b200Spot...)
	assert.Contains(t, finding(t, out, CheckLustre), "skip  lustre        the Managed Lustre API is not enabled")
	for _, c := range calls {
		assert.NotEqual(t, "lustre.googleapis.com", c.Host)
	}
}
