// Package monitoring builds what a user looks at while a run goes: a Cloud Monitoring dashboard
// and alert policies. The builders here are pure (strings and JSON from the stack's values);
// component.go registers them.
package monitoring

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Args are the stack's values the dashboard and the alerts filter on.
type Args struct {
	// Project holds the cluster; Cluster is its name; Namespace holds the Ray objects.
	Project, Cluster, Namespace string
	// GPUsPerNode turns a count of GPUs into a count of nodes.
	GPUsPerNode int
	// Spot is true on spot capacity, where Compute Engine reclaims nodes.
	Spot bool
	// NotificationChannels receive the alerts (none: the alerts show in the console only).
	NotificationChannels []string
	// Lustre is the stack's Managed Lustre instance; nil when the shared volume is a bucket.
	Lustre *Lustre
	// Queue is set when the stack queues its experiments (jobs): the dashboard shows Kueue's
	// admissions and requeues of them.
	Queue bool
}

// Lustre is what the Lustre charts and the capacity alert need of the instance.
type Lustre struct {
	// InstanceID is the instance's ID (the last part of its name).
	InstanceID string
	// ThroughputMBps is the instance's aggregate throughput: capacity in TiB × tier.
	ThroughputMBps float64
}

// The dashboard's JSON follows projects.dashboards of the Monitoring API v1. Every field is
// omitted when empty: the API drops empty fields, and the provider's diff (DiffSuppressFunc
// monitoringDashboardDiffSuppress, terraform-provider-google-beta v6.49.2
// services/monitoring/resource_monitoring_dashboard.go) only ignores fields the API adds, so a
// zero written here would show as a change on every `pulumi up`.
type dashboard struct {
	DisplayName  string       `json:"displayName"`
	MosaicLayout mosaicLayout `json:"mosaicLayout"`
}

type mosaicLayout struct {
	Columns int    `json:"columns"`
	Tiles   []tile `json:"tiles"`
}

