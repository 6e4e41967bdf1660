package infra_test

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/shlex"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/gpunode"
	"gke-rl/internal/kinds"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
)

const (
	rayJobType     = "kubernetes:ray.io/v1:RayJob"
	rayClusterType = "kubernetes:ray.io/v1:RayCluster"
	jobType        = "kubernetes:batch/v1:Job"
	secretType     = "kubernetes:core/v1:Secret"
	pvcType        = "kubernetes:core/v1:PersistentVolumeClaim"
	nodePoolType   = "gcp:container/nodePool:NodePool"
)

// get walks a rendered object by a dotted path; numbers index lists. A missing field is nil.
func get(t *testing.T, v any, path string) any {
	t.Helper()
	got, _ := offline.Lookup(v, path)
	return got
}

func manifestsOf(res *offline.Result, kind string) []map[string]any {
	var out []map[string]any
	for _, m := range offline.Manifests(res) {
		if m.Object["kind"] == kind {
			out = append(out, m.Object)
		}
	}
	return out
}

func one(t *testing.T, res *offline.Result, kind string) map[string]any {
	t.Helper()
	objs := manifestsOf(res, kind)
	require.Len(t, objs, 1, "want exactly one %s", kind)
	return objs[0]
}

// prepJob is the run's data preparation Job (the gate's Jobs are Jobs too).
func prepJob(t *testing.T, res *offline.Result) map[string]any {
	t.Helper()
	var preps []map[string]any
	for _, job := range manifestsOf(res, "Job") {
		if strings.HasSuffix(get(t, job, "metadata.name").(string), "-data-prep") {
			preps = append(preps, job)
		}
	}
	require.Len(t, preps, 1, "want exactly one data preparation Job")
	return preps[0]
}

// clusterSpecOf is the RayCluster spec the run uses: the RayJob's own, or the long-lived one's.
func clusterSpecOf(t *testing.T, res *offline.Result) map[string]any {
	t.Helper()
	if jobs := manifestsOf(res, "RayJob"); len(jobs) == 1 {
		if spec, ok := jobs[0]["spec"].(map[string]any)["rayClusterSpec"]; ok {
			return spec.(map[string]any)
		}
	}
	return one(t, res, "RayCluster")["spec"].(map[string]any)
}

func envOf(t *testing.T, container any) map[string]any {
	out := map[string]any{}
	for _, e := range get(t, container, "env").([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"]; ok {
			out[e["name"].(string)] = v
		} else {
			out[e["name"].(string)] = e["valueFrom"]
		}
	}
	return out
}

func TestB200SpotRunsARayJobWithItsOwnCluster(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	job := one(t, res, "RayJob")
	assert.Empty(t, manifestsOf(res, "RayCluster"), "never two Ray clusters on the same GPU nodes")
	assert.Empty(t, manifestsOf(res, "Secret"), "no token, no Secret")
	assert.Nil(t, get(t, job, "spec.clusterSelector"))
	assert.EqualValues(t, 10, get(t, job, "spec.backoffLimit"))
	workers := get(t, job, "spec.rayClusterSpec.workerGroupSpecs.0")
	assert.EqualValues(t, 8, get(t, workers, "replicas"))
	assert.Equal(t, "8", get(t, workers, "template.spec.containers.0.resources.limits").(map[string]any)["nvidia.com/gpu"])
	assert.Equal(t, map[string]any{"cloud.google.com/gke-nodepool": "ray-a4-gpu-spot-gpu"}, get(t, workers, "template.spec.nodeSelector"))
	assert.Equal(t, "/lustre/checkpoints/qwen2-5-72b-instruct-deepscaler-251dec", res.Outputs["checkpointDir"], "the experiment's directory")
	assert.Contains(t, get(t, job, "spec.entrypoint"), "checkpointing.checkpoint_dir=/lustre/checkpoints/qwen2-5-72b-instruct-deepscaler-251dec")
	assert.Equal(t, "qwen2-5-72b-instruct-deepscaler-251dec", res.Outputs["experiment"])
	assert.Equal(t, "kubectl -n rl-ray-a4-gpu-spot get rayjob qwen2-5-72b-instruct-deepscaler-251dec -w", res.Outputs["rayJobStatus"])
	assert.Equal(t, "kubectl -n rl-ray-a4-gpu-spot port-forward service/$(kubectl -n rl-ray-a4-gpu-spot get rayjob qwen2-5-72b-instruct-deepscaler-251dec -o jsonpath='{.status.rayClusterName}')-head-svc 8265:8265  # then `ray job list --address http://localhost:8265`, or open it in a browser that visits nothing else meanwhile (Ray's dashboard trusts pages of other sites: docs/architecture.md, Security)", res.Outputs["rayDashboard"])
}

func TestRayImageAndVersionOverrideTheFrameworkRelease(t *testing.T) {
	res := plantest.Plan(t, "b200-spot", "ray.image=us-docker.pkg.dev/acme/rl/nemo-rl:v0.5.0-patched", "ray.version=2.50.1")
	spec := clusterSpecOf(t, res)
	assert.Equal(t, "2.50.1", spec["rayVersion"])
	for _, path := range []string{"headGroupSpec.template.spec.containers.0.image", "workerGroupSpecs.0.template.spec.containers.0.image"} {
		assert.Equal(t, "us-docker.pkg.dev/acme/rl/nemo-rl:v0.5.0-patched", get(t, spec, path), path)
	}
	assert.Equal(t, "2.55.1", clusterSpecOf(t, plantest.Plan(t, "b200-spot"))["rayVersion"], "the pinned release otherwise")
}

func TestH200ReservedSharesItsLongLivedCluster(t *testing.T) {
	res := plantest.Plan(t, "h200-reserved")
	rc := one(t, res, "RayCluster")
	job := one(t, res, "RayJob")
	assert.Equal(t, map[string]any{"ray.io/cluster": get(t, rc, "metadata.name")}, get(t, job, "spec.clusterSelector"))
	assert.Nil(t, get(t, job, "spec.rayClusterSpec"))
	assert.Nil(t, get(t, job, "spec.backoffLimit"), "clusterSelector excludes backoffLimit")
	assert.Equal(t, "kubectl -n rl-verl-h200 port-forward service/verl-h200-head-svc 8265:8265  # then `ray job list --address http://localhost:8265`, or open it in a browser that visits nothing else meanwhile (Ray's dashboard trusts pages of other sites: docs/architecture.md, Security)", res.Outputs["rayDashboard"])

	prep := prepJob(t, res)
	script := get(t, prep, "spec.template.spec.containers.0.command.2").(string)
	assert.Contains(t, script, "checkout_commit /data/verl/v0.6.0 https://github.com/volcengine/verl.git ddd86f527a4af75095e4677b02b5aa272913a088")
	const gsm8k = "740312add88f781978c0658806c59bc2815b9866" // the stack's pin of openai/gsm8k
	assert.Contains(t, script, "gsm8k.py --local_dataset_path /data/datasets/hub/openai/gsm8k@"+gsm8k+" --local_save_dir /data/datasets/gsm8k@"+gsm8k)
	assert.Equal(t, "rl-support", get(t, prep, "spec.template.spec.serviceAccountName"), "the data preparation does not train: its account writes no checkpoint")
	assert.Equal(t, "true", get(t, prep, "spec.template.metadata.annotations.gke-gcsfuse/volumes"))
	assert.Equal(t, map[string]any{"cloud.google.com/gke-nodepool": "verl-h200-cpu"}, get(t, prep, "spec.template.spec.nodeSelector"))

	rayJob, prepJob, rayCluster := res.OfType(rayJobType)[0], res.Find(jobType, "grpo-data-prep"), res.OfType(rayClusterType)[0]
	deps := res.DependencyClosure(rayJob)
	assert.True(t, deps[prepJob.URN], "training starts after the data preparation")
	assert.True(t, deps[rayCluster.URN], "and after its cluster")
	assert.Equal(t, "py_modules:\n- /data/verl/v0.6.0/verl\n", get(t, job, "spec.runtimeEnvYAML"), "verl's code reaches every node's disk, not the import path through the bucket")
	assert.Equal(t, "/data", get(t, job, "spec.submitterPodTemplate.spec.containers.0.volumeMounts.0.mountPath"), "the submitter packages verl from the shared volume")
	assert.Equal(t, true, get(t, job, "spec.submitterPodTemplate.spec.containers.0.volumeMounts.0.readOnly"))
	assert.Equal(t, "ATTEMPTS=11", entrypointValue(t, job, "ATTEMPTS"), "on a shared cluster the entrypoint retries: job.backoffLimit + 1 attempts")
}

