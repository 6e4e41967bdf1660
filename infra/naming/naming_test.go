package naming_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/infra/naming"
	_ "gke-rl/infra/plan/plantest" // accepts -update like every test binary
)

func TestShortNamesAreJoined(t *testing.T) {
	assert.Equal(t, "rl-rdma-sub-3", naming.New("rl").Resource("rdma-sub-3"))
}

func TestLongNamesStayWithinLimitAndDistinct(t *testing.T) {
	n := naming.New(strings.Repeat("a", 40))
	one := n.Resource(strings.Repeat("b", 30), "x")
	two := n.Resource(strings.Repeat("b", 30), "y")
	assert.LessOrEqual(t, len(one), naming.MaxResourceNameLength)
	assert.NotEqual(t, one, two)
	assert.True(t, naming.IsDNSLabel(one), one)
	assert.Equal(t, one, n.Resource(strings.Repeat("b", 30), "x"), "deterministic")
}

func TestDNSLabels(t *testing.T) {
	assert.True(t, naming.IsDNSLabel("ray-a4-gpu-spot"))
	for _, bad := range []string{"", "Ray", "1abc", "abc-", "a_b"} {
		assert.False(t, naming.IsDNSLabel(bad), bad)
	}
}
