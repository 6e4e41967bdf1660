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