// entrypointValue is one of the values the RayJob's entrypoint gives run.sh (`env K=V ...`).
func entrypointValue(t *testing.T, job map[string]any, key string) string {
	t.Helper()
	words, err := shlex.Split(get(t, job, "spec.entrypoint").(string))
	require.NoError(t, err)
	for _, w := range words[:slices.Index(words, "bash")] {
		if strings.HasPrefix(w, key+"=") {
			return w
		}
	}
	return ""
}

func TestFrameworksSwapOnEitherStack(t *testing.T) {
	verl := plantest.Plan(t, "b200-spot", "framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]")
	assert.Contains(t, get(t, one(t, verl, "RayJob"), "spec.entrypoint"), "verl.trainer.main_ppo")
	assert.Equal(t, "us-east1-docker.pkg.dev/your-project-id/ray-a4-gpu-spot-docker-hub/verlai/verl:vllm011.dev7", get(t, clusterSpecOf(t, verl), "workerGroupSpecs.0.template.spec.containers.0.image"), "verlai/verl:vllm011.dev7 through the mirror")
	prepJob(t, verl) // verl prepares its data

	nemo := plantest.Plan(t, "h200-reserved", "framework=nemo-rl", "job.dataset=DeepScaler")
	assert.Contains(t, get(t, one(t, nemo, "RayJob"), "spec.entrypoint"), "examples/run_grpo.py")
	const nemoRL = "us-south1-docker.pkg.dev/your-project-id/verl-h200-nvcr/nvidia/nemo-rl:v0.7.0" // nvcr.io/nvidia/nemo-rl:v0.7.0
	assert.Equal(t, nemoRL, get(t, clusterSpecOf(t, nemo), "headGroupSpec.template.spec.containers.0.image"))
	prep := get(t, prepJob(t, nemo), "spec.template.spec.containers.0")
	assert.Contains(t, get(t, prep, "command.2"), "DeepScaleR-Preview-Dataset", "NeMo RL's data is staged on CPU nodes too")
	assert.Equal(t, nemoRL, get(t, prep, "image"))
}

// The framework image is pulled through an Artifact Registry remote repository of its registry,
// in the region, which the pods wait for; `ray.mirror=false` pulls it from its registry, and an
// image already in Artifact Registry is not mirrored.
func TestFrameworkImageComesThroughTheRegionsMirror(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	repo := res.Find("gcp:artifactregistry/repository:Repository", "cluster-images")
	require.NotNil(t, repo)
	assert.Equal(t, "ray-a4-gpu-spot-nvcr", plantest.Input(t, repo, "repositoryId"))
	assert.Equal(t, "us-east1", plantest.Input(t, repo, "location"))
	assert.Equal(t, "REMOTE_REPOSITORY", plantest.Input(t, repo, "mode"))
	assert.Equal(t, "https://nvcr.io", plantest.Input(t, repo, "remoteRepositoryConfig.commonRepository.uri"))
	job, prep := res.OfType(rayJobType)[0], res.Find(jobType, "grpo-data-prep")
	for _, r := range []*offline.Resource{job, prep} {
		assert.True(t, res.DependencyClosure(r)[repo.URN], "%s waits for the mirror", r.Name)
	}
	for _, pool := range []string{"cluster-cpu", "cluster-gpu"} {
		assert.Equal(t, true, plantest.Input(t, res.Find("gcp:container/nodePool:NodePool", pool), "nodeConfig.gcfsConfig.enabled"), "%s streams images", pool)
	}

	off := plantest.Plan(t, "b200-spot", "ray.mirror=false")
	assert.Empty(t, off.OfType("gcp:artifactregistry/repository:Repository"))
	assert.Equal(t, "nvcr.io/nvidia/nemo-rl:v0.7.0", get(t, clusterSpecOf(t, off), "headGroupSpec.template.spec.containers.0.image"))

	own := plantest.Plan(t, "b200-spot", "ray.image=us-docker.pkg.dev/acme/rl/nemo-rl:v0.5.0-patched")
	assert.Empty(t, own.OfType("gcp:artifactregistry/repository:Repository"), "already in Artifact Registry")

	hub := plantest.Plan(t, "h200-reserved")
	hubRepo := hub.Find("gcp:artifactregistry/repository:Repository", "cluster-images")
	require.NotNil(t, hubRepo)
	assert.Equal(t, "DOCKER_HUB", plantest.Input(t, hubRepo, "remoteRepositoryConfig.dockerRepository.publicRepository"))
}

func TestInterfaceAnnotationNamesTheNetworkObjects(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack)
		var networks []string
		for _, n := range manifestsOf(res, "Network") {
			networks = append(networks, get(t, n, "metadata.name").(string))
		}
		ann := get(t, clusterSpecOf(t, res), "workerGroupSpecs.0.template.metadata.annotations").(map[string]any)
		var ifaces []struct{ InterfaceName, Network string }
		require.NoError(t, json.Unmarshal([]byte(ann["networking.gke.io/interfaces"].(string)), &ifaces))
		var named []string
		for _, i := range ifaces[1:] {
			named = append(named, i.Network)
		}
		assert.ElementsMatch(t, networks, named, stack)
		assert.EqualValues(t, res.Outputs["podNetworks"], named, "%s: in NIC order", stack)
	}
}

func TestTunerFileMatchesTheGPU(t *testing.T) {
	for gpu, tuner := range map[string]string{"b200": "tuner_config_a4.txtpb", "h200": "tuner_config_a3u.txtpb"} {
		res := plantest.Plan(t, "b200-spot", plantest.GPU(gpu)...)
		worker := get(t, clusterSpecOf(t, res), "workerGroupSpecs.0.template.spec.containers.0")
		assert.Equal(t, "/usr/local/gib/configs/"+tuner, envOf(t, worker)["NCCL_TUNER_CONFIG_PATH"], gpu)
	}
}

