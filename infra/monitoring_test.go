package infra_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/plan"
	"gke-rl/infra/plan/plantest"
)

const (
	alertPolicyType = "gcp:monitoring/alertPolicy:AlertPolicy"
	dashboardType   = "gcp:monitoring/dashboard:Dashboard"
)

func alertNames(res *plan.Result) []string {
	var names []string
	for _, r := range res.OfType(alertPolicyType) {
		names = append(names, r.Name)
	}
	return names
}

func TestMonitoringIsOnByDefault(t *testing.T) {
	spot := plantest.Plan(t, "b200-spot")
	assert.Len(t, spot.OfType(dashboardType), 1)
	assert.ElementsMatch(t, []string{"monitoring-run-failed", "monitoring-spot-preempted"}, alertNames(spot))
	assert.Contains(t, spot.Outputs["dashboardUrl"], "https://console.cloud.google.com/monitoring/dashboards/custom/")

	reserved := plantest.Plan(t, "h200-reserved")
	assert.ElementsMatch(t, []string{"monitoring-run-failed"}, alertNames(reserved), "no preemption alert without spot")

	off := plantest.Plan(t, "b200-spot", "monitoring.enabled=false")
	assert.Empty(t, off.OfType(dashboardType))
	assert.Empty(t, off.OfType(alertPolicyType))
	assert.NotContains(t, off.Outputs, "dashboardUrl")
	assert.Contains(t, off.Outputs["rayLogs"], "https://console.cloud.google.com/logs/query;query=", "the logs query needs no monitoring resource")
}

func TestAlertsReachTheConfiguredChannels(t *testing.T) {
	channels := []any{"projects/acme/notificationChannels/123", "projects/acme/notificationChannels/456"}
	res := plantest.Plan(t, "b200-spot",
		"monitoring.notificationChannels[0]=projects/acme/notificationChannels/123",
		"monitoring.notificationChannels[1]=projects/acme/notificationChannels/456")
	policies := res.OfType(alertPolicyType)
	require.Len(t, policies, 2)
	for _, p := range policies {
		got, _ := plan.LookupInput(p, "notificationChannels")
		assert.Equal(t, channels, got, p.Name)
		period, _ := plan.LookupInput(p, "alertStrategy.notificationRateLimit.period")
		assert.NotEmpty(t, period, "%s: the API requires a rate limit on a log-match condition", p.Name)
		autoClose, _ := plan.LookupInput(p, "alertStrategy.autoClose")
		assert.NotEmpty(t, autoClose, "%s: an incident of a log alert closes", p.Name)
		prompts, _ := plan.LookupInput(p, "alertStrategy.notificationPrompts")
		assert.Equal(t, []any{"OPENED"}, prompts, "%s: the API's default, written out so that it is no diff", p.Name)
		filter, _ := plan.LookupInput(p, "conditions.0.conditionMatchedLog.filter")
		assert.NotEmpty(t, filter, p.Name)
	}
	for _, p := range plantest.Plan(t, "b200-spot").OfType(alertPolicyType) {
		got, _ := plan.LookupInput(p, "notificationChannels")
		assert.Empty(t, got, "no channel by default: the alerts show in the console")
	}
}
