package monitoring

import (
	"fmt"
	"strings"

	gcpmonitoring "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra/naming"
)

// alertRateLimit is the least time between two notifications of one log-based alert policy
// (the API requires a rate limit on a log-match condition); alertAutoClose closes an incident
// no new line has matched for that long.
const (
	alertRateLimit = "300s"
	alertAutoClose = "1800s"
)

// Monitoring is the run's dashboard and alert policies.
type Monitoring struct {
	pulumi.ResourceState

	// DashboardURL opens the dashboard in the console.
	DashboardURL pulumi.StringOutput
}

// logAlert is an alert policy on log lines that match a filter.
type logAlert struct {
	role, title, filter, severity, doc string
}

// New registers the dashboard and the alert policies.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Monitoring, error) {
	m := &Monitoring{}
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

	for _, alert := range alerts(args) {
		policyName, policyOpts := kids.Of(alert.role, "")
		channels := pulumi.ToStringArray(args.NotificationChannels)
		_, err := gcpmonitoring.NewAlertPolicy(ctx, policyName, &gcpmonitoring.AlertPolicyArgs{
			DisplayName: pulumi.String(alert.title),
			Combiner:    pulumi.String("OR"),
			Severity:    pulumi.String(alert.severity),
			Conditions: gcpmonitoring.AlertPolicyConditionArray{&gcpmonitoring.AlertPolicyConditionArgs{
				DisplayName:         pulumi.String(alert.title),
				ConditionMatchedLog: &gcpmonitoring.AlertPolicyConditionConditionMatchedLogArgs{Filter: pulumi.String(alert.filter)},
			}},
			AlertStrategy: &gcpmonitoring.AlertPolicyAlertStrategyArgs{
				NotificationRateLimit: &gcpmonitoring.AlertPolicyAlertStrategyNotificationRateLimitArgs{Period: pulumi.String(alertRateLimit)},
				AutoClose:             pulumi.String(alertAutoClose),
				// Written out although it is the API's default: the provider does not treat the
				// field as computed, so a default filled in by the API would be a diff.
				NotificationPrompts: pulumi.StringArray{pulumi.String("OPENED")},
			},
			Documentation:        &gcpmonitoring.AlertPolicyDocumentationArgs{Content: pulumi.String(alert.doc), MimeType: pulumi.String("text/markdown")},
			NotificationChannels: channels,
		}, policyOpts...)
		if err != nil {
			return nil, fmt.Errorf("alert %s: %w", alert.role, err)
		}
	}
	if err := ctx.RegisterResourceOutputs(m, pulumi.Map{"dashboardUrl": m.DashboardURL}); err != nil {
		return nil, err
	}
	return m, nil
}

// alerts are the stack's alert policies: a failed run attempt always, a reclaimed node on spot.
func alerts(a Args) []logAlert {
	out := []logAlert{{
		role: "run-failed", title: fmt.Sprintf("gke-rl %s: a GRPO run attempt failed", a.Cluster),
		filter: RunFailedFilter(a.Cluster, a.Namespace), severity: "ERROR",
		doc: fmt.Sprintf("The Ray job of cluster `%s` failed. On spot capacity KubeRay retries it on a new Ray cluster "+
			"(`job.backoffLimit`); `kubectl -n %s get rayjob` shows the attempts and the state. "+
			"The first failure's log: `kubectl -n %s logs job/<rayjob name>`.", a.Cluster, a.Namespace, a.Namespace),
	}}
	if a.Spot {
		out = append(out, logAlert{
			role: "spot-preempted", title: fmt.Sprintf("gke-rl %s: a spot node was reclaimed", a.Cluster),
			filter: PreemptionFilter(), severity: "WARNING",
			doc: "Compute Engine reclaimed a spot VM of this project. A GPU node's loss fails the run attempt; " +
				"KubeRay retries it from the newest checkpoint once spot capacity returns.",
		})
	}
	return out
}