// Each token reaches only the pods that read it, and only as a file: the Hugging Face token the
// data preparation (the Ray pods run offline), the W&B netrc the Ray pods (the run logs from
// them); never through the environment, which NeMo RL copies into every actor's runtime
// environment and the Ray dashboard shows.
func TestTokensReachPodsOnlyAsFiles(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack, "tokens.huggingFace=true", "tokens.wandb=true")
		assert.Len(t, res.OfType("kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass"), 2, "one a token")
		providerSecrets := map[any]string{}
		for _, class := range manifestsOf(res, "SecretProviderClass") {
			providerSecrets[get(t, class, "metadata.name")] = fmt.Sprint(get(t, class, "spec.parameters.secrets"))
		}
		tokenSecretOf := map[string]string{"HF_TOKEN_PATH": "-hf-token/versions/latest", "NETRC": "-wandb-netrc/versions/latest"}
		assert.Empty(t, res.OfType(secretType), "no token in the cluster's API or in Pulumi's state")
		spec := clusterSpecOf(t, res)
		pods := map[string]struct {
			pod                any
			env, absent, class string
		}{
			"head":   {get(t, spec, "headGroupSpec.template.spec"), "NETRC", "HF_TOKEN_PATH", "rl-wandb-netrc"},
			"worker": {get(t, spec, "workerGroupSpecs.0.template.spec"), "NETRC", "HF_TOKEN_PATH", "rl-wandb-netrc"},
			"prep":   {get(t, prepJob(t, res), "spec.template.spec"), "HF_TOKEN_PATH", "NETRC", "rl-hf-token"},
		}
		for name, p := range pods {
			env := envOf(t, get(t, p.pod, "containers.0"))
			assert.Equal(t, map[string]string{"NETRC": "/var/run/secrets/gke-rl/tokens/netrc", "HF_TOKEN_PATH": "/var/run/secrets/gke-rl/tokens/hf-token"}[p.env], env[p.env], "%s %s", stack, name)
			assert.NotContains(t, env, p.absent, "%s %s reads the other token", stack, name)
			for key, v := range env {
				_, byRef := v.(map[string]any)
				assert.False(t, byRef, "%s %s: %s comes from a Secret into the environment", stack, name, key)
			}
			assert.NotContains(t, env, "HF_TOKEN")
			assert.NotContains(t, env, "WANDB_API_KEY")
			var classes []any
			for _, v := range get(t, p.pod, "volumes").([]any) {
				if c, ok := v.(map[string]any)["csi"]; ok && get(t, c, "driver") == "secrets-store-gke.csi.k8s.io" {
					classes = append(classes, get(t, c, "volumeAttributes.secretProviderClass"))
				}
			}
			assert.Equal(t, []any{p.class}, classes, "%s %s mounts its token alone", stack, name)
			// The class the pod names is one the plan creates, and it names this token's secret.
			secrets, ok := providerSecrets[p.class]
			require.True(t, ok, "%s %s mounts %v, which the plan does not create", stack, name, p.class)
			assert.Contains(t, secrets, tokenSecretOf[p.env], "%s %s", stack, name)
		}
		rayJob := res.OfType(rayJobType)[0]
		for _, binding := range res.OfType("gcp:secretmanager/secretIamMember:SecretIamMember") {
			assert.True(t, res.DependencyClosure(rayJob)[binding.URN], "pods start once they may read the secrets")
		}
		for _, class := range res.OfType("kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass") {
			assert.True(t, res.DependencyClosure(rayJob)[class.URN])
		}
	}
	assert.Contains(t, get(t, one(t, plantest.Plan(t, "b200-spot", "tokens.wandb=true"), "RayJob"), "spec.entrypoint"), "logger.wandb_enabled=True", "W&B is on with its token")
}

func TestRayObjectsWaitForWhatTheyUseOnly(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack)
		for _, typ := range []string{rayJobType, rayClusterType} {
			for _, r := range res.OfType(typ) {
				deps := res.DependencyClosure(r)
				assert.True(t, deps[res.OfType(pvcType)[0].URN], "%s %s waits for the claim", stack, typ)
				assert.True(t, deps[res.Find("kubernetes:core/v1:Namespace", "cluster-workloads").URN], "%s %s waits for its namespace", stack, typ)
				assert.True(t, deps[res.Find("kubernetes:networking.k8s.io/v1:NetworkPolicy", "ray-head-ingress").URN], "%s %s starts behind the head's policy", stack, typ)
				for _, access := range append(res.OfType("kubernetes:core/v1:ServiceAccount"), res.OfType("gcp:storage/bucketIAMMember:BucketIAMMember")...) {
					assert.True(t, deps[access.URN], "%s %s waits for the storage access %s", stack, typ, access.Name)
				}
				for _, cr := range append(res.OfType("kubernetes:networking.gke.io/v1:Network"), res.OfType("kubernetes:networking.gke.io/v1:GKENetworkParamSet")...) {
					assert.True(t, deps[cr.URN], "%s %s waits for %s", stack, typ, cr.Name)
				}
				assertWaitsForTheGPUs(t, res, deps, stack+" "+typ)
			}
		}
	}
}

// assertWaitsForTheGPUs checks that a GPU workload waits for the GPU pool and the RDMA
// installer, and not for the CPU pool (KubeRay waits for the head's node).
func assertWaitsForTheGPUs(t *testing.T, res *offline.Result, deps map[string]bool, what string) {
	t.Helper()
	installer := res.OfType("kubernetes:apps/v1:DaemonSet")
	require.Len(t, installer, 1)
	assert.True(t, deps[installer[0].URN], "%s waits for the RDMA installer", what)
	for _, pool := range res.OfType(nodePoolType) {
		gpu := strings.HasSuffix(pool.Name, "-gpu")
		assert.Equal(t, gpu, deps[pool.URN], "%s waits for node pool %s: %v", what, pool.Name, gpu)
	}
}

// The gate's Jobs start once the GPU pool and the installer on its nodes are ready: their
// deadlines count the gate, not the pool's creation.
func TestGateWaitsForTheGPUPoolAndTheInstaller(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack, "gate.enabled=true")
		for _, name := range []string{"gate-nccl", "gate-storage"} {
			job := res.Find("kubernetes:batch/v1:Job", name)
			require.NotNil(t, job, stack)
			assertWaitsForTheGPUs(t, res, res.DependencyClosure(job), stack+" "+name)
		}
		installer := res.OfType("kubernetes:apps/v1:DaemonSet")[0]
		assert.True(t, res.DependencyClosure(installer)[res.Find(nodePoolType, "cluster-gpu").URN], "%s: the installer is created after the GPU pool, so that it awaits its nodes", stack)
	}
}

func TestJobDisabledLeavesAnInteractiveCluster(t *testing.T) {
	res := plantest.Plan(t, "b200-spot", "job.enabled=false")
	one(t, res, "RayCluster")
	assert.Empty(t, manifestsOf(res, "RayJob"))
	assert.NotContains(t, res.Outputs, "rayJob")
	assert.Contains(t, res.Outputs, "rayJobSubmit")
}

// rayClusterSpec is the RayCluster spec the run uses: the RayJob's own, or the long-lived one's.
func rayClusterSpec(bp *infra.Blueprint) *rayv1.RayClusterSpec {
	if bp.Run.RayJob != nil && bp.Run.RayJob.Spec.RayClusterSpec != nil {
		return bp.Run.RayJob.Spec.RayClusterSpec
	}
	return &bp.Run.RayCluster.Spec
}

