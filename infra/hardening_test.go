package infra_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"gke-rl/cluster"
	"gke-rl/infra/offline"
	"gke-rl/internal/kinds"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
)

// Every pod of the workload namespace runs under the runtime's default seccomp profile without a
// service account token, and without privilege escalation but in the NCCL gate (sshd); no pod
// but the RDMA installer (kube-system) mounts a host path writable.
func TestWorkloadPodsAreHardened(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack, "gate.enabled=true")
		pods := 0
		for _, m := range offline.Manifests(res) {
			meta, _ := m.Object["metadata"].(map[string]any)
			if meta["namespace"] != res.Blueprint.Namespace {
				continue
			}
			for path, spec := range podSpecs(m.Object) {
				pods++
				where := m.File + path
				assert.Equal(t, false, spec["automountServiceAccountToken"], where)
				sc, _ := spec["securityContext"].(map[string]any)
				seccomp, _ := sc["seccompProfile"].(map[string]any)
				assert.Equal(t, "RuntimeDefault", seccomp["type"], where)
				hostVolumes := map[string]bool{}
				for _, v := range spec["volumes"].([]any) {
					if vol := v.(map[string]any); vol["hostPath"] != nil {
						hostVolumes[vol["name"].(string)] = true
					}
				}
				inits, _ := spec["initContainers"].([]any)
				for _, c := range append(spec["containers"].([]any), inits...) {
					container := c.(map[string]any)
					csc, _ := container["securityContext"].(map[string]any)
					caps, _ := csc["capabilities"].(map[string]any)
					dropped := fmt.Sprint(caps["drop"])
					for _, capability := range []string{"NET_RAW", "MKNOD", "SETFCAP"} {
						assert.Contains(t, dropped, capability, "%s %s", where, container["name"])
					}
					if container["name"] == "nccl" {
						assert.Equal(t, true, csc["allowPrivilegeEscalation"], "%s: sshd", where)
						assert.NotContains(t, dropped, "SYS_CHROOT", "%s: sshd's privilege separation", where)
						assert.NotContains(t, dropped, "AUDIT_WRITE", "%s: sshd's login records", where)
					} else {
						assert.Equal(t, false, csc["allowPrivilegeEscalation"], "%s %s", where, container["name"])
						assert.Contains(t, dropped, "SYS_CHROOT", "%s %s", where, container["name"])
					}
					mounts, _ := container["volumeMounts"].([]any)
					for _, mt := range mounts {
						mount := mt.(map[string]any)
						if hostVolumes[mount["name"].(string)] {
							assert.Equal(t, true, mount["readOnly"], "%s %s mounts host volume %s", where, container["name"], mount["name"])
						}
					}
				}
			}
		}
		assert.GreaterOrEqual(t, pods, 5, stack)
		ns := one(t, res, "Namespace")
		labels := ns["metadata"].(map[string]any)["labels"].(map[string]any)
		assert.Equal(t, "privileged", labels["pod-security.kubernetes.io/enforce"], "hostPath volumes: the strictest level the GPU pods meet")
		assert.Equal(t, "baseline", labels["pod-security.kubernetes.io/warn"])
	}
}

// Every image a stack renders is pinned to its content by digest, or is one whose digest its
// upstream does not publish, which docs/architecture.md lists as tag-only with the reason.
func TestEveryImageIsPinnedByDigestOrListedAsTagOnly(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "architecture.md"))
	require.NoError(t, err)
	tagOnly := map[string]bool{}
	for _, stack := range plantest.Stacks {
		for _, m := range offline.Manifests(plantest.Plan(t, stack, "gate.enabled=true")) {
			eachMap(m.File, m.Object, func(where string, obj map[string]any) {
				image, ok := obj["image"].(string)
				if !ok || strings.Contains(image, "@sha256:") {
					return
				}
				// The README names an image by its upstream name; the plan pulls it through
				// the region's mirror: compare the last part, name:tag.
				tagOnly[path.Base(image)] = true
				assert.Contains(t, string(readme), path.Base(image), "%s: %s is pinned by tag only and not listed as such in docs/architecture.md", where, image)
			})
		}
	}
	assert.Len(t, tagOnly, 4, "the two framework images and the two gIB images: %v", tagOnly)
	assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "), "Tag-only, because their upstream publishes no digest where the pins come from", "the docs say why")
}

// The preview identity's ClusterRole covers every kind the program renders, on every variant
// (a new kind without a rule would fail the pull-request previews), and the access objects wait
// for the policy that limits them.
func TestPreviewAccessCoversEveryRenderedKind(t *testing.T) {
	covered := map[string]bool{}
	for _, r := range cluster.ManagedKinds {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				covered[g+"/"+res] = true
			}
		}
	}
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack, "gate.enabled=true", "tokens.huggingFace=true",
			"cluster.previewServiceAccount=gke-rl-preview@your-project-id.iam.gserviceaccount.com",
			"cluster.deployServiceAccount=gke-rl-deploy@your-project-id.iam.gserviceaccount.com")
		for _, m := range offline.Manifests(res) {
			gvk := schema.FromAPIVersionAndKind(fmt.Sprint(m.Object["apiVersion"]), fmt.Sprint(m.Object["kind"]))
			if gvk.Group == "admissionregistration.k8s.io" {
				continue // read-only to it, by design
			}
			resource, _ := meta.UnsafeGuessKindToResource(gvk)
			assert.True(t, covered[gvk.Group+"/"+resource.Resource], "%s: %s is not in cluster.ManagedKinds", stack, resource)
		}
		policy := res.Find("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "cluster-preview-validatingadmissionpolicy")
		require.NotNil(t, policy)
		for kind, name := range map[string]string{"ClusterRole": "cluster-preview-clusterrole", "ClusterRoleBinding": "cluster-preview-clusterrolebinding"} {
			r := res.Find("kubernetes:rbac.authorization.k8s.io/v1:"+kind, name)
			require.NotNil(t, r, name)
			assert.True(t, res.DependencyClosure(r)[policy.URN], "%s waits for the dry-run-only policy", name)
		}
	}
}

// No pod has the shared volume on its PYTHONPATH: a package planted there would run in every
// step of the pod (the data preparation's downloads hold the Hugging Face token); the checked
// commands import from their checked copies (VERIFIED_PYTHONPATH, run_verified).
func TestNoPodImportsFromTheVolume(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack, "gate.enabled=true", "tokens.huggingFace=true")
		mount := res.Blueprint.Storage.Volume.MountPath
		verified := 0
		for _, m := range offline.Manifests(res) {
			for path, spec := range podSpecs(m.Object) {
				containers, _ := spec["containers"].([]any)
				for _, c := range containers {
					env, _ := c.(map[string]any)["env"].([]any)
					for _, e := range env {
						kv, _ := e.(map[string]any)
						value, _ := kv["value"].(string)
						if kv["name"] == "PYTHONPATH" {
							for _, entry := range strings.Split(value, ":") {
								assert.False(t, entry == mount || strings.HasPrefix(entry, mount+"/"), "%s%s: PYTHONPATH %s is on the volume", m.File, path, value)
							}
						}
						if kv["name"] == workloads.VerifiedPythonPathEnv {
							verified++
						}
					}
				}
			}
		}
		if res.Blueprint.Run.Framework == kinds.Verl {
			assert.Positive(t, verified, "%s: the data preparation's checked commands get verl's checkout", stack)
		}
	}
}
