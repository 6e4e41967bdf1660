package monitoring_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/monitoring"
)

// selector is one series selector of a PromQL query: its metric name and its label filters.
type selector struct {
	name    string
	filters map[string]metricsql.LabelFilter
}

// parse parses a query (MetricsQL, a superset of PromQL: a syntax error in PromQL is one here
// too) and returns its series selectors.
func parse(t *testing.T, query string) []selector {
	t.Helper()
	expr, err := metricsql.Parse(query)
	require.NoError(t, err, query)
	var out []selector
	metricsql.VisitAll(expr, func(e metricsql.Expr) {
		m, ok := e.(*metricsql.MetricExpr)
		if !ok {
			return
		}
		require.Len(t, m.LabelFilterss, 1, "no `or` in a selector: %s", query)
		s := selector{filters: map[string]metricsql.LabelFilter{}}
		for _, f := range m.LabelFilterss[0] {
			if f.Label == "__name__" {
				s.name = f.Value
				continue
			}
			s.filters[f.Label] = f
		}
		out = append(out, s)
	})
	return out
}

// promQLName maps a Cloud Monitoring metric type to its PromQL name as Cloud Monitoring's
// "Mapping Cloud Monitoring metrics to PromQL" says: the first "/" becomes ":", every other
// special character ("." and "/") becomes "_".
func promQLName(metricType string) string {
	domain, path, _ := strings.Cut(metricType, "/")
	return strings.NewReplacer(".", "_", "/", "_").Replace(domain + ":" + path)
}

func TestPromQLNameFollowsTheDocumentedExamples(t *testing.T) {
	for metricType, want := range map[string]string{
		"kubernetes.io/container/cpu/limit_cores":         "kubernetes_io:container_cpu_limit_cores",
		"compute.googleapis.com/instance/cpu/utilization": "compute_googleapis_com:instance_cpu_utilization",
		"logging.googleapis.com/log_entry_count":          "logging_googleapis_com:log_entry_count",
		"agent.googleapis.com/disk/io_time":               "agent_googleapis_com:disk_io_time",
	} {
		assert.Equal(t, want, promQLName(metricType))
	}
}

func TestEveryDashboardQueryParses(t *testing.T) {
	bucket := args()
	bucket.Lustre = nil
	for _, a := range []monitoring.Args{args(), bucket} {
		raw, _ := tilesOf(t, a)
		for _, q := range queries(t, raw) {
			assert.NotEmpty(t, parse(t, q), "every query reads a series: %s", q)
		}
	}
}

// The Lustre charts and the alert read Managed Lustre's metrics by the names of Google Cloud's
// metrics list (metrics_gcp_i_o, section lustre), and only those of this stack's instance.
func TestLustreQueriesReadTheInstancesDocumentedMetrics(t *testing.T) {
	documented := map[string]bool{}
	for _, metricType := range []string{
		"lustre.googleapis.com/instance/capacity_bytes",
		"lustre.googleapis.com/instance/available_bytes",
		"lustre.googleapis.com/instance/read_bytes_total",
		"lustre.googleapis.com/instance/write_bytes_total",
	} {
		documented[promQLName(metricType)] = true
	}
	raw, _ := tiles(t)
	read := map[string]bool{}
	for _, q := range append(queries(t, raw), monitoring.LustreCapacityQuery("rl-lustre")) {
		for _, s := range parse(t, q) {
			if !strings.HasPrefix(s.name, "lustre_googleapis_com:") {
				continue
			}
			assert.True(t, documented[s.name], "%s is not a documented Lustre metric", s.name)
			read[s.name] = true
			id, ok := s.filters["instance_id"]
			require.True(t, ok, "%s is filtered to the instance: %s", s.name, q)
			require.True(t, id.IsRegexp && !id.IsNegative, q)
			// PromQL anchors a label regular expression at both ends; RE2 reads it as Go does.
			pattern := regexp.MustCompile("^(?:" + id.Value + ")$")
			for value, match := range map[string]bool{
				"rl-lustre": true,
				"projects/acme-rl/locations/us-east1-b/instances/rl-lustre": true,
				"rl-lustre-2":   false,
				"old-rl-lustre": false,
				"projects/acme-rl/locations/us-east1-b/instances/other": false,
			} {
				assert.Equal(t, match, pattern.MatchString(value), "instance_id %q against %q", value, id.Value)
			}
		}
	}
	assert.Equal(t, documented, read, "the charts and the alert read every Lustre metric they need")
}

func TestLustreCapacityAlertIsPerTargetAbove85Percent(t *testing.T) {
	q := monitoring.LustreCapacityQuery("rl-lustre")
	assert.Equal(t, `1 - lustre_googleapis_com:instance_available_bytes{instance_id=~"(.+/)?rl-lustre"} / `+
		`lustre_googleapis_com:instance_capacity_bytes{instance_id=~"(.+/)?rl-lustre"} > 0.85`, q,
		"no aggregation: each OST and the MDT on its own, the share non-root users cannot write")
}

func TestLustreChartsOnlyOnLustre(t *testing.T) {
	raw, _ := tiles(t)
	assert.Contains(t, raw, "Lustre throughput (MB/s; the instance allows 9000)")
	assert.NotContains(t, raw, "Cloud Storage FUSE")

	bucket := args()
	bucket.Lustre = nil
	raw, _ = tilesOf(t, bucket)
	assert.NotContains(t, raw, "lustre_googleapis_com")
	assert.Contains(t, raw, "Cloud Storage FUSE")
}

// The idle-GPU alert reads this cluster's DCGM utilisation and is gated on the RayJob
// submitter's container being up in the run's namespace: both selectors carry those labels, and
// the container metric is the documented one under its PromQL name.
func TestGPUIdleAlertIsThisClustersAndOnlyDuringARun(t *testing.T) {
	q := monitoring.GPUIdleQuery("rl", "gke-rl")
	sels := parse(t, q)
	require.Len(t, sels, 2, q)
	assert.Equal(t, "DCGM_FI_DEV_GPU_UTIL", sels[0].name)
	assert.Equal(t, "rl", sels[0].filters["cluster"].Value)
	assert.Equal(t, promQLName("kubernetes.io/container/uptime"), sels[1].name)
	for label, want := range map[string]string{"monitored_resource": "k8s_container", "cluster_name": "rl", "namespace_name": "gke-rl", "container_name": "ray-job-submitter"} {
		f := sels[1].filters[label]
		assert.False(t, f.IsRegexp || f.IsNegative, label)
		assert.Equal(t, want, f.Value, label)
	}
	assert.Contains(t, q, "< 5 and on() count(", "idle, and a run is active")
}