// TestRunMatrix resolves every combination of GPU, provisioning, storage, framework and mode,
// and checks the rules that hold across components.
func TestRunMatrix(t *testing.T) {
	for _, gpu := range []string{"b200", "h200"} {
		for _, prov := range kinds.Provisionings {
			for _, st := range kinds.StorageTypes {
				for _, fw := range kinds.Frameworks {
					for _, mode := range kinds.Modes {
						name := fmt.Sprintf("%s %s %s %s %s", gpu, prov, st, fw, mode)
						t.Run(name, func(t *testing.T) {
							o := append(plantest.GPU(gpu), "gpu.provisioning="+string(prov), "storage.type="+string(st), "framework="+string(fw), "cluster.mode="+string(mode))
							if prov == kinds.Reservation {
								o = append(o, "gpu.reservation=res-1")
							}
							if fw == kinds.Verl {
								o = append(o, "job.dataset=gsm8k", "job.recipe=", "job.args=[]")
							}
							if gpu == "b200" && prov == kinds.OnDemand {
								_, err := plantest.TryResolve("b200-spot", o...)
								require.ErrorContains(t, err, "on-demand is not offered for a4-highgpu-8g", "A4 is not offered on demand")
								return
							}
							if st == kinds.Lustre && mode == kinds.Autopilot {
								_, err := plantest.TryResolve("b200-spot", o...)
								require.ErrorContains(t, err, "lustre is not allowed with cluster.mode=autopilot", "Autopilot's Secure Boot CPU nodes cannot mount Lustre")
								return
							}
							bp := plantest.Resolve(t, "b200-spot", o...)
							require.NotNil(t, bp.Run.RayJob)
							if prov.Preemptible() {
								assert.Equal(t, kinds.OwnCluster, bp.Run.Mode)
								assert.Nil(t, bp.Run.RayCluster, "never two Ray clusters on the same GPU nodes")
								assert.NotNil(t, bp.Run.RayJob.Spec.BackoffLimit, "a preempted run retries")
								assert.Contains(t, bp.Run.RayJob.Spec.Entrypoint, " ATTEMPTS=1 ", "on a new cluster, by KubeRay")
							} else {
								assert.Equal(t, kinds.SharedCluster, bp.Run.Mode)
								require.NotNil(t, bp.Run.RayCluster)
								assert.Equal(t, bp.Run.RayCluster.Name, bp.Run.RayJob.Spec.ClusterSelector["ray.io/cluster"])
								assert.Nil(t, bp.Run.RayJob.Spec.BackoffLimit, "a retry would delete the shared cluster")
								assert.Contains(t, bp.Run.RayJob.Spec.Entrypoint, " ATTEMPTS=11 ", "on the same cluster, by the entrypoint")
							}
							submitter := bp.Run.RayJob.Spec.SubmitterPodTemplate
							require.NotNil(t, submitter, "the submitter that waits for the job's end")
							assert.Equal(t, bp.HeadSelector, submitter.Spec.NodeSelector)
							assert.Equal(t, bp.Run.RayJob.Spec.Entrypoint, envValue(submitter.Spec.Containers[0].Env, "ENTRYPOINT"), "it submits the RayJob's own entrypoint")
							require.NotNil(t, bp.Deadline, "a derived deadline")
							if prov.Preemptible() {
								assert.NotNil(t, bp.Run.RayJob.Spec.ActiveDeadlineSeconds, "KubeRay's, per attempt")
							} else {
								assert.Nil(t, bp.Run.RayJob.Spec.ActiveDeadlineSeconds, "KubeRay's would stop nothing on the shared cluster")
								assert.Contains(t, bp.Run.RayJob.Spec.Entrypoint, fmt.Sprintf(" RUN_DEADLINE_SECONDS=%d ", bp.Deadline.Seconds), "the entrypoint's, for the run")
							}
							spec := rayClusterSpec(bp)
							head := spec.HeadGroupSpec.Template.Spec
							assert.Empty(t, head.Tolerations, "the head never tolerates the GPU taint")
							assert.NotContains(t, head.NodeSelector, gpunode.SpotLabel)
							assert.NotContains(t, head.NodeSelector, gpunode.AcceleratorLabel)
							worker := spec.WorkerGroupSpecs[0].Template
							assert.Equal(t, []corev1.Toleration{gpunode.Toleration()}, worker.Spec.Tolerations)
							assert.Equal(t, bp.WorkerSelector, worker.Spec.NodeSelector)
							if mode == kinds.Autopilot {
								assert.Equal(t, "8", worker.Spec.NodeSelector[gpunode.AcceleratorCountLabel], "a string")
							} else {
								assert.Equal(t, bp.Cluster.GPUPool.Name, worker.Spec.NodeSelector[gpunode.NodePoolLabel])
							}
							if st == kinds.GCSFuse {
								assert.Equal(t, "rl-storage", worker.Spec.ServiceAccountName)
							}
							assert.Equal(t, gpunode.InterfaceAnnotations(bp.NICs)[gpunode.InterfacesAnnotation], worker.Annotations[gpunode.InterfacesAnnotation])
							assert.Equal(t, bp.Hardware.NCCLTunerConfig, envValue(worker.Spec.Containers[0].Env, "NCCL_TUNER_CONFIG_PATH"))
						})
					}
				}
			}
		}
	}
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// NeMo RL's driver runs on the head and copies its environment into every actor: the head must
// carry the workers' NCCL settings, or the actors on GPU nodes lose the gIB plugin's library
// path and NCCL falls back to sockets.
func TestEveryRayProcessHasTheWorkersNCCLSettings(t *testing.T) {
	for _, stack := range plantest.Stacks {
		spec := rayClusterSpec(plantest.Resolve(t, stack))
		head := spec.HeadGroupSpec.Template.Spec.Containers[0].Env
		worker := spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env
		for _, name := range []string{"LD_LIBRARY_PATH", "NCCL_TUNER_CONFIG_PATH", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS"} {
			assert.NotEmpty(t, envValue(worker, name), "%s worker %s", stack, name)
			assert.Equal(t, envValue(worker, name), envValue(head, name), "%s: the head passes %s on to the actors", stack, name)
		}
		assert.Equal(t, "INIT,NET", envValue(worker, "NCCL_DEBUG_SUBSYS"), "each communicator says which transport it uses, once")
	}
}

// A preempted run resumes from the newest checkpoint: each framework's resume setting, a
// checkpoint directory on the shared volume named after the run (the same on every retry), and
// data staged by a Job outside the RayJob, which a retry does not repeat.
func TestPreemptedRunsResumeFromTheNewestCheckpoint(t *testing.T) {
	cases := []struct {
		framework string
		overrides []string
		resume    []string
	}{
		// NeMo RL resumes by itself from the newest checkpoint in checkpointing.checkpoint_dir.
		{"nemo-rl", nil, []string{"checkpointing.enabled=True", "checkpointing.checkpoint_dir=/lustre/checkpoints/qwen2-5-72b-instruct-deepscaler-251dec"}},
		// verl resumes with trainer.resume_mode=auto from trainer.default_local_dir.
		{"verl", []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"}, []string{"trainer.resume_mode=auto", "trainer.default_local_dir=/lustre/checkpoints/qwen2-5-72b-instruct-gsm8k-9f2bd2"}},
	}
	for _, tc := range cases {
		t.Run(tc.framework, func(t *testing.T) {
			bp := plantest.Resolve(t, "b200-spot", tc.overrides...)
			job := bp.Run.RayJob
			require.Equal(t, kinds.OwnCluster, bp.Run.Mode)
			assert.Equal(t, path.Base(bp.Run.Layout.Checkpoints()), job.Name, "the experiment names the job and its directory: the same on every retry")
			for _, o := range tc.resume {
				assert.Contains(t, job.Spec.Entrypoint, o)
			}
			assert.True(t, strings.HasPrefix(bp.Run.Layout.Checkpoints(), bp.Storage.Volume.MountPath+"/"), "on the shared volume")
			assert.NotNil(t, job.Spec.BackoffLimit, "KubeRay retries on a fresh cluster")
			assert.Contains(t, job.Spec.Entrypoint, " ATTEMPTS=1 ", "and the entrypoint does not")
			require.NotNil(t, bp.Run.Prep, "data is staged by a Job of its own")
			assert.NotContains(t, job.Spec.Entrypoint, "snapshot_download", "a retry does not download again")
		})
	}
}

// The command each shipped stack runs, with either framework at each of its releases, is one that
// release accepts: its overrides, read back from the rendered RayJob, are keys of the release's
// config and pass its startup checks.
func TestRenderedCommandsPassTheFrameworksChecks(t *testing.T) {
	switchTo := map[string][]string{
		"nemo-rl": {"framework=nemo-rl", "job.dataset=DeepScaler"},
		"verl":    {"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"},
	}
	for _, stack := range plantest.Stacks {
		for _, fw := range kinds.Frameworks {
			for _, tag := range workloads.ReleaseTags(fw) {
				t.Run(stack+" "+string(fw)+" "+tag, func(t *testing.T) {
					release := workloads.ReleaseOf(fw, tag)
					overrides := append(slices.Clone(switchTo[string(fw)]), "job.frameworkRelease="+tag)
					if release.Removed != nil {
						// b200-spot's own job.args name a key v0.7.0 removed, which the plan
						// refuses (TestReleaseRulesFailThePlanWithTheirKey): the stack moves without it.
						overrides = append(overrides, "job.args=[]")
					}
					if release.Image == "" {
						overrides = append(overrides, pinnedImage...)
					}
					bp := plantest.Resolve(t, stack, overrides...)
					assertCommandPasses(t, bp, release)
				})
			}
		}
	}
}

// Queued experiments train each with its release (jobs.<name>.frameworkRelease, or job's), and a
// queue of one release passes that release's checks.
func TestQueuedExperimentsPassTheirReleasesChecks(t *testing.T) {
	verl := []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]", "jobs.a.maxSteps=4", "jobs.b.learningRate=2e-6"}
	for _, tag := range workloads.ReleaseTags(kinds.Verl) {
		t.Run(tag, func(t *testing.T) {
			release := workloads.ReleaseOf(kinds.Verl, tag)
			overrides := append(slices.Clone(verl), "jobs.b.frameworkRelease="+tag, "job.frameworkRelease="+tag)
			if release.Image == "" {
				overrides = append(overrides, pinnedImage...)
			}
			bp := plantest.Queued(t, overrides...).Blueprint
			require.Len(t, bp.Run.Experiments, 2)
			assertCommandPasses(t, bp, release)
			for _, x := range bp.Run.Experiments {
				assert.Contains(t, x.RayJob.Spec.RuntimeEnvYAML, "/verl/"+tag+"/verl", "the release's checked package ships")
			}
		})
	}
	// NeMo RL's queue on smoke: one experiment at each release, each its own image, Ray and
	// launcher (no ray.image: the two releases' images are the program's).
	t.Run("nemo-rl at both releases", func(t *testing.T) {
		bp := plantest.Queued(t, "framework=nemo-rl", "job.dataset=DeepScaler", "jobs.a.frameworkRelease=v0.5.0", "jobs.b.maxSteps=4").Blueprint
		require.Len(t, bp.Run.Experiments, 2)
		for _, x := range bp.Run.Experiments {
			tag := map[string]string{"a": "v0.5.0", "b": "v0.7.0"}[x.Name]
			release := workloads.ReleaseOf(kinds.NeMoRL, tag)
			assert.Equal(t, release, x.Release)
			assert.Equal(t, release.RayVersion, x.RayJob.Spec.RayClusterSpec.RayVersion, x.Name)
			assert.True(t, strings.HasSuffix(x.RayJob.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image, "/nvidia/nemo-rl:"+tag), x.Name)
			assert.Contains(t, x.RayJob.Spec.Entrypoint, " "+release.Launcher+" ", x.Name)
			assertCommandPasses(t, &infra.Blueprint{Run: infra.RunPlan{RayJob: x.RayJob}}, release)
		}
	})
	t.Run("the experiments' release, not job's", func(t *testing.T) {
		// job trains with v0.6.0 (its default); both experiments set v0.7.0 themselves.
		bp := plantest.Queued(t, append(slices.Clone(verl), append([]string{"jobs.a.frameworkRelease=v0.7.0", "jobs.b.frameworkRelease=v0.7.0"}, pinnedImage...)...)...).Blueprint
		for _, x := range bp.Run.Experiments {
			assert.Equal(t, "verl v0.7.0", x.Release.Name(), x.Name)
			assert.Contains(t, x.RayJob.Spec.Entrypoint, "actor_rollout_ref.rollout.mode=async", x.Name)
		}
	})
	for _, fw := range kinds.Frameworks {
		for _, tag := range workloads.ReleaseTags(fw) {
			t.Run(string(fw)+" "+tag+" prepares its own release", func(t *testing.T) {
				release := workloads.ReleaseOf(fw, tag)
				overrides := []string{"framework=" + string(fw), "job.frameworkRelease=" + tag}
				if fw == kinds.Verl {
					overrides = append(overrides, "job.dataset=gsm8k", "job.recipe=", "job.args=[]")
				} else {
					overrides = append(overrides, "job.dataset=DeepScaler")
				}
				if release.Image == "" {
					overrides = append(overrides, pinnedImage...)
				}
				bp := plantest.Resolve(t, "smoke", overrides...)
				prep, err := json.Marshal(bp.Run.Prep)
				require.NoError(t, err)
				if fw == kinds.Verl {
					assert.Contains(t, string(prep), "checkout_commit "+bp.Storage.Volume.MountPath+"/verl/"+tag+" "+workloads.VerlRepository+" "+release.Source.Commit, "the checkout is the release's commit")
					assert.Contains(t, string(prep), release.Source.PackageTree)
					assert.Contains(t, string(prep), release.Source.PreprocessTree)
				}
				// smoke pulls through its mirror: the image's path follows the mirror's.
				image := bp.Run.RayJob.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image
				if release.Image != "" {
					assert.True(t, strings.HasSuffix(image, "/"+strings.TrimPrefix(release.Image, "nvcr.io/")), image)
					assert.Equal(t, release.RayVersion, bp.Run.RayJob.Spec.RayClusterSpec.RayVersion)
				} else {
					assert.True(t, strings.HasSuffix(image, "/"+strings.TrimPrefix(pinnedImage[0], "ray.image=")), image)
					assert.Equal(t, "2.53.0", bp.Run.RayJob.Spec.RayClusterSpec.RayVersion)
				}
			})
		}
	}
}

// A release the program does not run, one without an image of its own and none pinned, a moving
// tag, and one image for experiments of two releases are refused with the key, the value and
// what is allowed.
func TestReleaseRulesFailThePlanWithTheirKey(t *testing.T) {
	verl := []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"}
	v070 := []string{"job.frameworkRelease=v0.7.0"} // h200-reserved trains with verl
	digest := "@sha256:" + strings.Repeat("5", 64)
	assertRefused(t, []refusal{
		{"a release the program does not run", "h200-reserved", []string{"job.frameworkRelease=v0.6.1"}, "job.frameworkRelease", `"v0.6.1" is not a release of verl that the program runs; allowed: v0.6.0, v0.7.0`},
		{"NeMo RL's releases are its own", "b200-spot", []string{"job.frameworkRelease=v0.6.0"}, "job.frameworkRelease", "allowed: v0.5.0"},
		{"verl v0.7.0 with no image pinned", "h200-reserved", v070, "job.frameworkRelease", "verl v0.7.0 names no image that stays the same (its docs use a moving tag, built from docker/Dockerfile.stable.vllm at v0.7.0), and this stack pins none; allowed: v0.6.0, or set ray.image to that image pinned by digest"},
		{"verl v0.7.0 with its image by tag", "h200-reserved", append(slices.Clone(v070), "ray.image=verlai/verl:vllm012.dev1", "ray.version=2.53.0"), "job.frameworkRelease", "pinned by digest (`docker buildx imagetools inspect IMAGE` prints it"},
		{"verl v0.7.0 with its image but not its Ray", "h200-reserved", append(slices.Clone(v070), "ray.image=verlai/verl:vllm012.latest"+digest), "job.frameworkRelease", "and ray.version to the Ray inside it"},
		{"a moving tag of a line", "h200-reserved", []string{"ray.image=verlai/verl:vllm012.latest"}, "ray.image", `"verlai/verl:vllm012.latest" uses a moving tag (latest)`},
		{"the moving tag latest", "h200-reserved", []string{"ray.image=verlai/verl:latest"}, "ray.image", "uses a moving tag (latest)"},
		{"the synchronous rollout v0.7.0 removed", "h200-reserved", append(slices.Clone(v070), pinnedImage[0], pinnedImage[1], "job.args[0]=actor_rollout_ref.rollout.mode=sync"), "job.args[0]", "sets actor_rollout_ref.rollout.mode, which the program sets; the program fixes it: verl v0.7.0 removed the synchronous rollout"},
		{"a key NeMo RL v0.7.0 removed", "b200-spot", []string{`job.args=["policy.megatron_cfg.converter_type=Qwen2ForCausalLM"]`}, "job.args[0]", "policy.megatron_cfg.converter_type is not a key of nemo-rl v0.7.0's config (examples/configs/grpo_math_70B_megatron.yaml); nemo-rl v0.7.0 removed it: unused, removed in commit 50972b9c9; remove it from job.args"},
		{"a key NeMo RL v0.7.0 moved", "b200-spot", []string{"job.frameworkRelease=v0.7.0", `job.args=["data.prompt_file=examples/prompts/cot.txt"]`}, "job.args[0]", "nemo-rl v0.7.0 moved it: now data.default.prompt_file"},
		{"a Ray that is not the release's image's", "h200-reserved", []string{"ray.version=2.53.0"}, "ray.version", `"2.53.0" is not the Ray of verl v0.6.0's image verlai/verl:vllm011.dev7 (2.49.2)`},
		{"one image for two releases' experiments", "smoke", append(slices.Clone(verl), "jobs.a.maxSteps=4", "jobs.b.frameworkRelease=v0.7.0", pinnedImage[0], pinnedImage[1]), "ray.image", "is every experiment's image, but the experiments train with verl releases v0.6.0 and v0.7.0"},
	})
	// v0.6.0's runs leave the mode to job.args (the program sets it on v0.7.0's only).
	plantest.Resolve(t, "h200-reserved", "job.args[0]=actor_rollout_ref.rollout.mode=async")
	// Pinned by digest, the line's moving tag is the image every node runs.
	plantest.Resolve(t, "h200-reserved", append(slices.Clone(v070), "ray.image=verlai/verl:vllm012.latest"+digest, "ray.version=2.53.0")...)
}

// A release is part of what an experiment's checkpoints mean: the first release's experiments
// keep the names they had, another release's train under names of their own.
func TestAReleaseIsPartOfTheExperiment(t *testing.T) {
	before := plantest.Resolve(t, "h200-reserved").Run.Layout.Run // verl
	assert.Equal(t, before, plantest.Resolve(t, "h200-reserved", "job.frameworkRelease=v0.6.0").Run.Layout.Run, "v0.6.0 named explicitly: the same experiment")
	// The name testdata/h200-reserved.plan.json held before releases could be chosen.
	assert.Equal(t, "qwen2-5-32b-instruct-gsm8k-f31a59", before)
	after := plantest.Resolve(t, "h200-reserved", append([]string{"job.frameworkRelease=v0.7.0"}, pinnedImage...)...).Run.Layout.Run
	assert.NotEqual(t, before, after, "v0.7.0 trains another experiment")
	assert.True(t, strings.HasPrefix(after, "qwen2-5-32b-instruct-gsm8k-"), after)
	// NeMo RL's default moved to v0.7.0: b200-spot trains a new experiment, and v0.5.0, named,
	// keeps the one it trained before (its name in testdata/b200-spot.plan.json until then).
	nemo := plantest.Resolve(t, "b200-spot").Run.Layout.Run
	v050 := plantest.Resolve(t, "b200-spot", "job.frameworkRelease=v0.5.0").Run.Layout.Run
	assert.Equal(t, "qwen2-5-72b-instruct-deepscaler-cedcb5", v050)
	assert.NotEqual(t, v050, nemo)
	assert.True(t, strings.HasPrefix(nemo, "qwen2-5-72b-instruct-deepscaler-"), nemo)
}

// pinnedImage is ray.image pinned by digest, and its Ray, as a stack running a release without an
// image of its own sets them (the digest stands in for the one the registry prints).
var pinnedImage = []string{"ray.image=verlai/verl:vllm012.latest@sha256:" + strings.Repeat("5", 64), "ray.version=2.53.0"}

// assertCommandPasses reads the framework's command back from the run's RayJob and checks it
// against the release's configuration and startup checks.
func assertCommandPasses(t *testing.T, bp *infra.Blueprint, release workloads.Release) {
	t.Helper()
	jobs := []*rayv1.RayJob{bp.Run.RayJob}
	if len(bp.Run.Experiments) > 0 {
		jobs = nil
		for _, x := range bp.Run.Experiments {
			jobs = append(jobs, x.RayJob)
		}
	}
	for _, job := range jobs {
		if job == nil {
			continue // a stopped experiment
		}
		words, err := shlex.Split(job.Spec.Entrypoint)
		require.NoError(t, err)
		// The framework's command follows run.sh: `env ... bash /etc/gke-rl/run.sh ...`.
		prep := slices.Index(words, "bash")
		require.Equal(t, workloads.RunScriptPath, words[prep+1])
		words = words[prep+2:]
		recipe := ""
		for i, w := range words {
			if w == "--config" {
				recipe = words[i+1]
			}
		}
		var overrides []string
		for _, w := range words {
			if k, _, ok := strings.Cut(w, "="); ok && strings.Contains(k, ".") {
				overrides = append(overrides, w)
			}
		}
		require.NotEmpty(t, overrides)
		assert.Empty(t, workloads.CheckCommand(release, recipe, overrides), job.Name)
		if release.Framework == kinds.Verl && release.Tag != "v0.6.0" {
			assert.Contains(t, overrides, "actor_rollout_ref.rollout.mode=async", "v0.7.0's rollout mode, named")
		}
	}
}

func TestFrameworkRulesFailThePlanWithTheirKey(t *testing.T) {
	verl := []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"}
	assertRefused(t, []refusal{
		{"a misspelled override", "h200-reserved", []string{"job.args[0]=actor_rollout_ref.actor.ppo_mini_batch_sze=8"}, "job.args[0]", "is not a key of verl v0.6.0's config"},
		{"a NeMo RL override with verl", "b200-spot", []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", `job.args=["policy.megatron_cfg.converter_type=Qwen2ForCausalLM"]`}, "job.args[0]", "it is a nemo-rl key"},
		{"a NeMo RL recipe with verl", "b200-spot", []string{"framework=verl", "job.dataset=gsm8k", "job.args=[]"}, "job.recipe", "framework verl does not read"},
		{"a verl dataset with NeMo RL", "h200-reserved", []string{"framework=nemo-rl"}, "job.dataset", "DAPOMath17K, DeepScaler, OpenMathInstruct-2"},
		{"too few prompts for verl's GPUs", "b200-spot", append(verl, "job.promptsPerStep=4"), "job.promptsPerStep", "must be divisible by the 64 GPUs"},
		{"nodes that the recipe's parallelism does not divide", "b200-spot", []string{"gpu.nodes=3"}, "gpu.nodes", "PP × CP × TP (16) must divide the 24 GPUs"},
		{"a recipe the pinned release does not ship", "b200-spot", []string{"job.recipe=examples/configs/grpo_math_9B.yaml"}, "job.recipe", "allowed: examples/configs/grpo_math_1B.yaml"},
	})
}

func TestNodePoolsFitLustreAndMultiDayRuns(t *testing.T) {
	lustre := plantest.Resolve(t, "b200-spot")
	assert.False(t, lustre.Cluster.CPUPool.SecureBoot, "the head's pool mounts Lustre, whose client loads on Secure Boot nodes only of GPU machine types")
	assert.Equal(t, 32, lustre.Cluster.GPUPool.LocalSSDs)
	assert.Equal(t, "2027-04-10T00:00:00Z", lustre.Cluster.Maintenance.NoUpgradesUntil)
	fuse := plantest.Resolve(t, "h200-reserved")
	assert.True(t, fuse.Cluster.CPUPool.SecureBoot, "no Lustre client, Secure Boot stays")
	assert.Equal(t, 32*375*1024/2, fuse.Storage.Bucket.FileCacheMiB, "half of a GPU node's local SSDs")
	assert.Empty(t, plantest.Resolve(t, "b200-spot", "cluster.noUpgradesUntil=none").Cluster.Maintenance.NoUpgradesUntil)
	assert.True(t, plantest.Resolve(t, "b200-spot", "gpu.placement=compact").Cluster.GPUPool.CompactPlacement)
	assert.False(t, plantest.Resolve(t, "b200-spot", "storage.gkeSupport=false").Cluster.LustreLegacyPort, "port 988, GKE's default for new clusters")
	assert.True(t, lustre.Cluster.LustreLegacyPort, "the shipped stack opts into GKE support, and the cluster follows")
}

// NeMo RL v0.5.0 waits, with no timeout, for a placement group of one {"CPU": 1} bundle on every
// alive Ray node, STRICT_SPREAD (nemo_rl/utils/venvs.py lines 161-167): every node of its Ray
// cluster, the head included, must advertise a CPU, or the run never starts. verl v0.6.0 has no
// such group; its head stays CPU-less. Both frameworks on both stacks (own and long-lived
// clusters).
func TestRayClusterSatisfiesTheFrameworksStartup(t *testing.T) {
	cases := []struct {
		stack, framework string
		overrides        []string
	}{
		{"b200-spot", "nemo-rl", nil},  // the job's own cluster
		{"h200-reserved", "verl", nil}, // the long-lived cluster
		{"h200-reserved", "nemo-rl", []string{"framework=nemo-rl", "job.dataset=DeepScaler"}},
	}
	for _, tc := range cases {
		t.Run(tc.stack+" "+tc.framework, func(t *testing.T) {
			res := plantest.Plan(t, tc.stack, tc.overrides...)
			spec := clusterSpecOf(t, res)
			headCPUs, err := strconv.Atoi(get(t, spec, "headGroupSpec.rayStartParams.num-cpus").(string))
			require.NoError(t, err)
			_, workerOverride := offline.Lookup(spec, "workerGroupSpecs.0.rayStartParams.num-cpus")
			require.False(t, workerOverride, "KubeRay derives the workers' CPUs from their limits")
			workerCPUs := resource.MustParse(get(t, spec, "workerGroupSpecs.0.template.spec.containers.0.resources.limits.cpu").(string))
			if tc.framework == "nemo-rl" {
				assert.GreaterOrEqual(t, headCPUs, 1, "the head holds a bundle of the venv placement group")
				assert.GreaterOrEqual(t, workerCPUs.Value(), int64(1))
				assert.Less(t, headCPUs, 8, "and no more: the head's pod has 8 CPUs and no GPU")
			} else {
				assert.Zero(t, headCPUs, "nothing of verl's needs the head")
			}
		})
	}
}

// Once the data preparation has staged the model and the datasets, no Ray process goes to the
// Hugging Face Hub: the Ray pods are offline; the data preparation, which downloads, is not.
func TestRayPodsAreOfflineAndDataPrepIsNot(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack)
		spec := clusterSpecOf(t, res)
		for _, path := range []string{"headGroupSpec.template.spec.containers.0", "workerGroupSpecs.0.template.spec.containers.0"} {
			env := envOf(t, get(t, spec, path))
			assert.Equal(t, "1", env["HF_HUB_OFFLINE"], "%s %s", stack, path)
			assert.Equal(t, "1", env["HF_DATASETS_OFFLINE"], "%s %s", stack, path)
		}
		preps := 0
		for _, job := range manifestsOf(res, "Job") {
			if strings.HasSuffix(get(t, job, "metadata.name").(string), "-data-prep") {
				preps++
				env := envOf(t, get(t, job, "spec.template.spec.containers.0"))
				assert.NotContains(t, env, "HF_HUB_OFFLINE", "%s: the data preparation downloads", stack)
				assert.NotContains(t, env, "HF_DATASETS_OFFLINE")
			}
		}
		assert.Equal(t, 1, preps, stack)
	}
}

