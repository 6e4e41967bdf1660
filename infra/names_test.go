package infra_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"

	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
)

// nameRule is the limit of one kind of derived name, from upstream.
type nameRule struct {
	field   string
	max     int
	pattern *regexp.Regexp
	source  string
}

var (
	// RFC 1035 labels: Compute Engine resource names ("[a-z]([-a-z0-9]*[a-z0-9])?", at most 63).
	rfc1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	// Service account IDs: 6 to 30 characters (IAM's projects.serviceAccounts.create, accountId).
	accountID = regexp.MustCompile(`^[a-z]([-a-z0-9]{4,28}[a-z0-9])$`)
	// Bucket names without dots: 3 to 63 lowercase letters, digits, hyphens and underscores,
	// starting and ending with a letter or digit (Cloud Storage's bucket naming rules).
	bucketName = regexp.MustCompile(`^[a-z0-9][-_a-z0-9]{1,61}[a-z0-9]$`)
	// Secret IDs: letters, digits, hyphens and underscores, at most 255 (Secret Manager's
	// projects.secrets.create, secretId).
	secretID = regexp.MustCompile(`^[-_A-Za-z0-9]{1,255}$`)
)

// cloudNames are the derived names of the cloud resources and their limits.
var cloudNames = map[string]nameRule{
	"gcp:container/cluster:Cluster":              {"name", 40, rfc1035, "GKE: cluster names have at most 40 characters"},
	"gcp:container/nodePool:NodePool":            {"name", 40, rfc1035, "GKE: node pool names have at most 40 characters"},
	"gcp:compute/network:Network":                {"name", 63, rfc1035, "Compute Engine resource names (RFC 1035)"},
	"gcp:compute/subnetwork:Subnetwork":          {"name", 63, rfc1035, "Compute Engine resource names (RFC 1035)"},
	"gcp:compute/firewall:Firewall":              {"name", 63, rfc1035, "Compute Engine resource names (RFC 1035)"},
	"gcp:compute/router:Router":                  {"name", 63, rfc1035, "Compute Engine resource names (RFC 1035)"},
	"gcp:compute/routerNat:RouterNat":            {"name", 63, rfc1035, "Compute Engine resource names (RFC 1035)"},
	"gcp:compute/globalAddress:GlobalAddress":    {"name", 63, rfc1035, "Compute Engine resource names (RFC 1035)"},
	"gcp:serviceaccount/account:Account":         {"accountId", 30, accountID, "IAM service account IDs: 6 to 30 characters"},
	"gcp:lustre/instance:Instance":               {"instanceId", 63, rfc1035, "terraform-provider-google-beta v6.49.2 resource_lustre_instance.go, instance_id: 1-63 characters"},
	"gcp:storage/bucket:Bucket":                  {"name", 63, bucketName, "Cloud Storage bucket names: 3 to 63 characters"},
	"gcp:artifactregistry/repository:Repository": {"repositoryId", 63, rfc1035, "Artifact Registry repository IDs: at most 63 characters"},
	"gcp:secretmanager/secret:Secret":            {"secretId", 255, secretID, "Secret Manager secret IDs: at most 255 letters, digits, '-' and '_'"},
}

// kubeNameLimits are the Kubernetes kinds whose names are DNS-1035 labels of at most 63
// characters (a Service's; a Job's, whose name is a label value of its pods; an Indexed Job's
// pods' host names `<job>-<index>` are checked apart), or KubeRay's tighter limits (ray-operator v1.5.0
// controllers/ray/utils/constant.go: MaxRayClusterNameLength 53, MaxRayJobNameLength 47, which
// leave room for the names KubeRay derives: `<rayjob>-<5 characters>` clusters, `-head-svc`).
var kubeNameLimits = map[string]int{"Service": 63, "Job": 63, "RayCluster": 53, "RayJob": 47}

