package naming_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/naming"
	_ "gke-rl/test/golden" // every test binary accepts -update
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

func TestChildNamesDeriveFromTheComponent(t *testing.T) {
	assert.Equal(t, "storage-lustre", naming.Child("storage", "lustre"))
	kids := naming.Children{Component: "cluster"}
	name, opts := kids.Of("gke", "gke")
	assert.Equal(t, "cluster-gke", name)
	assert.Len(t, opts, 2, "the parent and an alias to the former name")
	name, opts = kids.Of("rdma", "cluster-rdma")
	assert.Equal(t, "cluster-rdma", name)
	assert.Len(t, opts, 1, "no alias when the name did not change")
}