// The CRD wait checks, in the cluster's own CRDs, every spec field the rendered RayJob and
// RayCluster set (KubeRay v1.5.0's CRDs hold them all: the manifests are checked against them).
func TestCRDWaitChecksTheFieldsTheRunSets(t *testing.T) {
	spot := plantest.Resolve(t, "b200-spot")
	assert.Contains(t, spot.Cluster.CRDFields, "rayjobs.ray.io/v1:spec.backoffLimit")
	assert.Contains(t, spot.Cluster.CRDFields, "rayjobs.ray.io/v1:spec.submissionMode")
	assert.Contains(t, spot.Cluster.CRDFields, "rayjobs.ray.io/v1:spec.rayClusterSpec")
	reserved := plantest.Resolve(t, "h200-reserved")
	assert.Contains(t, reserved.Cluster.CRDFields, "rayjobs.ray.io/v1:spec.clusterSelector")
	assert.Contains(t, reserved.Cluster.CRDFields, "rayclusters.ray.io/v1:spec.headGroupSpec")
	assert.NotContains(t, reserved.Cluster.CRDFields, "rayjobs.ray.io/v1:spec.backoffLimit", "not set on the long-lived cluster's job")
	// With a queue the run has no RayJob of its own: the fields are the experiments' RayJobs',
	// read from the first one that has a RayJob (a, stopped, has none).
	queued := plantest.Resolve(t, "smoke", "jobs.a.enabled=false", "jobs.b.maxSteps=6")
	require.Nil(t, queued.Run.RayJob)
	assert.Contains(t, queued.Cluster.CRDFields, "rayjobs.ray.io/v1:spec.suspend", "a queued RayJob is created suspended")
	assert.Contains(t, queued.Cluster.CRDFields, "rayjobs.ray.io/v1:spec.rayClusterSpec")
}

