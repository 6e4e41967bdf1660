package lifecycle

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expectations below are written out by hand, not read from the tables: a changed row must
// change a test too.

// resolved are the options as the engine would receive them.
func resolved(t *testing.T, opts []pulumi.ResourceOption) *pulumi.ResourceOptions {
	t.Helper()
	o, err := pulumi.NewResourceOptions(opts...)
	require.NoError(t, err)
	return o
}

func TestEachTypeGetsItsOptions(t *testing.T) {
	cases := []struct {
		typ                 string
		timeouts            *pulumi.CustomTimeouts
		ignore, replaceOn   []string
		deleteBeforeReplace bool
	}{
		// Lustre: the provider's 20 min create is too short for a 500-tier instance.
		{typ: LustreType, timeouts: &pulumi.CustomTimeouts{Create: "120m", Update: "60m", Delete: "60m"}},
		{typ: ClusterType, timeouts: &pulumi.CustomTimeouts{Create: "60m", Update: "90m", Delete: "60m"}, ignore: []string{"nodeConfig"}},
		// A pool the provider replaces is deleted first: GKE refuses two pools of one name.
		{typ: NodePoolType, timeouts: &pulumi.CustomTimeouts{Create: "90m", Update: "120m", Delete: "60m"},
			ignore: []string{"initialNodeCount", "nodeCount"}, deleteBeforeReplace: true},
		{typ: JobType, timeouts: &pulumi.CustomTimeouts{Create: "2h", Update: "2h"}},
		// A RayJob is replaced on any change of its spec, the old one deleted first, and keeps
		// what Kueue wrote to spec.suspend.
		{typ: RayJobType, ignore: []string{"spec.suspend"}, replaceOn: []string{"spec"}, deleteBeforeReplace: true},
		{typ: RayClusterType, replaceOn: []string{
			"spec.headGroupSpec", "spec.rayVersion", "spec.enableInTreeAutoscaling",
			"spec.workerGroupSpecs[*].groupName", "spec.workerGroupSpecs[*].rayStartParams",
			"spec.workerGroupSpecs[*].template",
		}, deleteBeforeReplace: true},
		// A type no table names gets nothing.
		{typ: ConnectionType},
		{typ: "kubernetes:core/v1:ConfigMap"},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			o := resolved(t, Options(c.typ))
			assert.Equal(t, c.timeouts, o.CustomTimeouts, "timeouts")
			assert.Equal(t, c.ignore, o.IgnoreChanges, "ignored fields")
			assert.Equal(t, c.replaceOn, o.ReplaceOnChanges, "fields that replace it")
			assert.Equal(t, c.deleteBeforeReplace, o.DeleteBeforeReplace, "deleted before its replacement")
		})
	}
}

func TestTheGPUPoolsUpdateTimeoutGrowsPastTheTableFromTheSeventhNode(t *testing.T) {
	cases := []struct {
		nodes  int
		update string
	}{
		{0, "120m"},
		{1, "120m"}, // 30 + 15 = 45, below the table's 120
		{6, "120m"}, // 30 + 6 × 15 = 120, the table's own
		{7, "135m"}, // 30 + 7 × 15
		{16, "270m"},
	}
	for _, c := range cases {
		o := resolved(t, GPUPoolOptions(c.nodes))
		assert.Equal(t, &pulumi.CustomTimeouts{Create: "90m", Update: c.update, Delete: "60m"}, o.CustomTimeouts, "%d nodes", c.nodes)
		assert.Equal(t, []string{"initialNodeCount", "nodeCount"}, o.IgnoreChanges, "%d nodes", c.nodes)
		assert.True(t, o.DeleteBeforeReplace, "%d nodes", c.nodes)
	}
	assert.Contains(t, GPUPoolTimeout(7).Why, "15 min a node, one node at a time")
}

func TestAGateJobWaitsTenMinutesPastItsDeadlineAndNeverLessThanTwoHours(t *testing.T) {
	cases := []struct {
		deadlineSeconds int
		want            string
	}{
		{0, "2h0m0s"},
		{6600, "2h0m0s"},   // 110 min + 10 = 120 min, the table's 2h
		{6601, "2h0m1s"},   // one second past
		{10800, "3h10m0s"}, // a 3 h wait for capacity
	}
	for _, c := range cases {
		o := resolved(t, GateJobOptions(c.deadlineSeconds))
		assert.Equal(t, &pulumi.CustomTimeouts{Create: c.want, Update: c.want}, o.CustomTimeouts, "deadline %d s", c.deadlineSeconds)
		assert.Empty(t, o.IgnoreChanges)
		assert.False(t, o.DeleteBeforeReplace)
	}
}

func TestTheTablesLookupsMissWhatTheyDoNotName(t *testing.T) {
	_, ok := TimeoutOf(RayJobType)
	assert.False(t, ok, "a RayJob has no custom timeouts")
	_, ok = ReplacementOf(JobType)
	assert.False(t, ok, "pulumi-kubernetes replaces a Job on its own")
	assert.Empty(t, IgnoredFields(LustreType))
	// Fields handled otherwise than by ignoreChanges are not ignored.
	assert.Equal(t, []string{"initialNodeCount", "nodeCount"}, IgnoredFields(NodePoolType), "nodeConfig.taints is set to GKE's own value, version left unset")
}