type tile struct {
	XPos   int    `json:"xPos,omitempty"`
	YPos   int    `json:"yPos,omitempty"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Widget widget `json:"widget"`
}

type widget struct {
	Title     string     `json:"title"`
	XYChart   *xyChart   `json:"xyChart,omitempty"`
	LogsPanel *logsPanel `json:"logsPanel,omitempty"`
	Text      *text      `json:"text,omitempty"`
}

type xyChart struct {
	DataSets []dataSet `json:"dataSets"`
	YAxis    *axis     `json:"yAxis,omitempty"`
}

type dataSet struct {
	TimeSeriesQuery timeSeriesQuery `json:"timeSeriesQuery"`
	PlotType        string          `json:"plotType"`
	LegendTemplate  string          `json:"legendTemplate,omitempty"`
}

type timeSeriesQuery struct {
	PrometheusQuery string `json:"prometheusQuery"`
}

type axis struct {
	Label string `json:"label,omitempty"`
	Scale string `json:"scale"`
}

// logsPanel has no resourceNames: empty is the dashboard's own project, and a project ID
// written there could come back as a project number, a change on every `pulumi up`.
type logsPanel struct {
	Filter string `json:"filter"`
}

type text struct {
	Content string `json:"content"`
	Format  string `json:"format"`
}

// dcgm is a PromQL selector of one of the DCGM metrics that GKE's managed DCGM collection
// (monitoringConfig DCGM, Managed Service for Prometheus) exports for this cluster.
func dcgm(metric, cluster string) string {
	return fmt.Sprintf(`%s{cluster=%q}`, metric, cluster)
}

// Managed Lustre's metrics (Google Cloud metrics: I through O, section lustre,
// docs.cloud.google.com/monitoring/api/metrics_gcp_i_o, list of 2026-04-10), all BETA, on the
// monitored resource lustre.googleapis.com/Instance (labels resource_container, location,
// instance_id), each per Lustre target (labels component and target: every OST and the MDT):
//   - instance/capacity_bytes, GAUGE: the bytes provisioned for the target;
//   - instance/available_bytes, GAUGE: the bytes of the target that non-root users can still
//     write (what `df` shows as available);
//   - instance/read_bytes_total and instance/write_bytes_total, DELTA: the data bytes read from
//     and written to an OST; Lustre writes them only while there is I/O.
//
// Their PromQL names follow Cloud Monitoring's mapping (monitoring/promql/promql-mapping): the
// first "/" becomes ":", every other "." and "/" becomes "_".
const (
	lustreCapacityBytes  = "lustre_googleapis_com:instance_capacity_bytes"
	lustreAvailableBytes = "lustre_googleapis_com:instance_available_bytes"
	lustreReadBytes      = "lustre_googleapis_com:instance_read_bytes_total"
	lustreWriteBytes     = "lustre_googleapis_com:instance_write_bytes_total"
)

// lustreCapacityAlertRatio is the share of a Lustre target in use above which the capacity alert
// fires: a full OST fails every write striped to it, a full MDT every file creation, while the
// file system as a whole still has room.
const lustreCapacityAlertRatio = 0.85

// lustreSelector is a PromQL selector of one of the instance's Lustre metrics. The list gives
// instance_id as "the ID of the managed instance"; the pattern accepts the ID alone or at the
// end of the instance's full name, as some services write their instance_id label. The ID is
// lowercase letters, digits and hyphens, nothing a regular expression reads specially.
func lustreSelector(metric, instanceID string) string {
	return fmt.Sprintf(`%s{instance_id=~"(.+/)?%s"}`, metric, instanceID)
}

// lustreUsedRatio is, per Lustre target, the share of its space in use.
func lustreUsedRatio(instanceID string) string {
	return fmt.Sprintf("1 - %s / %s",
		lustreSelector(lustreAvailableBytes, instanceID), lustreSelector(lustreCapacityBytes, instanceID))
}

// LustreCapacityQuery is the capacity alert's condition: a Lustre target of the instance more than
// 85 % full.
func LustreCapacityQuery(instanceID string) string {
	return fmt.Sprintf("%s > %g", lustreUsedRatio(instanceID), lustreCapacityAlertRatio)
}

// lustreTiles chart the instance's throughput against its tier and the space its targets use.
func lustreTiles(l Lustre, y int, line func(query, legend string) dataSet) []tile {
	rate := func(metric string) string {
		return fmt.Sprintf("sum(rate(%s[5m])) / 1e6", lustreSelector(metric, l.InstanceID))
	}
	available, capacity := lustreSelector(lustreAvailableBytes, l.InstanceID), lustreSelector(lustreCapacityBytes, l.InstanceID)
	return []tile{
		{YPos: y, Width: 24, Height: 16, Widget: widget{
			Title: fmt.Sprintf("Lustre throughput (MB/s; the instance allows %.0f)", l.ThroughputMBps),
			XYChart: &xyChart{
				DataSets: []dataSet{line(rate(lustreReadBytes), "read"), line(rate(lustreWriteBytes), "write")},
				YAxis:    &axis{Label: "MB/s", Scale: "LINEAR"},
			}}},
		{XPos: 24, YPos: y, Width: 24, Height: 16, Widget: widget{
			Title: fmt.Sprintf("Lustre space in use (%%): the fullest target alerts above %.0f", 100*lustreCapacityAlertRatio),
			XYChart: &xyChart{
				DataSets: []dataSet{
					line("100 * max("+lustreUsedRatio(l.InstanceID)+")", "fullest target"),
					line(fmt.Sprintf("100 * (1 - sum(%s) / sum(%s))", available, capacity), "all targets"),
				},
				YAxis: &axis{Label: "%", Scale: "LINEAR"},
			}}},
	}
}

// DashboardJSON is the run's dashboard: the GPUs (utilisation, memory, how many report), the
// spot preemptions, the run's outcome, the Ray pods' logs and, on Lustre, its throughput and space.
func DashboardJSON(a Args) (string, error) {
	util := dcgm("DCGM_FI_DEV_GPU_UTIL", a.Cluster)
	used, free := dcgm("DCGM_FI_DEV_FB_USED", a.Cluster), dcgm("DCGM_FI_DEV_FB_FREE", a.Cluster)
	line := func(query, legend string) dataSet {
		return dataSet{TimeSeriesQuery: timeSeriesQuery{PrometheusQuery: query}, PlotType: "LINE", LegendTemplate: legend}
	}
	tiles := []tile{
		{Width: 24, Height: 16, Widget: widget{Title: "GPU utilisation (%): mean and lowest GPU", XYChart: &xyChart{
			DataSets: []dataSet{line("avg("+util+")", "mean"), line("min("+util+")", "lowest")},
			YAxis:    &axis{Label: "%", Scale: "LINEAR"},
		}}},
		{XPos: 24, Width: 24, Height: 16, Widget: widget{Title: "GPU memory in use (%)", XYChart: &xyChart{
			DataSets: []dataSet{line(fmt.Sprintf("100 * sum(%s) / (sum(%s) + sum(%s))", used, used, free), "all GPUs")},
			YAxis:    &axis{Label: "%", Scale: "LINEAR"},
		}}},
		{YPos: 16, Width: 24, Height: 16, Widget: widget{Title: fmt.Sprintf("GPU nodes reporting (GPUs / %d)", a.GPUsPerNode), XYChart: &xyChart{
			DataSets: []dataSet{line(fmt.Sprintf("count(%s) / %d", util, a.GPUsPerNode), "nodes")},
			YAxis:    &axis{Label: "nodes", Scale: "LINEAR"},
		}}},
		{XPos: 24, YPos: 16, Width: 24, Height: 16, Widget: widget{Title: "Run outcome (the RayJob submitter's last lines)", LogsPanel: &logsPanel{
			Filter: RunOutcomeFilter(a.Cluster, a.Namespace),
		}}},
		{YPos: 32, Width: 24, Height: 16, Widget: widget{Title: "Spot preemptions (Compute Engine)", LogsPanel: &logsPanel{
			Filter: PreemptionFilter(),
		}}},
		{XPos: 24, YPos: 32, Width: 24, Height: 16, Widget: widget{Title: "Ray pods: warnings and errors", LogsPanel: &logsPanel{
			Filter: RayLogsFilter(a.Cluster, a.Namespace) + "\nseverity>=WARNING",
		}}},
	}
	if a.Lustre != nil {
		tiles = append(tiles, lustreTiles(*a.Lustre, 48, line)...)
	} else {
		tiles = append(tiles, tile{YPos: 48, Width: 48, Height: 8, Widget: widget{Title: "Storage", Text: &text{Format: "MARKDOWN", Content: "" +
			"The shared volume is a Cloud Storage bucket mounted with Cloud Storage FUSE. " +
			"The gate's storage figures: `pulumi stack output gateResults`."}}})
	}
	if a.Queue {
		bottom := 0
		for _, t := range tiles {
			bottom = max(bottom, t.YPos+t.Height)
		}
		tiles = append(tiles,
			tile{YPos: bottom, Width: 24, Height: 16, Widget: widget{Title: "Queue: experiments admitted (Kueue)", LogsPanel: &logsPanel{
				Filter: QueueLogsFilter(a.Cluster, a.Namespace, QueueAdmitted),
			}}},
			tile{XPos: 24, YPos: bottom, Width: 24, Height: 16, Widget: widget{Title: "Queue: experiments waiting (Kueue re-queues them while the GPUs are taken)", LogsPanel: &logsPanel{
				Filter: QueueLogsFilter(a.Cluster, a.Namespace, QueueWaiting),
			}}})
	}
	b, err := json.Marshal(dashboard{
		DisplayName:  "gke-rl " + a.Cluster,
		MosaicLayout: mosaicLayout{Columns: 48, Tiles: tiles},
	})
	return string(b), err
}

// RayLogsFilter selects the logs of every container of the run's namespace in this cluster: the
// Ray head and workers (the Ray add-on's logging collects them), the submitter and the Jobs.
func RayLogsFilter(cluster, namespace string) string {
	return fmt.Sprintf("resource.type=\"k8s_container\"\nresource.labels.cluster_name=%q\nresource.labels.namespace_name=%q", cluster, namespace)
}

// RunOutcomeFilter selects the line the RayJob's submitter prints when the Ray job ends: `ray job
// submit` follows the job's logs, then logs "Job '<id>' succeeded", "failed" or "was stopped"
// (Ray's dashboard/modules/job/cli.py, _log_job_status). The submitter's container is KubeRay's
// default, "ray-job-submitter" (ray-operator v1.5.0 controllers/ray/utils/constant.go).
func RunOutcomeFilter(cluster, namespace string) string {
	return RayLogsFilter(cluster, namespace) + "\nresource.labels.container_name=\"ray-job-submitter\"\ntextPayload=~\"Job '.*' (succeeded|failed|was stopped)\""
}

// RunFailedFilter selects a failed attempt's line in the submitter's log: the Ray job's end
// (on spot, each preempted attempt is a Ray job of its own), or, on a long-lived cluster, the
// entrypoint's "gke-rl run <experiment>: attempt N failed" before it retries (workloads/run.sh), which the
// submitter prints with the rest of the job's log.
func RunFailedFilter(cluster, namespace string) string {
	return RayLogsFilter(cluster, namespace) + "\nresource.labels.container_name=\"ray-job-submitter\"\ntextPayload=~\"Job '.*' failed|gke-rl run [a-z0-9-]+: attempt [0-9]+ failed\""
}

// gpuIdlePercent is the GPU utilisation below which the GPUs count as idle.
const gpuIdlePercent = 5

// GPUIdleQuery is the idle-GPU alert's condition: the cluster's GPUs at under 5 % utilisation on
// average while a run is active, which the RayJob submitter's container being up tells
// (kubernetes.io/container/uptime of the k8s_container resource, one of GKE's system metrics, in
// PromQL by Cloud Monitoring's mapping). A spot pool has no GPU node and so no series between
// runs; a long-lived cluster idles between runs without alerting.
func GPUIdleQuery(cluster, namespace string) string {
	submitter := fmt.Sprintf(`kubernetes_io:container_uptime{monitored_resource="k8s_container",cluster_name=%q,namespace_name=%q,container_name="ray-job-submitter"}`, cluster, namespace)
	return fmt.Sprintf("avg(%s) < %d and on() count(%s) > 0", dcgm("DCGM_FI_DEV_GPU_UTIL", cluster), gpuIdlePercent, submitter)
}

// PreemptionFilter selects Compute Engine's system event for a reclaimed spot or preemptible
// VM: the operation type compute.instances.preempted.
func PreemptionFilter() string {
	return "resource.type=\"gce_instance\"\nprotoPayload.methodName=\"compute.instances.preempted\""
}

// Kueue's manager logs a workload's admission and each time it goes back to wait, at V(2), the
// level its release runs at (sigs.k8s.io/kueue v0.17.0 pkg/scheduler/scheduler.go; the
// release's manager.yaml sets --zap-log-level=2), as JSON lines whose "workload" names the
// workload and its namespace: {"msg":"Workload re-queued","workload":{"name":"rayjob-<name>-<hash>","namespace":"<ns>"},...}.
const (
	QueueAdmitted = "Workload successfully admitted and assigned flavors"
	QueueWaiting  = "Workload re-queued"
)

// QueueLogsFilter selects the lines of Kueue's manager (the release's Deployment in
// kueue-system) that say event (QueueAdmitted, QueueWaiting) of a workload of the stack's
// namespace: the experiments' RayJobs.
func QueueLogsFilter(cluster, namespace, event string) string {
	return fmt.Sprintf("resource.type=\"k8s_container\"\nresource.labels.cluster_name=%q\nresource.labels.namespace_name=\"kueue-system\"\nresource.labels.container_name=\"manager\"\n%q\njsonPayload.workload.namespace=%q",
		cluster, event, namespace)
}

// LogsExplorerURL opens a query in the console's Logs Explorer.
func LogsExplorerURL(project, filter string) string {
	return "https://console.cloud.google.com/logs/query;query=" + strings.ReplaceAll(url.PathEscape(filter), ";", "%3B") + "?project=" + url.QueryEscape(project)
}
