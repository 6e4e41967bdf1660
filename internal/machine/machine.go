// Package machine knows what a Compute Engine machine type brings to a GKE node: its vCPUs and
// memory, read from a predefined type's name, and what GKE leaves pods of them.
package machine

import (
	"regexp"
	"strconv"
)

// Shape is a machine type's vCPUs and memory. Compute Engine's GB are GiB: its API gives a
// machine type's memory in MiB (machineTypes memoryMb: 1740 for the "1.7 GB" g1-small).
type Shape struct {
	CPUs      int
	MemoryGiB float64
}

// predefined is a predefined machine type's name: family, kind, vCPUs.
var predefined = regexp.MustCompile(`^([a-z][a-z0-9]*)-(standard|highmem|highcpu)-([0-9]+)$`)

// gibPerCPU is the memory a vCPU of a predefined type brings, by kind (Compute Engine's
// general-purpose and compute-optimized machine family pages: N2, N2D, N4, C3, C3D, C4, E2 and
// T2D standard types 4 GB a vCPU, highmem 8, highcpu 1; N1 3.75, 6.5 and 0.9).
var gibPerCPU = map[string]float64{"standard": 4, "highmem": 8, "highcpu": 1}

var n1GiBPerCPU = map[string]float64{"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}

// ShapeOf is a predefined machine type's shape, read from its name (n2-standard-16: 16 vCPUs,
// 64 GiB); ok is false for a custom or shared-core type, whose name does not say.
func ShapeOf(machineType string) (Shape, bool) {
	m := predefined.FindStringSubmatch(machineType)
	if m == nil {
		return Shape{}, false
	}
	cpus, err := strconv.Atoi(m[3])
	if err != nil || cpus == 0 {
		return Shape{}, false
	}
	per := gibPerCPU[m[2]]
	if m[1] == "n1" {
		per = n1GiBPerCPU[m[2]]
	}
	return Shape{CPUs: cpus, MemoryGiB: per * float64(cpus)}, true
}

// Allocatable is what GKE leaves pods of a node of this shape (GKE's "Standard cluster
// architecture", node allocatable resources): of CPU, 6% of the first core, 1% of the next, 0.5%
// of the next 2 and 0.25% above 4 are reserved; of memory, 25% of the first 4 GiB, 20% of the
// next 4, 10% of the next 8, 6% of the next 112 and 2% above 128, plus 100 MiB for eviction.
func (s Shape) Allocatable() (cpuMilli, memMiB int64) {
	cores := float64(s.CPUs)
	reservedCPU := 0.06*min(cores, 1) + 0.01*clamp(cores-1, 1) + 0.005*clamp(cores-2, 2) + 0.0025*max(cores-4, 0)
	gib := s.MemoryGiB
	reservedMem := 0.25*min(gib, 4) + 0.2*clamp(gib-4, 4) + 0.1*clamp(gib-8, 8) + 0.06*clamp(gib-16, 112) + 0.02*max(gib-128, 0)
	return int64((cores - reservedCPU) * 1000), int64((gib-reservedMem)*1024) - 100
}

func clamp(v, limit float64) float64 { return max(0, min(v, limit)) }
