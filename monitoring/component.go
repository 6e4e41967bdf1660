package monitoring

import (
	"cmp"
	"fmt"
	"strings"

	gcpmonitoring "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/naming"
	"gke-rl/ray"
)

// alertRateLimit is the least time between two notifications of one log-based alert policy
// (the API requires a rate limit on a log-match condition, and implements it on no other);
// alertAutoClose closes an incident no new line has matched, or no data has come for, that long.
const (
	alertRateLimit = "300s"
	alertAutoClose = "1800s"
)

// A metric alert fires once its PromQL condition has held for metricAlertFor, evaluated every
// metricAlertEvery (a multiple of 30 s; Lustre samples its metrics every 60 s). Both are
// written out: the provider keeps neither as computed (terraform-provider-google-beta v6.49.2
// services/monitoring/resource_monitoring_alert_policy.go), so the API's defaults would be a diff.
const (
	metricAlertFor   = "300s"
	metricAlertEvery = "60s"
)

// Monitoring is the run's dashboard and alert policies.
type Monitoring struct {
	pulumi.ResourceState

	// DashboardURL opens the dashboard in the console.
	DashboardURL pulumi.StringOutput
}

// alert is an alert policy: on log lines that match logFilter, or on a PromQL condition.
type alert struct {
	role, title, severity, doc string
	// Exactly one of logFilter and promQL is set.
	logFilter, promQL string
	// holdFor is how long a PromQL condition must hold; metricAlertFor when empty.
	holdFor string
}

// policyArgs is the alert policy of an alert.
func policyArgs(a alert, channels []string) *gcpmonitoring.AlertPolicyArgs {
	condition := &gcpmonitoring.AlertPolicyConditionArgs{DisplayName: pulumi.String(a.title)}
	strategy := &gcpmonitoring.AlertPolicyAlertStrategyArgs{AutoClose: pulumi.String(alertAutoClose)}
	if a.logFilter != "" {
		condition.ConditionMatchedLog = &gcpmonitoring.AlertPolicyConditionConditionMatchedLogArgs{Filter: pulumi.String(a.logFilter)}
		strategy.NotificationRateLimit = &gcpmonitoring.AlertPolicyAlertStrategyNotificationRateLimitArgs{Period: pulumi.String(alertRateLimit)}
		// Written out although it is the API's only value for a log alert: the provider does not
		// treat the field as computed, so a value filled in by the API would be a diff.
		strategy.NotificationPrompts = pulumi.StringArray{pulumi.String("OPENED")}
	} else {
		condition.ConditionPrometheusQueryLanguage = &gcpmonitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs{
			Query:              pulumi.String(a.promQL),
			Duration:           pulumi.String(cmp.Or(a.holdFor, metricAlertFor)),
			EvaluationInterval: pulumi.String(metricAlertEvery),
			// The metrics appear a few minutes after the resource they describe; without this
			// the API refuses a condition on a metric it has no data of yet, on the first `up`.
			DisableMetricValidation: pulumi.Bool(true),
		}
		// A metric alert also says when its condition stops holding.
		strategy.NotificationPrompts = pulumi.StringArray{pulumi.String("OPENED"), pulumi.String("CLOSED")}
	}
	return &gcpmonitoring.AlertPolicyArgs{
		DisplayName:          pulumi.String(a.title),
		Combiner:             pulumi.String("OR"),
		Severity:             pulumi.String(a.severity),
		Conditions:           gcpmonitoring.AlertPolicyConditionArray{condition},
		AlertStrategy:        strategy,
		Documentation:        &gcpmonitoring.AlertPolicyDocumentationArgs{Content: pulumi.String(a.doc), MimeType: pulumi.String("text/markdown")},
		NotificationChannels: pulumi.ToStringArray(channels),
	}
}

