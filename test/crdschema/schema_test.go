package crdschema_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/offline"
	"gke-rl/test/crdschema"
	"gke-rl/test/plantest"
	"gke-rl/workloads/queue"
)

// upstreamSchemas loads the CRDs that ship inside the KubeRay, gke-networking-api and Secrets
// Store CSI driver modules (GKE's Secret Manager add-on serves the driver's
// SecretProviderClass API).
func upstreamSchemas(t *testing.T) *crdschema.Schemas {
	t.Helper()
	patterns, err := crdschema.Upstream()
	require.NoError(t, err)
	kueue, err := crdschema.Kueue(queue.KueueVersion)
	require.NoError(t, err)
	s, err := crdschema.Load(append(patterns, kueue...)...)
	require.NoError(t, err)
	return s
}

func TestCustomResourcesMatchUpstreamCRDSchemas(t *testing.T) {
	schemas := upstreamSchemas(t)
	variants := map[string][]string{
		"b200-spot":                       nil,
		"h200-reserved":                   nil,
		"b200-spot with verl":             {"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"},
		"h200-reserved with nemo-rl":      {"framework=nemo-rl", "job.dataset=DeepScaler"},
		"b200-spot on Autopilot":          {"cluster.mode=autopilot", "storage.type=gcsfuse"},
		"h200-reserved without a job":     {"job.enabled=false"},
		"b200-spot with tokens and limit": {"tokens.huggingFace=true", "tokens.wandb=true", "job.activeDeadlineSeconds=86400"},
		"h200-reserved with a queue":      {"jobs.a.priority=5", "jobs.b.maxSteps=10", "jobs.b.priority=1"},
	}
	kinds := map[string]int{}
	for name, overrides := range variants {
		stack := strings.Fields(name)[0]
		t.Run(name, func(t *testing.T) {
			res := plantest.Plan(t, stack, overrides...)
			for _, m := range offline.Manifests(res) {
				apiVersion, _ := m.Object["apiVersion"].(string)
				kind, _ := m.Object["kind"].(string)
				group, _, _ := strings.Cut(apiVersion, "/")
				if !strings.Contains(apiVersion, ".") || apiVersion == "batch/v1" || (strings.HasSuffix(group, ".k8s.io") && group != "kueue.x-k8s.io") {
					continue // built-in kinds (the core group, batch, *.k8s.io): typed by k8s.io/api or pulumi-kubernetes
				}
				kinds[kind]++
				assert.Empty(t, schemas.Validate(m.Object), "%s against the upstream CRD", m.File)
			}
		})
	}
	for _, kind := range []string{"RayCluster", "RayJob", "Network", "GKENetworkParamSet", "ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass"} {
		assert.Positive(t, kinds[kind], "no %s was checked", kind)
	}
}

func TestSchemaCheckCatchesUnknownAndWrongFields(t *testing.T) {
	schemas := upstreamSchemas(t)
	res := plantest.Plan(t, "h200-reserved")
	var rc map[string]any
	for _, m := range offline.Manifests(res) {
		if m.Object["kind"] == "RayCluster" {
			rc = m.Object
		}
	}
	require.NotNil(t, rc)
	spec := rc["spec"].(map[string]any)
	spec["workerGroupSpec"] = []any{} // a typo of workerGroupSpecs
	spec["enableInTreeAutoscaling"] = "no"
	problems := strings.Join(schemas.Validate(rc), "\n")
	assert.Contains(t, problems, "unknown field spec.workerGroupSpec")
	assert.Contains(t, problems, "enableInTreeAutoscaling")
}
