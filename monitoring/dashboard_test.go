package monitoring_test

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/monitoring"
)

func args() monitoring.Args {
	return monitoring.Args{Project: "acme-rl", Cluster: "rl", Namespace: "gke-rl", GPUsPerNode: 8, Spot: true,
		Lustre: &monitoring.Lustre{InstanceID: "rl-lustre", ThroughputMBps: 9000}}
}

type tile struct {
	XPos, YPos, Width, Height int
	Widget                    map[string]any
}

func tiles(t *testing.T) (raw string, out []tile) {
	t.Helper()
	return tilesOf(t, args())
}

func tilesOf(t *testing.T, a monitoring.Args) (raw string, out []tile) {
	t.Helper()
	raw, err := monitoring.DashboardJSON(a)
	require.NoError(t, err)
	var d struct {
		MosaicLayout struct {
			Columns int
			Tiles   []tile
		}
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &d))
	require.Equal(t, 48, d.MosaicLayout.Columns)
	return raw, d.MosaicLayout.Tiles
}

// The API drops fields at their zero value; the provider ignores only the fields the API adds.
// A zero written in the dashboard would be a change on every `pulumi up`.
func TestDashboardWritesNoZeroField(t *testing.T) {
	raw, _ := tiles(t)
	for _, zero := range []string{`:0,`, `:0}`, `:""`, `:null`, `:[]`, `:{}`} {
		assert.NotContains(t, raw, zero)
	}
}

func TestDashboardTilesFitAndDoNotOverlap(t *testing.T) {
	bucket := args()
	bucket.Lustre = nil
	queued, queuedBucket := args(), bucket
	queued.Queue, queuedBucket.Queue = true, true
	for _, a := range []monitoring.Args{args(), bucket, queued, queuedBucket} {
		_, ts := tilesOf(t, a)
		require.NotEmpty(t, ts)
		assertTilesFit(t, ts)
	}
}

func assertTilesFit(t *testing.T, ts []tile) {
	t.Helper()
	cells := map[[2]int]string{}
	for _, tl := range ts {
		title := tl.Widget["title"].(string)
		assert.LessOrEqual(t, tl.XPos+tl.Width, 48, title)
		for x := tl.XPos; x < tl.XPos+tl.Width; x++ {
			for y := tl.YPos; y < tl.YPos+tl.Height; y++ {
				other, taken := cells[[2]int{x, y}]
				require.False(t, taken, "%q overlaps %q", title, other)
				cells[[2]int{x, y}] = title
			}
		}
	}
}

// queries are the dashboard's PromQL queries.
func queries(t *testing.T, raw string) []string {
	t.Helper()
	var out []string
	for _, q := range regexp.MustCompile(`"prometheusQuery":"((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(raw, -1) {
		var query string
		require.NoError(t, json.Unmarshal([]byte(`"`+q[1]+`"`), &query))
		out = append(out, query)
	}
	return out
}

func TestDashboardQueriesAreThisClusters(t *testing.T) {
	raw, ts := tiles(t)
	qs := queries(t, raw)
	require.Len(t, qs, 8, "4 GPU queries, 2 Lustre throughput, 2 Lustre space")
	for _, query := range qs {
		for _, sel := range regexp.MustCompile(`DCGM_FI_DEV_\w+(\{[^}]*\})?`).FindAllStringSubmatch(query, -1) {
			assert.Equal(t, `{cluster="rl"}`, sel[1], "every series is the cluster's: %s", query)
		}
	}
	assert.Contains(t, raw, `count(DCGM_FI_DEV_GPU_UTIL{cluster=\"rl\"}) / 8`, "GPUs counted as nodes")
	var logs []string
	for _, tl := range ts {
		if panel, ok := tl.Widget["logsPanel"].(map[string]any); ok {
			logs = append(logs, panel["filter"].(string))
		}
	}
	assert.Contains(t, logs, monitoring.PreemptionFilter())
	assert.Contains(t, logs, monitoring.RunOutcomeFilter("rl", "gke-rl"))
}

// Cloud Logging's =~ is RE2, as Go's regexp: the lines below are what Ray's `ray job submit`
// logs when the job ends (dashboard/modules/job/cli.py, _log_job_status).
func TestRunFiltersMatchTheSubmittersLastLine(t *testing.T) {
	pattern := func(filter string) *regexp.Regexp {
		m := regexp.MustCompile(`textPayload=~"(.*)"`).FindStringSubmatch(filter)
		require.NotNil(t, m, filter)
		return regexp.MustCompile(m[1])
	}
	failed, outcome := pattern(monitoring.RunFailedFilter("rl", "gke-rl")), pattern(monitoring.RunOutcomeFilter("rl", "gke-rl"))
	for line, isFailure := range map[string]bool{
		"Job 'rl-grpo-x7k2p' failed":                                        true,
		"-------------------------\nJob 'rl-grpo-x7k2p' succeeded\n-------": false,
		"Job 'rl-grpo-x7k2p' was stopped":                                   false,
		"Tailing logs until the job exits":                                  false,
		// workloads/run.sh on a long-lived cluster, before it retries.
		"gke-rl run qwen2-5-32b-instruct-deepscaler-0a1b2c: attempt 2 failed (exit 1); the next starts once the cluster has its GPUs": true,
		"gke-rl run qwen2-5-32b-instruct-deepscaler-0a1b2c: attempt 3 of 11":                                                          false,
	} {
		assert.Equal(t, isFailure, failed.MatchString(line), line)
		assert.Equal(t, !strings.HasPrefix(line, "Tailing") && !strings.HasPrefix(line, "gke-rl run"), outcome.MatchString(line), line)
	}
	assert.Contains(t, monitoring.RunFailedFilter("rl", "gke-rl"), `resource.labels.container_name="ray-job-submitter"`)
	assert.Contains(t, monitoring.RunFailedFilter("rl", "gke-rl"), `resource.labels.cluster_name="rl"`)
}

func TestLogsExplorerURLCarriesTheQuery(t *testing.T) {
	filter := monitoring.RayLogsFilter("rl", "gke-rl")
	u, err := url.Parse(monitoring.LogsExplorerURL("acme-rl", filter))
	require.NoError(t, err)
	assert.Equal(t, "acme-rl", u.Query().Get("project"))
	query, ok := strings.CutPrefix(u.Path, "/logs/query;query=")
	require.True(t, ok, u.Path)
	assert.Equal(t, filter, query)
}

// A stack with a queue shows Kueue's admissions and requeues of its own experiments, below the
// rest; one without has no queue panel.
func TestTheQueuePanelsAreTheStacksOnly(t *testing.T) {
	a := args()
	_, plain := tilesOf(t, a)
	a.Queue = true
	raw, queued := tilesOf(t, a)
	require.Len(t, queued, len(plain)+2)
	for _, tl := range queued[len(plain):] {
		panel := tl.Widget["logsPanel"].(map[string]any)
		filter := panel["filter"].(string)
		assert.Contains(t, filter, `resource.labels.cluster_name="rl"`)
		assert.Contains(t, filter, `resource.labels.namespace_name="kueue-system"`)
		assert.Contains(t, filter, `jsonPayload.workload.namespace="gke-rl"`)
	}
	assert.Contains(t, raw, monitoring.QueueAdmitted)
	assert.Contains(t, raw, monitoring.QueueWaiting)
}
