package storage_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/storage"
)

// fakeGcloud is a gcloud that lists the peering until `vpc-peerings delete` has succeeded, which
// it does only after failing FAILS times, or until the peering is deleted from the VPC's side.
const fakeGcloud = `#!/bin/sh
state="$STATE_DIR"
echo "$*" >> "$state/calls"
case "$*" in
  *"networks peerings list"*) [ -e "$state/gone" ] || echo servicenetworking-googleapis-com ;;
  *"services vpc-peerings delete"*)
    n=$(cat "$state/fails" 2>/dev/null || echo 0)
    if [ "$n" -lt "$FAILS" ]; then echo $((n+1)) > "$state/fails"; echo "Producer services are still using this connection" >&2; exit 1; fi
    touch "$state/gone" ;;
  *"networks peerings delete"*) touch "$state/gone" ;;
esac
`

func runCleanup(t *testing.T, fails, attempts string) (calls string, err error) {
	t.Helper()
	bash, lookErr := exec.LookPath("bash")
	if lookErr != nil {
		t.Skip("bash is not installed")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gcloud"), []byte(fakeGcloud), 0o755))
	cmd := exec.Command(bash, "-c", storage.PeeringCleanupScript)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "STATE_DIR="+dir,
		"PROJECT=acme-rl", "NETWORK=rl-net", "FAILS="+fails, "ATTEMPTS="+attempts, "RETRY_SECONDS=0")
	out, err := cmd.CombinedOutput()
	b, _ := os.ReadFile(filepath.Join(dir, "calls"))
	t.Log(string(out))
	return string(b), err
}

// Destroy finishes: the cleanup retries while the producer holds the range, and otherwise
// removes the peering from the VPC's side, so that the network can be deleted.
func TestPeeringCleanupFinishes(t *testing.T) {
	calls, err := runCleanup(t, "2", "40")
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(calls, "services vpc-peerings delete"), "retried while the producer held the range")
	assert.NotContains(t, calls, "networks peerings delete", "the service's own delete succeeded")

	calls, err = runCleanup(t, "1000", "3")
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(calls, "services vpc-peerings delete"))
	assert.Contains(t, calls, "compute networks peerings delete servicenetworking-googleapis-com --network=rl-net --project=acme-rl --quiet",
		"after the retries, the peering goes from the VPC's side")
}
