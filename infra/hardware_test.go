package infra

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/offers"
	"gke-rl/workloads"
)

// A GPU added to the catalog needs its rows in the zone tables, or the plan could not say where
// it is offered.
func TestEveryCatalogMachineTypeHasItsZones(t *testing.T) {
	for _, gpu := range GPUTypes() {
		spec, _ := LookupGPU(gpu)
		o, ok := offers.Lookup(spec.MachineType)
		if assert.True(t, ok, "%s (%s) has no rows in internal/offers", gpu, spec.MachineType) {
			assert.NotEmpty(t, o.Zones, spec.MachineType)
		}
	}
}

// The memory check needs every GPU's memory: a row without it would pass every model.
func TestEveryCatalogGPUHasItsMemory(t *testing.T) {
	for _, gpu := range GPUTypes() {
		spec, _ := LookupGPU(gpu)
		assert.Positive(t, spec.GPUMemoryGB, gpu)
	}
}

// Each default NeMo RL recipe is the default for the model it was written for: the size classes
// and the recipes' own models agree.
func TestEachDefaultRecipeIsItsOwnModelsDefault(t *testing.T) {
	for _, billions := range []float64{1.5, 8, 32, 70} {
		recipe := workloads.NeMoRLRecipeFor(billions)
		params, ok := nameParameters(workloads.NeMoRLRecipeModel(recipe))
		if assert.True(t, ok, recipe) {
			assert.Equal(t, recipe, workloads.NeMoRLRecipeFor(params/1e9), "%s was written for %s", recipe, workloads.NeMoRLRecipeModel(recipe))
		}
	}
}
