package infra_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/test/plantest"
)

// A reservation that another project shares is named by its full name, which the GPU pool's
// reservation affinity carries as it is: GKE takes `projects/<owner>/reservations/<name>` for a
// shared reservation (Cluster Toolkit modules/compute/gke-node-pool/reservation_definitions.tf at
// v1.95.0 builds the same value).
func TestSharedReservationReachesTheGPUPool(t *testing.T) {
	for _, name := range []string{
		"projects/owner-rl/reservations/h200-pool",
		"projects/owner-rl/reservations/h200-pool/reservationBlocks/block-1",
	} {
		res := plantest.Plan(t, "h200-reserved", "gpu.reservation="+name)
		pool := res.Find("gcp:container/nodePool:NodePool", "cluster-gpu")
		assert.Equal(t, "SPECIFIC_RESERVATION", plantest.Input(t, pool, "nodeConfig.reservationAffinity.consumeReservationType"))
		assert.Equal(t, []any{name}, plantest.Input(t, pool, "nodeConfig.reservationAffinity.values"), name)
	}
}