// Every name the program derives fits its resource, for the longest and the oddest cluster
// names the config accepts, on both stacks, with Lustre and GCS FUSE, on Standard and Autopilot.
func TestEveryDerivedNameFitsItsResource(t *testing.T) {
	names := []string{
		"a" + strings.Repeat("1", 39),        // 40: all digits after the first letter
		"a" + strings.Repeat("-b", 19) + "9", // 40: hyphens throughout
		"z" + strings.Repeat("y", 38) + "x",  // 40 letters
		"ab",                                 // short
	}
	variants := [][]string{nil, {"storage.type=gcsfuse"}, {"cluster.mode=autopilot", "storage.type=gcsfuse"}, {"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"},
		{"gate.enabled=true", "gate.runId=abcdefgh", "gpu.nodes=128", "gpu.maxNodes=128", "job.promptsPerStep=1024"},
		{"tokens.huggingFace=true", "tokens.wandb=true"}}
	project := "p" + strings.Repeat("0", 28) + "9" // project IDs have at most 30 characters
	for _, stack := range plantest.Stacks {
		for _, name := range names {
			for _, variant := range variants {
				overrides := append([]string{"cluster.name=" + name, "gcp:project=" + project}, variant...)
				t.Run(fmt.Sprintf("%s %s %v", stack, name, variant), func(t *testing.T) {
					res := plantest.Plan(t, stack, overrides...)
					checked := 0
					for _, r := range res.Resources {
						rule, ok := cloudNames[r.Type]
						if !ok {
							continue
						}
						v, _ := offline.LookupInput(r, rule.field)
						s, _ := v.(string)
						assert.LessOrEqual(t, len(s), rule.max, "%s %s %q: %s", r.Type, rule.field, s, rule.source)
						assert.Regexp(t, rule.pattern, s, "%s %s: %s", r.Type, rule.field, rule.source)
						checked++
					}
					assert.Positive(t, checked)
					for _, m := range offline.Manifests(res) {
						meta, _ := m.Object["metadata"].(map[string]any)
						n, _ := meta["name"].(string)
						kind, _ := m.Object["kind"].(string)
						assert.Empty(t, validation.IsDNS1123Subdomain(n), "%s %q", kind, n)
						if limit, ok := kubeNameLimits[kind]; ok {
							assert.LessOrEqual(t, len(n), limit, "%s %q", kind, n)
							assert.Empty(t, validation.IsDNS1035Label(n), "%s %q", kind, n)
						}
						if spec, _ := m.Object["spec"].(map[string]any); kind == "Job" && spec["completionMode"] == "Indexed" {
							completions, err := strconv.Atoi(fmt.Sprint(spec["completions"]))
							assert.NoError(t, err)
							host := fmt.Sprintf("%s-%d", n, completions-1)
							assert.Empty(t, validation.IsDNS1123Label(host), "the last pod's host name %q", host)
						}
						for k, v := range labelsOf(m.Object) {
							assert.Empty(t, validation.IsValidLabelValue(v), "%s %q label %s=%q", kind, n, k, v)
						}
					}
				})
			}
		}
	}
}

// The default bucket is <project>-<cluster>-rl while that fits a bucket name's 63 characters,
// and a shortened, hashed name from 64 on: a 30-character project (the longest GCP allows) with
// a 29-character cluster name makes exactly 63.
func TestTheDefaultBucketKeepsItsPlainNameUpTo63Characters(t *testing.T) {
	const project = "abcdefghijklmnopqrstuvwxyz1234"
	bucket := func(clusterName string) string {
		return plantest.Resolve(t, "smoke", "gcp:project="+project, "cluster.name="+clusterName).Storage.Bucket.Name
	}
	assert.Equal(t, project+"-gke-rl-abcdefghijklmnopqrstuv-rl", bucket("gke-rl-abcdefghijklmnopqrstuv"))
	longer := bucket("gke-rl-abcdefghijklmnopqrstuvw")
	assert.Len(t, longer, 63)
	assert.NotEqual(t, project+"-gke-rl-abcdefghijklmnopqrstuvw-rl", longer, "64 characters: shortened")
}
