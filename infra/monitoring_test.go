package infra_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/offline"
	"gke-rl/monitoring"
	"gke-rl/test/plantest"
)

const (
	alertPolicyType = "gcp:monitoring/alertPolicy:AlertPolicy"
	dashboardType   = "gcp:monitoring/dashboard:Dashboard"
)

func alertNames(res *offline.Result) []string {
	var names []string
	for _, r := range res.OfType(alertPolicyType) {
		names = append(names, r.Name)
	}
	return names
}

func TestMonitoringIsOnByDefault(t *testing.T) {
	spot := plantest.Plan(t, "b200-spot")
	assert.Len(t, spot.OfType(dashboardType), 1)
	assert.ElementsMatch(t, []string{"monitoring-run-failed", "monitoring-gpu-idle", "monitoring-spot-preempted", "monitoring-lustre-capacity"}, alertNames(spot))
	idle := spot.Find(alertPolicyType, "monitoring-gpu-idle")
	assert.Equal(t, "1800s", plantest.Input(t, idle, "conditions.0.conditionPrometheusQueryLanguage.duration"), "idle for 30 minutes")
	assert.Contains(t, spot.Outputs["dashboardUrl"], "https://console.cloud.google.com/monitoring/dashboards/custom/")

	reserved := plantest.Plan(t, "h200-reserved")
	assert.ElementsMatch(t, []string{"monitoring-run-failed", "monitoring-gpu-idle"}, alertNames(reserved), "no preemption alert without spot, no Lustre alert on a bucket")

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
	require.Len(t, policies, 4)
	for _, p := range policies {
		got, _ := offline.LookupInput(p, "notificationChannels")
		assert.Equal(t, channels, got, p.Name)
		autoClose, _ := offline.LookupInput(p, "alertStrategy.autoClose")
		assert.NotEmpty(t, autoClose, "%s: an incident closes", p.Name)
		if query, _ := offline.LookupInput(p, "conditions.0.conditionPrometheusQueryLanguage.query"); query != nil {
			prompts, _ := offline.LookupInput(p, "alertStrategy.notificationPrompts")
			assert.Equal(t, []any{"OPENED", "CLOSED"}, prompts, "%s: a metric alert also says when it clears", p.Name)
			continue
		}
		period, _ := offline.LookupInput(p, "alertStrategy.notificationRateLimit.period")
		assert.NotEmpty(t, period, "%s: the API requires a rate limit on a log-match condition", p.Name)
		prompts, _ := offline.LookupInput(p, "alertStrategy.notificationPrompts")
		assert.Equal(t, []any{"OPENED"}, prompts, "%s: the API's default, written out so that it is no diff", p.Name)
		filter, _ := offline.LookupInput(p, "conditions.0.conditionMatchedLog.filter")
		assert.NotEmpty(t, filter, p.Name)
	}
	for _, p := range plantest.Plan(t, "b200-spot").OfType(alertPolicyType) {
		got, _ := offline.LookupInput(p, "notificationChannels")
		assert.Empty(t, got, "no channel by default: the alerts show in the console")
	}
}

// The Lustre capacity alert is a PromQL condition on the stack's instance, with every field the
// API would otherwise fill in written out, and no rate limit (the API has none for metric alerts).
func TestLustreCapacityAlertWatchesTheStacksInstance(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	policy := res.Find(alertPolicyType, "monitoring-lustre-capacity")
	require.NotNil(t, policy)
	instance := res.Find("gcp:lustre/instance:Instance", "storage-lustre")
	require.NotNil(t, instance)
	id, _ := offline.LookupInput(instance, "instanceId")

	for path, want := range map[string]any{
		"conditions.0.conditionPrometheusQueryLanguage.query":                   monitoring.LustreCapacityQuery(id.(string)),
		"conditions.0.conditionPrometheusQueryLanguage.duration":                "300s",
		"conditions.0.conditionPrometheusQueryLanguage.evaluationInterval":      "60s",
		"conditions.0.conditionPrometheusQueryLanguage.disableMetricValidation": true,
		"alertStrategy.notificationPrompts":                                     []any{"OPENED", "CLOSED"},
		"severity":                                                              "WARNING",
	} {
		got, ok := offline.LookupInput(policy, path)
		require.True(t, ok, path)
		assert.Equal(t, want, got, path)
	}
	_, limited := offline.LookupInput(policy, "alertStrategy.notificationRateLimit")
	assert.False(t, limited)

	// The dashboard charts the same instance, against the tier's throughput.
	dash := res.Find(dashboardType, "monitoring-dashboard")
	require.NotNil(t, dash)
	body, _ := offline.LookupInput(dash, "dashboardJson")
	assert.Contains(t, body, `instance_id=~\"(.+/)?`+id.(string)+`\"`)
	assert.Contains(t, body, "the instance allows 8789", "18,000 GiB (17.6 TiB) at 500 MB/s per TiB")
}
