package kinds_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/kinds"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

func TestRunModeFollowsTheCapacity(t *testing.T) {
	cases := []struct {
		job  bool
		prov kinds.Provisioning
		want kinds.RunMode
	}{
		{true, kinds.Spot, kinds.OwnCluster},
		{true, kinds.FlexStart, kinds.OwnCluster},
		{true, kinds.Reservation, kinds.SharedCluster},
		{true, kinds.OnDemand, kinds.SharedCluster},
		{false, kinds.Spot, kinds.ClusterOnly},
		{false, kinds.Reservation, kinds.ClusterOnly},
	}
	for _, tc := range cases {
		got := kinds.RunModeOf(tc.job, tc.prov)
		assert.Equal(t, tc.want, got, "job=%v %s", tc.job, tc.prov)
		assert.Equal(t, tc.want != kinds.OwnCluster, got.HasLongLivedCluster())
		assert.Equal(t, tc.job, got.HasJob())
	}
}

func TestAllowedValues(t *testing.T) {
	assert.True(t, kinds.Is("flex-start", kinds.Provisionings))
	assert.False(t, kinds.Is("preemptible", kinds.Provisionings))
	assert.Equal(t, "standard, autopilot", kinds.List(kinds.Modes))
}