// New registers the dashboard and the alert policies.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Monitoring, error) {
	m := &Monitoring{}
	// The type token is the one of the package monitoring was first released in (infra): it is
	// part of the URN of the dashboard and of every alert policy, which a new token would replace.
	if err := ctx.RegisterComponentResource("gke-rl:infra:Monitoring", name, m, opts...); err != nil {
		return nil, err
	}
	kids := naming.Children{Component: name, Parent: m}

	body, err := DashboardJSON(args)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	dashName, dashOpts := kids.Of("dashboard", "")
	dash, err := gcpmonitoring.NewDashboard(ctx, dashName, &gcpmonitoring.DashboardArgs{DashboardJson: pulumi.String(body)}, dashOpts...)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	// The dashboard's ID is projects/<number>/dashboards/<id>; the console opens it by <id>.
	m.DashboardURL = pulumi.Sprintf("https://console.cloud.google.com/monitoring/dashboards/custom/%s?project=%s",
		dash.ID().ToStringOutput().ApplyT(func(id string) string { return id[strings.LastIndex(id, "/")+1:] }), args.Project)

	for _, a := range alerts(args) {
		policyName, policyOpts := kids.Of(a.role, "")
		if _, err := gcpmonitoring.NewAlertPolicy(ctx, policyName, policyArgs(a, args.NotificationChannels), policyOpts...); err != nil {
			return nil, fmt.Errorf("alert %s: %w", a.role, err)
		}
	}
	if err := ctx.RegisterResourceOutputs(m, pulumi.Map{"dashboardUrl": m.DashboardURL}); err != nil {
		return nil, err
	}
	return m, nil
}

// gpuIdleFor is how long the GPUs must idle during a run before the idle alert fires.
const gpuIdleFor = "1800s"

// alerts are the stack's alert policies: a failed run attempt and idle GPUs during a run always,
// a reclaimed node on spot, a Lustre target more than 85 % full on Lustre.
func alerts(a Args) []alert {
	out := []alert{{
		role: "run-failed", title: fmt.Sprintf("gke-rl %s: a GRPO run attempt failed", a.Cluster),
		logFilter: RunFailedFilter(a.Cluster, a.Namespace), severity: "ERROR",
		doc: fmt.Sprintf("An attempt of the GRPO run on cluster `%s` failed. Up to `job.backoffLimit` times it is retried from "+
			"the newest checkpoint: by KubeRay on a new Ray cluster when the run has its own (spot, flex-start), by the "+
			"entrypoint on the long-lived cluster once it has its GPUs back. `%s` shows the RayJob's state and attempts. "+
			"The attempt's log: `kubectl -n %s logs job/<rayjob name>`.", a.Cluster, ray.JobAttemptsCommand(a.Namespace, ""), a.Namespace),
	}, {
		role: "gpu-idle", title: fmt.Sprintf("gke-rl %s: GPUs idle during a run", a.Cluster),
		promQL: GPUIdleQuery(a.Cluster, a.Namespace), holdFor: gpuIdleFor, severity: "WARNING",
		doc: fmt.Sprintf("The GPUs of cluster `%s` have averaged under %d %% utilisation for 30 minutes while a RayJob runs. "+
			"A run that waits for capacity, converts weights or writes a large checkpoint can idle briefly; 30 minutes "+
			"usually means a hang (a placement group that cannot be placed, a collective that never returns) or a retry "+
			"waiting for a GPU node. Read the run's log (`kubectl -n %s logs job/<rayjob name>`) and the Ray dashboard "+
			"(`pulumi stack output rayDashboard`); stop a hung run with `kubectl -n %s delete rayjob <rayjob name>` (KubeRay stops its Ray job); "+
			"`pulumi up --refresh` submits it again, and it resumes from the newest checkpoint.",
			a.Cluster, gpuIdlePercent, a.Namespace, a.Namespace),
	}}
	if a.Spot {
		out = append(out, alert{
			role: "spot-preempted", title: fmt.Sprintf("gke-rl %s: a spot node was reclaimed", a.Cluster),
			logFilter: PreemptionFilter(), severity: "WARNING",
			doc: "Compute Engine reclaimed a spot VM of this project. A GPU node's loss fails the run attempt; " +
				"KubeRay retries it from the newest checkpoint once spot capacity returns.",
		})
	}
	if a.Lustre != nil {
		out = append(out, alert{
			role: "lustre-capacity", title: fmt.Sprintf("gke-rl %s: Lustre more than %.0f %% full", a.Cluster, 100*lustreCapacityAlertRatio),
			promQL: LustreCapacityQuery(a.Lustre.InstanceID), severity: "WARNING",
			doc: fmt.Sprintf("A target of the Managed Lustre instance `%s` (an OST, or the MDT) has had more than %.0f %% of its "+
				"space in use for 5 minutes. A full OST fails the writes striped to it, a full MDT every new file: the next "+
				"checkpoint would fail. See what fills it with `du -sh` in a pod that mounts the volume; lower "+
				"`job.keepCheckpoints`, export old checkpoints (`pulumi stack output checkpointExport`) and delete them, "+
				"or raise `storage.capacityGib` by a step of the tier (an update in place).",
				a.Lustre.InstanceID, 100*lustreCapacityAlertRatio),
		})
	}
	return out
}
