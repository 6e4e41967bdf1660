package machine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/machine"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

func TestShapeOfAPredefinedType(t *testing.T) {
	for name, want := range map[string]machine.Shape{
		"n2-standard-16": {CPUs: 16, MemoryGiB: 64},
		"n2d-highmem-8":  {CPUs: 8, MemoryGiB: 64},
		"e2-highcpu-32":  {CPUs: 32, MemoryGiB: 32},
		"n1-standard-4":  {CPUs: 4, MemoryGiB: 15},
		"c3-standard-88": {CPUs: 88, MemoryGiB: 352},
	} {
		got, ok := machine.ShapeOf(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"n2-custom-8-32768", "e2-small", "a4-highgpu-8g", "n2-standard-0"} {
		_, ok := machine.ShapeOf(name)
		assert.False(t, ok, "%s: its name does not say its shape", name)
	}
}

// GKE's allocatable arithmetic on the machines the stacks use.
func TestAllocatableFollowsGKEsReservations(t *testing.T) {
	cpu, mem := machine.Shape{CPUs: 16, MemoryGiB: 64}.Allocatable()
	// 16 cores: 60 + 10 + 10 + 12 * 2.5 = 110 m reserved.
	assert.EqualValues(t, 15890, cpu)
	// 64 GiB: 1 + 0.8 + 0.8 + 6% of 48 GiB = 5.48 GiB reserved, and 100 MiB for eviction.
	assert.InDelta(t, (64-5.48)*1024-100, mem, 1)
	// 2952 GiB: 1 + 0.8 + 0.8 + 6.72 + 2% of 2824 GiB = 65.8 GiB reserved (the hardware
	// catalog's "~2885 allocatable" for an H200 node).
	_, mem = machine.Shape{CPUs: 224, MemoryGiB: 2952}.Allocatable()
	assert.InDelta(t, (2952-65.8)*1024-100, mem, 1)
}
