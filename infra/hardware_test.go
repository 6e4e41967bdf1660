package infra

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/infra/offers"
)

// A GPU added to the catalog needs its rows in the zone tables, or the plan could not say where
// it is offered.
func TestEveryCatalogMachineTypeHasItsZones(t *testing.T) {
	for _, gpu := range GPUTypes() {
		spec, _ := LookupGPU(gpu)
		o, ok := offers.Lookup(spec.MachineType)
		if assert.True(t, ok, "%s (%s) has no rows in infra/offers", gpu, spec.MachineType) {
			assert.NotEmpty(t, o.Zones, spec.MachineType)
		}
	}
}
