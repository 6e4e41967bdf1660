package infra

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The CPU pool's packing at its limits, on each dimension: nodes of 15,890 millicores and
// 57,000 MiB allocatable (numbers of the test's own), and a Ray head of 8,000 m and 32,000 MiB
// beside a submitter of 500 m and 1,024 MiB. Worked by hand: a head and a submitter take
// 8,500 m and 33,024 MiB; two heads take 16,000 m (over 15,890) and 64,000 MiB (over 57,000).
func TestFitsAtItsLimitsOnBothDimensions(t *testing.T) {
	head := cpuPod{role: "head", cpuMilli: 8000, mib: 32000}
	submitter := cpuPod{role: "submitter", cpuMilli: 500, mib: 1024}
	for _, tc := range []struct {
		name     string
		pods     []cpuPod
		nodes    int
		cpu, mem int64
		fits     bool
	}{
		{"a head and a submitter on one node", []cpuPod{head, submitter}, 1, 15890, 57000, true},
		// CPU binds: exactly enough, one millicore short.
		{"CPU at the limit", []cpuPod{head, submitter}, 1, 8500, 57000, true},
		{"CPU one millicore short", []cpuPod{head, submitter}, 1, 8499, 57000, false},
		// Memory binds: exactly enough, one MiB short, with CPU to spare.
		{"memory at the limit", []cpuPod{head, submitter}, 1, 15890, 33024, true},
		{"memory one MiB short", []cpuPod{head, submitter}, 1, 15890, 33023, false},
		// Two heads: neither fits beside the other on one node, on either dimension alone.
		{"two heads, CPU short by 110 m", []cpuPod{head, head}, 1, 15890, 64000, false},
		{"two heads, memory short by 7,000 MiB", []cpuPod{head, head}, 1, 16000, 57000, false},
		{"two heads on two nodes", []cpuPod{head, head}, 2, 15890, 57000, true},
		// Three heads and three submitters on two nodes: the third head has no node.
		{"three experiments on two nodes", []cpuPod{head, submitter, head, submitter, head, submitter}, 2, 15890, 57000, false},
	} {
		assert.Equal(t, tc.fits, fits(tc.pods, tc.nodes, tc.cpu, tc.mem), tc.name)
	}
}

// First fit on the largest first: two heads of 3,000 m and two submitters of 1,000 m fill two
// nodes of 4,000 m exactly (3,000 + 1,000 each). In the order given, the submitters would take
// 2,000 m of the first node, and the second head would find room on neither (2,000 + 3,000 and
// 3,000 + 3,000 are over 4,000).
func TestFitsPlacesTheLargestPodsFirst(t *testing.T) {
	small := cpuPod{role: "submitter", cpuMilli: 1000, mib: 1}
	large := cpuPod{role: "head", cpuMilli: 3000, mib: 1}
	assert.True(t, fits([]cpuPod{small, small, large, large}, 2, 4000, 100))
}

// The most experiments at once: Kueue admits any set whose GPUs fit the quota, so the smallest
// first make the largest set. A quota of 16 GPUs holds the two 8-GPU experiments (2 at once),
// not the 16-GPU one first (1 at once); a stopped experiment holds none.
func TestMostAtOnceTakesTheSmallestFirst(t *testing.T) {
	xs := []ExperimentPlan{
		{Name: "big", GPUs: 16},
		{Name: "small-a", GPUs: 8},
		{Name: "stopped", GPUs: 8, Stopped: true},
		{Name: "small-b", GPUs: 8},
	}
	var names []string
	for _, x := range mostAtOnce(xs, 16) {
		names = append(names, x.Name)
	}
	assert.Equal(t, []string{"small-a", "small-b"}, names)
}

// The refusal's sizes read as a person writes them: whole GiB, one decimal above 1 GiB, MiB
// under it; CPUs without trailing zeros.
func TestSizesReadAsWritten(t *testing.T) {
	for m, want := range map[int64]string{32768: "32 GiB", 1024: "1 GiB", 1536: "1.5 GiB", 59802: "58.4 GiB", 1023: "1023 MiB", 512: "512 MiB"} {
		assert.Equal(t, want, mebi(m), "%d MiB", m)
	}
	for m, want := range map[int64]string{8000: "8", 15890: "15.89", 500: "0.5"} {
		assert.Equal(t, want, milli(m), "%d m", m)
	}
}