// The data preparation runs on CPU nodes and needs only the volume and the tokens: it starts
// while the gate checks the GPU nodes and the Ray cluster comes up, and the RayJob waits for
// all of them.
func TestDataPrepDoesNotWaitForTheGate(t *testing.T) {
	res := plantest.Plan(t, "h200-reserved")
	prep := res.Find("kubernetes:batch/v1:Job", "grpo-data-prep")
	job := res.Find("kubernetes:ray.io/v1:RayJob", "grpo-rayjob")
	require.NotNil(t, prep)
	require.NotNil(t, job)
	deps := strings.Join(prep.Dependencies, "\n")
	assert.NotContains(t, deps, "gate-", "not after the gate")
	assert.NotContains(t, deps, "RayCluster", "not after the Ray cluster")
	assert.Contains(t, deps, "PersistentVolumeClaim", "after the claim")
	jobDeps := strings.Join(job.Dependencies, "\n")
	for _, want := range []string{"grpo-data-prep", "gate-nccl", "gate-storage", "RayCluster"} {
		assert.Contains(t, jobDeps, want)
	}
}

// The data preparation keeps Hugging Face's Xet chunk cache on the container's disk, not on the
// shared volume; verl's runs against its checkout without writing bytecode into it. verl's
// submitter checks the files of the package it ships against the pinned tree; NeMo RL ships no
// checkout.
func TestPrepCachesAndTheCheckedCheckout(t *testing.T) {
	verl := plantest.Plan(t, "h200-reserved")
	prep := get(t, prepJob(t, verl), "spec.template.spec.containers.0.env").([]any)
	env := map[string]string{}
	for _, e := range prep {
		env[e.(map[string]any)["name"].(string)] = fmt.Sprint(e.(map[string]any)["value"])
	}
	assert.Equal(t, "/tmp/hf-xet", env["HF_XET_CACHE"])
	assert.Equal(t, "1", env["PYTHONDONTWRITEBYTECODE"])
	assert.Equal(t, "/data/verl/v0.6.0", env[workloads.VerifiedPythonPathEnv], "the checked commands' import path")
	assert.NotContains(t, env, "PYTHONPATH", "no step imports from the volume")
	submitter := get(t, one(t, verl, "RayJob"), "spec.submitterPodTemplate.spec.containers.0.env").([]any)
	senv := map[string]string{}
	for _, e := range submitter {
		senv[e.(map[string]any)["name"].(string)] = fmt.Sprint(e.(map[string]any)["value"])
	}
	assert.Equal(t, "/data/verl/v0.6.0/verl", senv["VERIFY_DIR"], "the package the job ships")
	assert.Equal(t, "21dba16c55f23a0d01e69f444817769d91ce3465", senv["VERIFY_TREE"])
	// The submitter ships its checked copy in place of this py_modules entry, and refuses to
	// submit without it.
	assert.Contains(t, senv["RUNTIME_ENV_JSON"], `"py_modules":["/data/verl/v0.6.0/verl"]`)

	nemo := plantest.Resolve(t, "b200-spot")
	assert.Contains(t, nemo.Run.Prep.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "HF_XET_CACHE", Value: "/tmp/hf-xet"})
	assert.Empty(t, envValue(nemo.Run.RayJob.Spec.SubmitterPodTemplate.Spec.Containers[0].Env, "VERIFY_DIR"), "no checkout to check")
}

// The CPU nodes' boot disk holds the framework images (an in-place update of the pool).
func TestCPUNodesHaveRoomForTheFrameworkImages(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack)
		pool := res.Find("gcp:container/nodePool:NodePool", "cluster-cpu")
		require.NotNil(t, pool)
		assert.EqualValues(t, 300, plantest.Input(t, pool, "nodeConfig.diskSizeGb"), stack)
	}
}

// Only the pods that read a token may read it: each secret's binding names its reader alone, a
// service account of its own that only those pods run as; the submitter, the gate and the other
// group of pods run as another. On GCS FUSE each reader also gets the bucket (its pods mount
// it); on Lustre nothing more.
func TestOnlyThePodsThatReadATokenMayReadIt(t *testing.T) {
	for _, stack := range []string{"b200-spot", "h200-reserved"} {
		res := plantest.Plan(t, stack, "tokens.huggingFace=true", "tokens.wandb=true", "gate.enabled=true")
		readers := map[string]string{}
		for _, binding := range res.OfType("gcp:secretmanager/secretIamMember:SecretIamMember") {
			member := plantest.Input(t, binding, "member").(string)
			_, account, ok := strings.Cut(member, "/subject/ns/"+res.Blueprint.Namespace+"/sa/")
			require.True(t, ok, member)
			readers[fmt.Sprint(plantest.Input(t, binding, "secretId"))] = account
		}
		cluster := map[string]string{"b200-spot": "ray-a4-gpu-spot", "h200-reserved": "verl-h200"}[stack]
		assert.Equal(t, map[string]string{cluster + "-hf-token": "rl-hf-reader", cluster + "-wandb-netrc": "rl-wandb-reader"}, readers, stack)

		spec := clusterSpecOf(t, res)
		accounts := map[string]any{
			"head":         get(t, spec, "headGroupSpec.template.spec.serviceAccountName"),
			"worker":       get(t, spec, "workerGroupSpecs.0.template.spec.serviceAccountName"),
			"prep":         get(t, prepJob(t, res), "spec.template.spec.serviceAccountName"),
			"submitter":    get(t, one(t, res, "RayJob"), "spec.submitterPodTemplate.spec.serviceAccountName"),
			"gate-nccl":    nil,
			"gate-storage": nil,
		}
		for _, name := range []string{"gate-nccl", "gate-storage"} {
			gate := res.Find(jobType, name)
			require.NotNil(t, gate, name)
			accounts[name], _ = gate.Input("spec.template.spec.serviceAccountName")
		}
		assert.Equal(t, "rl-wandb-reader", accounts["head"], stack)
		assert.Equal(t, "rl-wandb-reader", accounts["worker"], stack)
		assert.Equal(t, "rl-hf-reader", accounts["prep"], stack)
		for _, name := range []string{"submitter", "gate-nccl", "gate-storage"} {
			assert.NotContains(t, []any{"rl-wandb-reader", "rl-hf-reader"}, accounts[name], "%s %s reads no token", stack, name)
		}

		created := map[string]bool{}
		for _, a := range res.OfType("kubernetes:core/v1:ServiceAccount") {
			name := plantest.Input(t, a, "metadata.name").(string)
			created[name] = true
			if strings.HasSuffix(name, "-reader") {
				assert.Equal(t, false, plantest.Input(t, a, "automountServiceAccountToken"))
				assert.True(t, res.DependencyClosure(res.OfType(rayJobType)[0])[a.URN], "the RayJob waits for %s", name)
			}
		}
		assert.True(t, created["rl-hf-reader"] && created["rl-wandb-reader"], "%s: each reader's account is created", stack)

		bucketReaders := map[string]bool{}
		for _, b := range res.OfType("gcp:storage/bucketIAMMember:BucketIAMMember") {
			member := plantest.Input(t, b, "member").(string)
			_, account, _ := strings.Cut(member, "/subject/ns/"+res.Blueprint.Namespace+"/sa/")
			bucketReaders[account] = true
		}
		if stack == "h200-reserved" { // GCS FUSE
			assert.Equal(t, map[string]bool{"rl-storage": true, "rl-support": true, "rl-hf-reader": true, "rl-wandb-reader": true}, bucketReaders, "the readers mount the bucket too")
		} else {
			assert.Empty(t, bucketReaders, "Lustre grants no bucket")
		}
	}
}

// The entrypoint runs run.sh from a path on the Ray head; that path is the file of the ConfigMap
// the plan creates, mounted on the head of the cluster the job runs on, and the Ray objects wait
// for the ConfigMap: what the entrypoint names is there when the head starts.
func TestTheEntrypointsScriptIsMountedOnTheHead(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack)
		job := one(t, res, "RayJob")
		assert.Contains(t, get(t, job, "spec.entrypoint"), " bash "+workloads.RunScriptPath+" ", stack)

		scripts := manifestsOf(res, "ConfigMap")
		require.Len(t, scripts, 1, stack)
		assert.Equal(t, workloads.RunScriptConfigMap, get(t, scripts[0], "metadata.name"))
		assert.Equal(t, res.Blueprint.Namespace, get(t, scripts[0], "metadata.namespace"))
		data, _ := get(t, scripts[0], "data").(map[string]any)
		assert.True(t, data[workloads.RunScriptKey] == workloads.RunScript(), "%s: the ConfigMap holds run.sh under %s", stack, workloads.RunScriptKey)

		head := get(t, clusterSpecOf(t, res), "headGroupSpec.template.spec").(map[string]any)
		var volume string
		for _, v := range get(t, head, "volumes").([]any) {
			if get(t, v, "configMap.name") == workloads.RunScriptConfigMap {
				volume = get(t, v, "name").(string)
			}
		}
		require.NotEmpty(t, volume, "%s: the head has the ConfigMap as a volume", stack)
		var mountedAt any
		for _, m := range get(t, head, "containers.0.volumeMounts").([]any) {
			if get(t, m, "name") == volume {
				mountedAt = get(t, m, "mountPath")
			}
		}
		assert.Equal(t, path.Dir(workloads.RunScriptPath), mountedAt, "%s: mounted where the entrypoint looks", stack)

		configMap := res.Find("kubernetes:core/v1:ConfigMap", "run-script")
		require.NotNil(t, configMap, stack)
		for _, typ := range []string{rayJobType, rayClusterType} {
			for _, r := range res.OfType(typ) {
				assert.True(t, res.DependencyClosure(r)[configMap.URN], "%s %s waits for the script", stack, typ)
			}
		}
	}
}

// The seam of verl's reward: the path the entrypoint gives verl (custom_reward_function.path) is
// a key of the run script's ConfigMap, mounted read-only on the head and on every worker group,
// since verl loads the module in its TaskRunner actor, which Ray may place on any node.
func TestVerlsRewardModuleIsMountedWhereverVerlLoadsIt(t *testing.T) {
	for _, stack := range []string{"smoke", "h200-reserved"} {
		res := plantest.Plan(t, stack)
		job := one(t, res, "RayJob")
		entrypoint := get(t, job, "spec.entrypoint").(string)
		require.Contains(t, entrypoint, " custom_reward_function.path="+workloads.RewardPath+" ", stack)
		data, _ := get(t, manifestsOf(res, "ConfigMap")[0], "data").(map[string]any)
		assert.Equal(t, workloads.RewardModule(), data[path.Base(workloads.RewardPath)], "%s: the ConfigMap holds the module under the path's name", stack)

		spec := clusterSpecOf(t, res)
		pods := []any{get(t, spec, "headGroupSpec.template.spec")}
		for i := range get(t, spec, "workerGroupSpecs").([]any) {
			pods = append(pods, get(t, spec, fmt.Sprintf("workerGroupSpecs.%d.template.spec", i)))
		}
		for i, pod := range pods {
			var volume string
			for _, v := range get(t, pod, "volumes").([]any) {
				if get(t, v, "configMap.name") == workloads.RunScriptConfigMap {
					volume = get(t, v, "name").(string)
				}
			}
			require.NotEmpty(t, volume, "%s pod %d has the ConfigMap", stack, i)
			mounted := false
			for _, m := range get(t, pod, "containers.0.volumeMounts").([]any) {
				if get(t, m, "name") == volume && get(t, m, "mountPath") == path.Dir(workloads.RewardPath) && get(t, m, "readOnly") == true {
					mounted = true
				}
			}
			assert.True(t, mounted, "%s pod %d mounts it read-only at %s", stack, i, path.Dir(workloads.RewardPath))
		}
	}
}
