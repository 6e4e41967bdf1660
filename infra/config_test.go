package infra_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
)

// problems resolves stack with overrides and returns the config errors, failing if there are
// none.
func problems(t *testing.T, stack string, overrides ...string) *offline.ConfigError {
	t.Helper()
	bp, err := plantest.TryResolve(stack, overrides...)
	require.Nil(t, bp)
	var cfgErr *offline.ConfigError
	require.True(t, errors.As(err, &cfgErr), "want a config error, got %v", err)
	return cfgErr
}

// refusal is a configuration the plan refuses, with a problem on key whose message mentions
// what is allowed.
type refusal struct {
	sentence  string
	stack     string
	overrides []string
	key       string
	mentions  string
}

// assertRefused checks every case: an error on its key that says what it should.
func assertRefused(t *testing.T, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			cfgErr := problems(t, tc.stack, tc.overrides...)
			var messages []string
			for _, p := range cfgErr.Problems {
				messages = append(messages, p.Error())
				if p.Key == tc.key {
					assert.Contains(t, p.Message, tc.mentions)
					return
				}
			}
			t.Fatalf("no error about %s; got:\n%s", tc.key, strings.Join(messages, "\n"))
		})
	}
}

// assertAccepted checks that each configuration of stack plans clean: the other side of a
// limit that assertRefused holds.
func assertAccepted(t *testing.T, stack string, cases map[string][]string) {
	t.Helper()
	for sentence, overrides := range cases {
		t.Run(sentence, func(t *testing.T) {
			_, err := plantest.TryPlan(stack, overrides...)
			require.NoError(t, err)
		})
	}
}

func TestInvalidConfigNamesItsKey(t *testing.T) {
	assertRefused(t, []refusal{
		{"an unknown GPU type is refused", "b200-spot", []string{"gpu.type=a100"}, "gpu.type", "b200, h200"},
		{"zero GPU nodes are refused", "b200-spot", []string{"gpu.nodes=0"}, "gpu.nodes", "1 to 256"},
		{"an absurd node count is refused", "b200-spot", []string{"gpu.nodes=100000"}, "gpu.nodes", "1 to 256"},
		{"a node count that is not a number is refused", "b200-spot", []string{"gpu.nodes=eight"}, "gpu.nodes", "not an integer"},
		{"a zone outside the region is refused", "b200-spot", []string{"zone=us-west1-a"}, "zone", "us-east1"},
		{"a zone without its letter is refused", "b200-spot", []string{"zone=us-east1"}, "zone", "us-east1-b"},
		{"a zone given as the region is refused", "b200-spot", []string{"gcp:region=us-east1-b"}, "gcp:region", "region like"},
		{"B200 in a region without A4 is refused, naming the zones that have it", "b200-spot", []string{"gcp:region=europe-west2", "zone=europe-west2-a"}, "zone", "zones that offer it: asia-northeast1-b"},
		{"H200 in a zone of B200 only is refused", "b200-spot", []string{"gpu.type=h200"}, "zone", "a3-ultragpu-8g is not offered in us-east1"},
		{"a zone that does not exist is refused", "b200-spot", []string{"gcp:region=us-east4", "zone=us-east4-z"}, "zone", "in us-east4 it is offered in us-east4-b"},
		{"a malformed project ID is refused", "b200-spot", []string{"gcp:project=My_Project"}, "gcp:project", "project ID"},
		{"a CIDR with host bits is refused", "b200-spot", []string{"network.nodeCidr=10.0.0.1/20"}, "network.nodeCidr", "10.0.0.0"},
		{"a CIDR that is not one is refused", "b200-spot", []string{"network.gvnicCidr=300.1.1.0/24"}, "network.gvnicCidr", "CIDR"},
		{"overlapping pod and node ranges are refused", "b200-spot", []string{"network.podCidr=10.0.0.0/14"}, "network.podCidr", "overlaps network.nodeCidr"},
		{"overlapping gVNIC and RDMA ranges are refused", "b200-spot", []string{"network.gvnicCidr=192.168.8.0/24"}, "network.rdmaCidr", "overlaps network.gvnicCidr"},
		{"a public range is refused", "b200-spot", []string{"network.rdmaCidr=8.8.8.0/21"}, "network.rdmaCidr", "private"},
		{"an RDMA range too small to split is refused", "b200-spot", []string{"network.rdmaCidr=192.168.8.0/28"}, "network.rdmaCidr", "/29"},
		{"RDMA subnets that cannot hold the nodes are refused", "b200-spot", []string{"network.rdmaCidr=192.168.8.0/26"}, "network.rdmaCidr", "fewer than gpu.nodes=8"},
		{"too few RDMA subnets for the NICs are refused", "b200-spot", []string{"network.rdmaSubnets=4"}, "network.rdmaSubnets", "8 RDMA NICs"},
		{"too many RDMA subnets for the NICs are refused", "h200-reserved", []string{"network.rdmaSubnets=16"}, "network.rdmaSubnets", "a3-ultragpu-8g"},
		{"an MTU above the RDMA maximum is refused", "b200-spot", []string{"network.mtu=9000"}, "network.mtu", "8896"},
		{"a PSA prefix longer than /24 is refused", "b200-spot", []string{"network.psaPrefixLength=28"}, "network.psaPrefixLength", "8 to 24"},
		{"a cluster name over 40 characters is refused", "b200-spot", []string{"cluster.name=a-very-long-cluster-name-that-is-over-forty-chars"}, "cluster.name", "at most 40"},
		{"a cluster name that is not a DNS label is refused", "b200-spot", []string{"cluster.name=Ray_Cluster"}, "cluster.name", "DNS label"},
		{"an unknown cluster mode is refused", "b200-spot", []string{"cluster.mode=serverless"}, "cluster.mode", "standard, autopilot"},
		{"an unknown release channel is refused", "b200-spot", []string{"cluster.releaseChannel=nightly"}, "cluster.releaseChannel", "REGULAR"},
		{"an authorized network that is not a CIDR is refused", "b200-spot", []string{"cluster.authorizedNetworks[0]=1.2.3.4"}, "cluster.authorizedNetworks[0]", "CIDR"},
		{"an unknown provisioning model is refused", "b200-spot", []string{"gpu.provisioning=preemptible"}, "gpu.provisioning", "spot, reservation, flex-start, on-demand"},
		{"on-demand B200 is refused: A4 is not offered on demand", "b200-spot", []string{"gpu.provisioning=on-demand"}, "gpu.provisioning", "on-demand is not offered for a4-highgpu-8g (gpu.type b200): Compute Engine's consumption options for it are spot, reservation, flex-start"},
		{"spot with a reservation is refused", "b200-spot", []string{"gpu.reservation=my-res"}, "gpu.reservation", "only with gpu.provisioning=reservation"},
		{"flex-start with a reservation is refused", "h200-reserved", []string{"gpu.provisioning=flex-start"}, "gpu.reservation", "only with gpu.provisioning=reservation"},
		{"a reservation model without a name is refused", "b200-spot", []string{"gpu.provisioning=reservation"}, "gpu.reservation", "is required"},
		{"a malformed reservation name is refused", "h200-reserved", []string{"gpu.reservation=My_Res"}, "gpu.reservation", "reservationBlocks"},
		{"a shared reservation of a malformed project is refused", "h200-reserved", []string{"gpu.reservation=projects/P/reservations/r"}, "gpu.reservation", "projects/<owner project ID>/reservations/"},
		{"a Lustre capacity off the tier's step is refused", "b200-spot", []string{"storage.capacityGib=20000"}, "storage.capacityGib", "18000 or 36000"},
		{"a Lustre capacity under the tier's minimum is refused", "b200-spot", []string{"storage.throughput=250"}, "storage.capacityGib", "36000"},
		{"a Lustre capacity over the tier's maximum is refused", "b200-spot", []string{"storage.throughput=125", "storage.capacityGib=12312000"}, "storage.capacityGib", "12240000"},
		{"an unknown throughput tier is refused", "b200-spot", []string{"storage.throughput=600"}, "storage.throughput", "125, 250, 500, 1000"},
		{"a long filesystem name is refused", "b200-spot", []string{"storage.filesystem=lustrefs1"}, "storage.filesystem", "1 to 8"},
		{"a filesystem name with symbols is refused", "b200-spot", []string{"storage.filesystem=fs_1"}, "storage.filesystem", "letters or digits"},
		{"an unknown storage type is refused", "b200-spot", []string{"storage.type=nfs"}, "storage.type", "lustre, gcsfuse"},
		{"a bucket name with capitals is refused", "h200-reserved", []string{"storage.bucket=My-Bucket"}, "storage.bucket", "bucket name"},
		{"a bucket name containing google is refused", "h200-reserved", []string{"storage.bucket=my-google-data"}, "storage.bucket", "google"},
		{"a GKE-support flag that is not a boolean is refused", "b200-spot", []string{"storage.gkeSupport=maybe"}, "storage.gkeSupport", "boolean"},
		{"an unknown framework is refused", "b200-spot", []string{"framework=trl"}, "framework", "nemo-rl, verl"},
		{"a relative mount path is refused", "b200-spot", []string{"storage.mountPath=data"}, "storage.mountPath", "absolute"},
		{"a system mount path is refused", "b200-spot", []string{"storage.mountPath=/dev/shm"}, "storage.mountPath", "system directory"},
		{"zero steps are refused", "b200-spot", []string{"job.maxSteps=0"}, "job.maxSteps", "greater than 0"},
		{"zero epochs are refused", "h200-reserved", []string{"job.epochs=0"}, "job.epochs", "greater than 0"},
		{"an authorized network open to the internet is refused", "b200-spot", []string{"cluster.authorizedNetworks[0]=0.0.0.0/0"}, "cluster.authorizedNetworks[0]", "/8 or longer"},
		{"an authorized network wider than /8 is refused", "b200-spot", []string{"cluster.authorizedNetworks[0]=8.0.0.0/7"}, "cluster.authorizedNetworks[0]", "/8 or longer"},
		{"a maintenance start past midnight is refused", "b200-spot", []string{"cluster.maintenanceStart=25:00"}, "cluster.maintenanceStart", "HH:MM in UTC"},
		{"a maintenance start that is not HH:MM is refused", "b200-spot", []string{"cluster.maintenanceStart=3am"}, "cluster.maintenanceStart", "HH:MM in UTC"},
		{"an upgrade freeze start that is not a time is refused", "b200-spot", []string{"cluster.noUpgradesFrom=yesterday"}, "cluster.noUpgradesFrom", "RFC 3339"},
		{"an upgrade freeze end that is not a time is refused", "b200-spot", []string{"cluster.noUpgradesUntil=2027-13-01"}, "cluster.noUpgradesUntil", "or none for no exclusion"},
		{"an upgrade freeze that ends before it starts is refused", "b200-spot", []string{"cluster.noUpgradesUntil=2026-10-01T00:00:00Z"}, "cluster.noUpgradesUntil", "not after cluster.noUpgradesFrom"},
		{"an unknown placement is refused", "b200-spot", []string{"gpu.placement=spread"}, "gpu.placement", "allowed: compact"},
		{"compact placement with a reservation is refused", "h200-reserved", []string{"gpu.placement=compact"}, "gpu.placement", "reservation's blocks decide placement"},
		{"compact placement on Autopilot is refused", "b200-spot", []string{"gpu.placement=compact", "cluster.mode=autopilot", "storage.type=gcsfuse"}, "gpu.placement", "cluster.mode=standard"},
		{"Lustre on Autopilot is refused", "b200-spot", []string{"cluster.mode=autopilot"}, "storage.type", "allowed: storage.type=gcsfuse with autopilot, or cluster.mode=standard with lustre"},
		{"an adopt flag that is not a boolean is refused", "b200-spot", []string{"storage.adopt=maybe"}, "storage.adopt", "boolean"},
		{"a NeMo RL recipe the pinned release does not ship is refused", "b200-spot", []string{"job.recipe=examples/configs/grpo_math_9B.yaml"}, "job.recipe", "GRPO math recipe of NeMo RL v0.7.0"},
		{"a NeMo RL recipe with verl is refused", "b200-spot", []string{"framework=verl", "job.dataset=gsm8k", "job.args=[]"}, "job.recipe", "framework verl does not read"},
		// NeMo RL's vLLM refuses a pipeline without its asynchronous engine when it starts
		// (workloads.TestNeMoRLsVLLMParallelSizes): the plan names the argument that set it, the
		// run's or an experiment's.
		{"a vLLM pipeline without the asynchronous engine is refused", "b200-spot", []string{`job.args=["policy.generation.vllm_cfg.pipeline_parallel_size=2"]`}, "job.args[0]", "needs policy.generation.vllm_cfg.async_engine=true"},
		{"an experiment's vLLM pipeline without the asynchronous engine is refused", "b200-spot", []string{"jobs.a.maxSteps=4", `jobs.b.args=["policy.generation.vllm_cfg.pipeline_parallel_size=2"]`}, "jobs.b.args[0]", "needs policy.generation.vllm_cfg.async_engine=true"},
		{"a dataset NeMo RL does not load is refused", "h200-reserved", []string{"framework=nemo-rl", "job.dataset=gsm8k"}, "job.dataset", "DAPOMath17K, DeepScaler, OpenMathInstruct-2"},
		{"a misspelled framework key in job.args is refused", "h200-reserved", []string{"job.args[0]=trainer.nnode=2"}, "job.args[0]", "is not a key of verl v0.6.0's config"},
		{"a NeMo RL key in verl's job.args is refused", "h200-reserved", []string{"job.args[0]=grpo.max_num_steps=5"}, "job.args[0]", "it is a nemo-rl key"},
		{"GPU nodes the recipe's parallelism cannot use are refused", "b200-spot", []string{"gpu.nodes=3"}, "gpu.nodes", "PP × CP × TP (16) must divide the 24 GPUs"},
		{"negative prompts per step are refused", "b200-spot", []string{"job.promptsPerStep=-1"}, "job.promptsPerStep", "greater than 0"},
		// At the limit, on GSM8K, whose steps an epoch the plan divides by job.promptsPerStep
		// (the deadline; with job.maxSteps, the epochs' warning): a refusal, not a division by 0.
		{"no prompts a step are refused", "h200-reserved", []string{"job.promptsPerStep=0"}, "job.promptsPerStep", "0 is not allowed; allowed: a whole number greater than 0"},
		{"so with job.maxSteps beside the epochs", "h200-reserved", []string{"job.promptsPerStep=0", "job.maxSteps=10"}, "job.promptsPerStep", "0 is not allowed; allowed: a whole number greater than 0"},
		{"zero generations per prompt are refused", "b200-spot", []string{"job.generationsPerPrompt=0"}, "job.generationsPerPrompt", "greater than 0"},
		{"a zero checkpoint period is refused", "b200-spot", []string{"job.checkpointPeriod=0"}, "job.checkpointPeriod", "greater than 0"},
		{"keeping no checkpoints is refused", "b200-spot", []string{"job.keepCheckpoints=0"}, "job.keepCheckpoints", "greater than 0"},
		{"a framework argument without a value is refused", "b200-spot", []string{"job.args[0]=--verbose"}, "job.args[0]", "key=value"},
		{"a model that is not a Hub ID is refused", "b200-spot", []string{"job.model=qwen"}, "job.model", "Hugging Face"},
		{"an unpinned image is refused", "b200-spot", []string{"ray.image=rayproject/ray:latest"}, "ray.image", "moving tag"},
		{"an untagged image is refused", "b200-spot", []string{"ray.image=rayproject/ray"}, "ray.image", "no tag"},
		{"a malformed Ray version is refused", "b200-spot", []string{"ray.version=2.x"}, "ray.version", "Ray version"},
		{"an unknown key inside an object is refused", "b200-spot", []string{"gpu.count=8"}, "gpu.count", "gpu takes driverVersion, maxNodes, minNodes, nodes, placement, provisioning, reservation, type"},
		{"a driver GKE does not name is refused", "smoke", []string{"gpu.driverVersion=R580"}, "gpu.driverVersion", `"R580" is not allowed; allowed: default, latest`},
		{"GKE's DEFAULT driver under a CUDA 13 image is refused", "b200-spot", []string{"gpu.driverVersion=default"}, "gpu.driverVersion",
			"default installs GKE's DEFAULT NVIDIA driver (R535 on Container-Optimized OS), and nemo-rl v0.7.0's image is built on CUDA 13.2 (docker/Dockerfile at v0.7.0), which needs R580 or newer; allowed: latest (GKE's LATEST, R580), or leave gpu.driverVersion unset"},
		{"so is it under a queued experiment's", "smoke", []string{"framework=nemo-rl", "job.dataset=DeepScaler", "jobs.a.frameworkRelease=v0.5.0", "jobs.b.frameworkRelease=v0.7.0", "gpu.driverVersion=default"}, "gpu.driverVersion", "nemo-rl v0.7.0's image is built on CUDA 13.2"},
		{"a node count that is no number says the range", "b200-spot", []string{"gpu.nodes=two"}, "gpu.nodes", `"two" is not an integer; allowed: a whole number of nodes from 1 to 256`},
		{"an experiment's knob that is no number says what job's allows", "smoke", []string{"jobs.a.microBatchSize=lots"}, "jobs.a.microBatchSize", `"lots" is not an integer; allowed: a whole number from 1 to 256`},
		{"a key in the wrong case is named as it is spelled", "b200-spot", []string{"job.learningrate=1e-6"}, "job.learningrate", "unknown key; did you mean job.learningRate? job takes"},
		{"a key one letter off is named", "b200-spot", []string{"gpu.node=2"}, "gpu.node", "unknown key; did you mean gpu.nodes? gpu takes"},
		{"a minimum above the node count is refused", "b200-spot", []string{"gpu.minNodes=9"}, "gpu.minNodes", "0 to gpu.nodes (8)"},
		{"a maximum below the node count is refused", "b200-spot", []string{"gpu.maxNodes=4"}, "gpu.maxNodes", "gpu.nodes (8) to 256"},
		{"a malformed CPU machine type is refused", "b200-spot", []string{"cluster.cpuMachineType=big"}, "cluster.cpuMachineType", "n2-standard-16"},
		{"a zero checkpoint budget is refused", "b200-spot", []string{"storage.checkpointBudgetSeconds=0"}, "storage.checkpointBudgetSeconds", "1 or more"},
		{"a model size without a unit is refused", "b200-spot", []string{"job.modelSize=72"}, "job.modelSize", "72B, 1.5B, 500M"},
		{"an override of a key the program sets is refused (NeMo RL)", "b200-spot", []string{"job.args[1]=cluster.num_nodes=4"}, "job.args[1]", "set gpu.nodes instead"},
		{"an override of a knob names its job key (NeMo RL)", "b200-spot", []string{"job.args[0]=loss_fn.reference_policy_kl_penalty=0.01"}, "job.args[0]", "set job.klCoef instead"},
		{"an override of a knob names its job key (verl)", "h200-reserved", []string{"job.args[0]=actor_rollout_ref.rollout.gpu_memory_utilization=0.5"}, "job.args[0]", "set job.rolloutGpuMemory instead"},
		{"an override of a fixed key says why it is fixed", "h200-reserved", []string{"job.args[0]=data.filter_overlong_prompts=False"}, "job.args[0]", "the program fixes it"},
		{"an override of a key the program sets is refused (verl)", "h200-reserved", []string{"job.args[0]=++trainer.nnodes=4"}, "job.args[0]", "trainer.nnodes"},
		{"a dataset verl cannot prepare is refused", "h200-reserved", []string{"job.dataset=DeepScaler"}, "job.dataset", "gsm8k, math"},
		{"a recipe outside the source tree is refused", "b200-spot", []string{"job.recipe=../../etc/x.yaml"}, "job.recipe", "grpo_math_8B.yaml"},
		{"a recipe that climbs out of the source tree is refused", "b200-spot", []string{"job.recipe=examples/../../etc/x.yaml"}, "job.recipe", "grpo_math_8B.yaml"},
		{"a recipe that is not YAML is refused", "b200-spot", []string{"job.recipe=examples/run.py"}, "job.recipe", "grpo_math_8B.yaml"},
		{"a gate minimum no GPU reaches is refused", "h200-reserved", []string{"gate.minBusBandwidthGBps=5000"}, "gate.minBusBandwidthGBps", "1 to 2000 GB/s"},
		{"a zero-byte storage check is refused", "h200-reserved", []string{"gate.storageGib=0"}, "gate.storageGib", "1 to 1024 GiB"},
		{"a gate that waits for no node is refused", "h200-reserved", []string{"gate.capacityWaitMinutes=0"}, "gate.capacityWaitMinutes", "1 to 240 minutes"},
		{"a gate that waits past a day's work is refused", "b200-spot", []string{"gate.enabled=true", "gate.capacityWaitMinutes=241"}, "gate.capacityWaitMinutes", "1 to 240 minutes"},
		{"an unknown gate key is refused", "h200-reserved", []string{"gate.nodes=4"}, "gate.nodes", "gate takes capacityWaitMinutes, enabled, minBusBandwidthGBps, runId, storageGib"},
		{"a gate run ID that would not fit a Job name is refused", "h200-reserved", []string{"gate.runId=Second-Run"}, "gate.runId", "1 to 8 lowercase letters and digits"},
		{"a notification channel that is not a channel name is refused", "b200-spot", []string{"monitoring.notificationChannels[0]=ops@example.com"}, "monitoring.notificationChannels[0]", "projects/<project>/notificationChannels/<number>"},
		{"channels without the alerts are refused", "b200-spot", []string{"monitoring.enabled=false", "monitoring.notificationChannels[0]=projects/acme/notificationChannels/1"}, "monitoring.notificationChannels[0]", "only with the alerts on"},
		{"a negative retry count is refused", "b200-spot", []string{"job.backoffLimit=-1"}, "job.backoffLimit", "0 to 100 retries"},
		{"an absurd retry count is refused", "b200-spot", []string{"job.backoffLimit=100000"}, "job.backoffLimit", "0 to 100 retries"},
		{"a deadline shorter than any start is refused", "b200-spot", []string{"job.activeDeadlineSeconds=60"}, "job.activeDeadlineSeconds", "0 (no deadline) or 600 seconds or more"},
		{"one generation per prompt is refused: no group", "b200-spot", []string{"job.generationsPerPrompt=1"}, "job.generationsPerPrompt", "2 or more"},
		{"an abbreviated commit is refused: the Hub takes full IDs", "b200-spot", []string{`job.revisions["Qwen/Qwen2.5-72B-Instruct"]=495f393`}, `job.revisions["Qwen/Qwen2.5-72B-Instruct"]`, "full 40-character commit ID"},
		{"a revision that no ref can name is refused", "h200-reserved", []string{`job.revisions["openai/gsm8k"]=v1..2`}, `job.revisions["openai/gsm8k"]`, "is not a revision"},
		{"revisions are a map", "h200-reserved", []string{"job.revisions=main"}, "job.revisions", "is not a map"},
		{"the default Compute Engine account is refused for the nodes", "b200-spot", []string{"cluster.nodeServiceAccount=123456789012-compute@developer.gserviceaccount.com"}, "cluster.nodeServiceAccount", "holds Editor"},
		{"the preview identity is a service account's email", "b200-spot", []string{"cluster.previewServiceAccount=alice@example.com"}, "cluster.previewServiceAccount", "<name>@<project>.iam.gserviceaccount.com"},
		{"the deploy identity is a service account's email", "b200-spot", []string{"cluster.deployServiceAccount=alice@example.com"}, "cluster.deployServiceAccount", "<name>@<project>.iam.gserviceaccount.com"},
		{"the deploy identity is not the preview's", "b200-spot", []string{"cluster.deployServiceAccount=gke-rl-ci@acme-rl.iam.gserviceaccount.com", "cluster.previewServiceAccount=gke-rl-ci@acme-rl.iam.gserviceaccount.com"}, "cluster.deployServiceAccount", "an identity of its own"},
		{"a checkpoint period longer than the run is refused", "b200-spot", []string{"job.checkpointPeriod=30"}, "job.checkpointPeriod", "allowed: 1 to 20"},
		{"a checkpoint period longer than the epochs' steps is refused", "h200-reserved", []string{"job.checkpointPeriod=100"}, "job.checkpointPeriod", "58 steps: job.epochs 2 × 29 steps"},
		{"checkpoints that do not fit the Lustre instance are refused", "b200-spot", []string{"job.keepCheckpoints=20"}, "job.keepCheckpoints", "21 checkpoints at the peak (the one being saved beside those kept) need 24192 GB (1152 GB each), and the model's download, checked copy and Megatron conversion 432 GB more: 24624 GB in all, more than the Lustre instance's 19327 GB (storage.capacityGib 18000); allowed: at most 15, or a larger storage.capacityGib"},
		{"the model's copies count against the Lustre instance beside the checkpoints", "b200-spot", []string{"job.modelSize=300B", "job.keepCheckpoints=3"}, "job.keepCheckpoints", "4 checkpoints at the peak (the one being saved beside those kept) need 19200 GB (4800 GB each), and the model's download, checked copy and Megatron conversion 1800 GB more: 21000 GB in all, more than the Lustre instance's 19327 GB (storage.capacityGib 18000); allowed: at most 2,"},
		// verl rotates only what its own process saved: a retried run holds an earlier attempt's
		// checkpoints beside the new ones (verl v0.6.0 checkpoint_manager.py).
		{"verl's checkpoints of a retried run must fit twice", "b200-spot", []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]", "job.keepCheckpoints=9"}, "job.keepCheckpoints", "18 checkpoints at the peak (verl keeps an earlier attempt's checkpoints beside a retry's until the next attempt) need 20736 GB (1152 GB each), and the model's download and checked copy 288 GB more: 21024 GB in all, more than the Lustre instance's 19327 GB (storage.capacityGib 18000); allowed: at most 8,"},
		// verl removes its oldest save before it writes the next (fsdp_checkpoint_manager.py):
		// with one kept, a preemption mid-save leaves none.
		{"verl keeping one checkpoint is refused", "b200-spot", []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]", "job.keepCheckpoints=1"}, "job.keepCheckpoints", "1 with verl can lose the run: verl removes its only checkpoint before it writes the next, so a preemption during that save leaves none and the run starts from step 0; allowed: 2 or more"},
		// Without retries verl's peak is keepCheckpoints itself: 17 × 1152 + 288 (the model's
		// download and checked copy, 72B × 2 bytes each) = 19872 GB > 19327 GB.
		{"verl's checkpoints without retries, one over the instance", "b200-spot", []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]", "job.backoffLimit=0", "job.keepCheckpoints=17"}, "job.keepCheckpoints", "17 checkpoints at the peak (verl removes the oldest before it saves the next) need 19584 GB (1152 GB each), and the model's download and checked copy 288 GB more: 19872 GB in all, more than the Lustre instance's 19327 GB (storage.capacityGib 18000); allowed: at most 16,"},
		// smoke's batches, 64 prompts × 4 generations = 256, split over 8 or 16 GPUs, not 24:
		// the refusal names the key the entry set and the node counts that fit (1, 2, 4, 8).
		{"an experiment's node count its batches do not split over is refused under its own key", "smoke", []string{"gpu.maxNodes=3", "jobs.a.maxSteps=4", "jobs.a.nodes=3"}, "jobs.a.nodes",
			"experiment a: data.train_batch_size × rollout.n = 64 × 4 = 256 must be divisible by the 24 GPUs; node counts these batch sizes fit: trainer.nnodes (gpu.nodes, jobs.<name>.nodes) 1, 2, 4, 8"},
		{"a gated model without a Hugging Face token is refused", "h200-reserved", []string{"job.model=meta-llama/Llama-3.1-8B-Instruct"}, "job.model", `"meta-llama/Llama-3.1-8B-Instruct" is gated on the Hugging Face Hub (the Hub's model info says "gated": "manual"): its download needs the token of an account granted access, and the data preparation would fail in the cluster; allowed: ` + "`pulumi config set --path tokens.huggingFace true`"},
		{"a model size that contradicts the model's name is refused", "b200-spot", []string{"job.modelSize=8B"}, "job.modelSize", "whose name says 72B"},
		// 72B ± 35 %: 46.8B to 97.2B; just outside on each side.
		{"a model size just under the name's range is refused", "b200-spot", []string{"job.modelSize=46.7B"}, "job.modelSize", "within 35 % of the name's (46.8B to 97.2B)"},
		{"a model size just over the name's range is refused", "b200-spot", []string{"job.modelSize=97.3B"}, "job.modelSize", "whose name says 72B"},
		{"an authorized network listed twice is refused", "b200-spot", []string{"cluster.authorizedNetworks[1]=203.0.113.7/32"}, "cluster.authorizedNetworks[1]", "each block once"},
		{"a notification channel listed twice is refused", "b200-spot", []string{"monitoring.notificationChannels[0]=projects/acme/notificationChannels/1", "monitoring.notificationChannels[1]=projects/acme/notificationChannels/1"}, "monitoring.notificationChannels[1]", "each channel once"},
		{"a Ray version other than the pinned image's is refused", "b200-spot", []string{"ray.version=2.50.1"}, "ray.version", "allowed: 2.55.1, or set ray.image"},
		{"a key passed twice in job.args is refused", "h200-reserved", []string{"job.args[0]=actor_rollout_ref.actor.use_dynamic_bsz=True", "job.args[1]=actor_rollout_ref.actor.use_dynamic_bsz=False"}, "job.args[1]", "each key once"},
		{"a negative deadline is refused", "b200-spot", []string{"job.activeDeadlineSeconds=-5"}, "job.activeDeadlineSeconds", "0 (no deadline)"},
		{"an unknown top-level key is refused", "b200-spot", []string{"gpus=8"}, "gpus", "namespace takes"},
	})
}

// With the token, a gated model plans: the refusal is the token's, not the model's.
func TestAGatedModelPlansWithAToken(t *testing.T) {
	_, err := plantest.TryPlan("h200-reserved", "job.model=meta-llama/Llama-3.1-8B-Instruct", "tokens.huggingFace=true")
	assert.NoError(t, err)
}

// A name rounds its model's count: the card's count is taken when it is near the name's
// (Llama-3.2-1B's 1.24B; 72B's range 72 × 0.65 = 46.8B to 72 × 1.35 = 97.2B, its ends included,
// and just inside on each side; just outside is refused: config_test's table).
func TestAModelSizeNearItsNameIsTaken(t *testing.T) {
	for stack, overrides := range map[string][]string{
		"smoke":     {"job.model=meta-llama/Llama-3.2-1B-Instruct", "job.modelSize=1.24B", "tokens.huggingFace=true"},
		"b200-spot": {"job.modelSize=72.7B"},
	} {
		_, err := plantest.TryPlan(stack, overrides...)
		assert.NoError(t, err, "%s %v", stack, overrides)
	}
	for _, size := range []string{"46.8B", "46.9B", "97.1B", "97.2B"} {
		_, err := plantest.TryPlan("b200-spot", "job.modelSize="+size)
		assert.NoError(t, err, size)
	}
}

// The limits of job.keepCheckpoints that no shipped stack reaches: verl's lower bound of 2 and,
// without retries, its peak of keepCheckpoints itself (16 × 1152 + 288 = 18720 GB fits 19327 GB);
// NeMo RL may keep 1 (it writes the new save before it removes the old one).
func TestKeepCheckpointsAtItsLimits(t *testing.T) {
	verl := []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"}
	for name, overrides := range map[string][]string{
		"verl keeping 2": append(slices.Clone(verl), "job.keepCheckpoints=2"),
		"verl without retries keeping 16 (it fits)": append(slices.Clone(verl), "job.backoffLimit=0", "job.keepCheckpoints=16"),
		"NeMo RL keeping 1":                         {"job.keepCheckpoints=1"},
	} {
		_, err := plantest.TryPlan("b200-spot", overrides...)
		assert.NoError(t, err, name)
	}
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	cfgErr := problems(t, "b200-spot", "gpu.type=a100", "storage.capacityGib=20000", "job.maxSteps=0", "cluster.mode=x")
	for _, key := range []string{"gpu.type", "storage.capacityGib", "job.maxSteps", "cluster.mode"} {
		assert.True(t, cfgErr.Problems.Has(key), key)
	}
}

// writeStack lays out Pulumi.yaml and one stack file in a temporary directory.
func writeStack(t *testing.T, stackYAML string) string {
	t.Helper()
	dir := t.TempDir()
	project, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "Pulumi.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), project, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.test.yaml"), []byte(stackYAML), 0o644))
	return dir
}

const minimalStack = `config:
  gcp:project: your-project-id
  gcp:region: us-east1
  gke-rl:zone: us-east1-b
  gke-rl:cluster:
    authorizedNetworks: ["203.0.113.7/32"]
`

func planDir(t *testing.T, dir string) (*offline.Result, error) {
	t.Helper()
	sc, err := offline.LoadStackConfig(dir, "test", nil)
	require.NoError(t, err)
	return offline.Run(sc, "test", plantest.PlanTime)
}

func TestMinimalStackUsesDefaults(t *testing.T) {
	res, err := planDir(t, writeStack(t, minimalStack))
	require.NoError(t, err)
	rdma := res.Find("gcp:compute/network:Network", "networks-rdma")
	assert.Equal(t, "gke-rl-rdma-net", plantest.Input(t, rdma, "name"))
	assert.EqualValues(t, 8896, plantest.Input(t, rdma, "mtu"))
	assert.Len(t, res.OfType("gcp:compute/subnetwork:Subnetwork"), 1+1+8)
}

func TestBogusFieldInStackFile(t *testing.T) {
	_, err := planDir(t, writeStack(t, minimalStack+"  gke-rl:gpu:\n    type: b200\n    gpuCount: 8\n"))
	var cfgErr *offline.ConfigError
	require.True(t, errors.As(err, &cfgErr), "%v", err)
	assert.True(t, cfgErr.Problems.Has("gpu.gpuCount"), cfgErr.Error())
}

func TestRequiredKeysAreReported(t *testing.T) {
	_, err := planDir(t, writeStack(t, "config:\n  gke-rl:framework: verl\n"))
	var cfgErr *offline.ConfigError
	require.True(t, errors.As(err, &cfgErr), "%v", err)
	for _, key := range []string{"gcp:project", "gcp:region", "zone", "cluster.authorizedNetworks"} {
		assert.True(t, cfgErr.Problems.Has(key), key)
	}
}

// The keys that held tokens in Pulumi are refused with the way to move, without echoing the
// value, plain text or secret.
func TestRetiredTokenKeysAreRefusedWithTheWayToMove(t *testing.T) {
	_, err := planDir(t, writeStack(t, minimalStack+"  gke-rl:hfToken: hf_plaintext_token_123\n  gke-rl:wandbApiKey:\n    secure: v1:abc\n"))
	var cfgErr *offline.ConfigError
	require.True(t, errors.As(err, &cfgErr), "%v", err)
	assert.True(t, cfgErr.Problems.Has("hfToken"))
	assert.True(t, cfgErr.Problems.Has("wandbApiKey"))
	assert.NotContains(t, cfgErr.Error(), "hf_plaintext_token_123")
	assert.Contains(t, cfgErr.Error(), "remove it (`pulumi config rm hfToken`), set `pulumi config set --path tokens.huggingFace true`")
	assert.Contains(t, cfgErr.Error(), "tokens.wandb true")
	assert.Contains(t, cfgErr.Error(), "tokenCommands")
}

func TestStructuredKeysAcceptStringNumbers(t *testing.T) {
	res, err := planDir(t, writeStack(t, minimalStack+"  gke-rl:gpu:\n    nodes: \"4\"\n"))
	require.NoError(t, err)
	assert.NotNil(t, res)
}

// Too many nodes is one error, on the key the user set: gpu.maxNodes, unset, follows gpu.nodes
// and is not blamed too.
func TestTooManyNodesBlamesOnlyGPUNodes(t *testing.T) {
	_, err := plantest.TryResolve("b200-spot", "gpu.nodes=300")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gpu.nodes: 300 is out of range; allowed: 1 to 256 nodes")
	assert.NotContains(t, err.Error(), "gpu.maxNodes")

	_, err = plantest.TryResolve("b200-spot", "gpu.nodes=300", "gpu.maxNodes=400")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gpu.maxNodes: 400 is out of range", "a value the user set is checked")
}

// An address of a documentation range admits nobody: the shipped one is called the shipped
// placeholder, one the user wrote is called what it is.
func TestADocumentationAddressIsNamedForWhatItIs(t *testing.T) {
	shipped := plantest.Resolve(t, "b200-spot")
	assert.Contains(t, shipped.Placeholders.Error(), "cluster.authorizedNetworks[0]: 203.0.113.7/32 is the shipped placeholder, a documentation address (RFC 5737) that admits nobody")
	mine := plantest.Resolve(t, "b200-spot", "cluster.authorizedNetworks[0]=198.51.100.20/32")
	assert.Contains(t, mine.Placeholders.Error(), "cluster.authorizedNetworks[0]: 198.51.100.20/32 is a documentation address (RFC 5737) that admits nobody")
	assert.NotContains(t, mine.Placeholders.Error(), "198.51.100.20/32 is the shipped placeholder")
}

// The run's checks at limits no shipped stack reaches, the verdicts worked out by hand.
// b200-spot (NeMo RL on Megatron, retries on, so one save more than kept at the peak, on 18,000
// GiB = 19,327.35 GB) with a private model of S billion parameters: a checkpoint is 16·S GB,
// the download and checked copy 4·S GB, the Megatron conversion 2·S GB.
//   - S = 280, keeping 3: 4 × 4,480 + 1,120 + 560 = 19,600 GB, over by 273 GB: refused, at most
//     2 (3 × 4,480 + 1,680 = 15,120 GB). Without the conversion it would be 19,040 GB and fit.
//   - S = 1,000, keeping 1: even one save being written, 16,000 + 6,000 = 22,000 GB, is over:
//     at most 0, never a negative count.
//
// And the retries' and checkpoint period's upper ends: 100 retries, and a period of the run's
// 20 steps, plan; 21 steps is refused.
func TestTheRunsChecksAtTheirLimits(t *testing.T) {
	private := func(billions string, keep string) []string {
		return append(plantest.Shape(16384, 100, 152064),
			"job.model=example/private-model", "job.modelSize="+billions, "job.keepCheckpoints="+keep)
	}
	assertAccepted(t, "b200-spot", map[string][]string{
		"the most retries":    {"job.backoffLimit=100"},
		"a period of the run": {"job.checkpointPeriod=20"},
	})
	assertRefused(t, []refusal{
		{"the conversion counts", "b200-spot", private("280B", "3"), "job.keepCheckpoints", "4 checkpoints at the peak (the one being saved beside those kept) need 17920 GB (4480 GB each), and the model's download, checked copy and Megatron conversion 1680 GB more: 19600 GB in all, more than the Lustre instance's 19327 GB (storage.capacityGib 18000); allowed: at most 2,"},
		{"none fits", "b200-spot", private("1000B", "1"), "job.keepCheckpoints", "allowed: at most 0,"},
		{"a period past the run", "b200-spot", []string{"job.checkpointPeriod=21"}, "job.checkpointPeriod", "21 steps is longer than the run (20 steps"},
		{"one retry over the most", "b200-spot", []string{"job.backoffLimit=101"}, "job.backoffLimit", "101 is out of range; allowed: 0 to 100 retries"},
	})
}

// The GPU pool's sizes at their limits: 256 nodes (with networks large enough to address them)
// and one more, gpu.minNodes up to gpu.nodes, gpu.maxNodes from gpu.nodes to 256.
func TestTheGPUPoolsSizesAtTheirLimits(t *testing.T) {
	wide := []string{"job.enabled=false", "network.rdmaCidr=192.168.16.0/20", "network.gvnicCidr=192.168.0.0/23"}
	at := func(overrides ...string) []string { return append(slices.Clone(wide), overrides...) }
	assertAccepted(t, "smoke", map[string][]string{
		"256 nodes":                      at("gpu.nodes=256"),
		"a pool that grows to 256":       at("gpu.nodes=2", "gpu.maxNodes=256"),
		"a minimum of all the nodes":     at("gpu.nodes=4", "gpu.minNodes=4"),
		"a maximum of exactly gpu.nodes": at("gpu.nodes=4", "gpu.maxNodes=4"),
	})
	assertRefused(t, []refusal{
		{"257 nodes", "smoke", at("gpu.nodes=257"), "gpu.nodes", "257 is out of range; allowed: 1 to 256 nodes"},
		{"a pool that grows to 257", "smoke", at("gpu.nodes=2", "gpu.maxNodes=257"), "gpu.maxNodes", "257 is out of range; allowed: gpu.nodes (2) to 256"},
		{"a minimum above gpu.nodes", "smoke", at("gpu.nodes=4", "gpu.minNodes=5"), "gpu.minNodes", "5 is out of range; allowed: 0 to gpu.nodes (4)"},
		{"a maximum below gpu.nodes", "smoke", at("gpu.nodes=4", "gpu.maxNodes=3"), "gpu.maxNodes", "3 is out of range; allowed: gpu.nodes (4) to 256"},
	})
}

// The networks' and the gate's checks at their limits, worked by hand. A /24 holds 252 node
// addresses (256 less the four GCP keeps), so the default gVNIC /24 and the RDMA /21 split into
// eight /24s address exactly 252 nodes. B200 nodes have eight 400 Gb/s RDMA NICs: all_gather on
// one node reaches 400 / 8 = 50 GB/s through them, across two 8 × 50 × 2 / 1 = 800 GB/s.
func TestTheNetworksAndTheGatesLimits(t *testing.T) {
	off := func(overrides ...string) []string { return append([]string{"job.enabled=false"}, overrides...) }
	assertAccepted(t, "smoke", map[string][]string{
		"252 nodes in the default ranges": off("gpu.nodes=252"),
		"the smallest MTU":                off("network.mtu=1300"),
		"the largest MTU":                 off("network.mtu=8896"),
		"one node's whole bandwidth":      off("gate.minBusBandwidthGBps=50"),
		"two nodes' whole bandwidth":      off("gpu.nodes=2", "gate.minBusBandwidthGBps=800"),
		"the smallest minimum bandwidth":  off("gate.minBusBandwidthGBps=1"),
		"the smallest gate file":          off("gate.storageGib=1"),
		"the largest gate file":           off("gate.storageGib=1024"),
		"the shortest wait for capacity":  off("gate.capacityWaitMinutes=1"),
		"the longest wait for capacity":   off("gate.capacityWaitMinutes=240"),
	})
	assertRefused(t, []refusal{
		{"253 nodes in the default RDMA range", "smoke", off("gpu.nodes=253"), "network.rdmaCidr", "8 subnets of /24 with 252 usable addresses each, fewer than gpu.nodes=253"},
		{"253 nodes in the default gVNIC range", "smoke", off("gpu.nodes=253"), "network.gvnicCidr", "holds 252 node addresses, fewer than gpu.nodes=253"},
		{"an MTU under the smallest", "smoke", off("network.mtu=1299"), "network.mtu", "1299 is out of range; allowed: 1300 to 8896"},
		{"an MTU over the largest", "smoke", off("network.mtu=8897"), "network.mtu", "8897 is out of range; allowed: 1300 to 8896"},
		{"one GB/s over one node's bandwidth", "smoke", off("gate.minBusBandwidthGBps=51"), "gate.minBusBandwidthGBps", "51 GB/s is above what all_gather can reach on one GPU node over its RDMA NICs (every hop of the ring crosses one 400 Gb/s NIC: 50 GB/s); allowed: 1 to 50"},
		{"a gate file over 1 TiB", "smoke", off("gate.storageGib=1025"), "gate.storageGib", "1025 is out of range; allowed: 1 to 1024 GiB"},
		{"a wait for capacity over four hours", "smoke", off("gate.capacityWaitMinutes=241"), "gate.capacityWaitMinutes", "241 is out of range; allowed: 1 to 240 minutes"},
		{"one GB/s over two nodes' bandwidth", "smoke", off("gpu.nodes=2", "gate.minBusBandwidthGBps=801"), "gate.minBusBandwidthGBps", "allowed: 1 to 800"},
		// At the most nodes, 256: 8 × 50 × 256 / 255 = 401.6, 401 GB/s.
		{"one GB/s over 256 nodes' bandwidth", "smoke", off("gpu.nodes=256", "gate.minBusBandwidthGBps=402"), "gate.minBusBandwidthGBps", "402 GB/s is above what all_gather can reach across 256 nodes (8 NICs × 400 Gb/s into each node × 256/255 = 401 GB/s); allowed: 1 to 401"},
	})
	// Past the most nodes, the node count's error alone: no bound is worked out for 257 nodes.
	for _, p := range problems(t, "smoke", off("gpu.nodes=257", "gate.minBusBandwidthGBps=402")...).Problems {
		assert.NotEqual(t, "gate.minBusBandwidthGBps", p.Key, p.Error())
	}
}

// A reservation stack without gpu.reservation is told where the reservation must be: the
// stack's zone, or "the GPU zone" while zone is unset too.
func TestAMissingReservationNamesTheZone(t *testing.T) {
	assertRefused(t, []refusal{
		{"in the stack's zone", "h200-reserved", []string{"gpu.reservation="}, "gpu.reservation", "is required with gpu.provisioning=reservation: the name of a reservation in us-south1-b (or"},
		{"with no zone", "h200-reserved", []string{"gpu.reservation=", "zone="}, "gpu.reservation", "is required with gpu.provisioning=reservation: the name of a reservation in the GPU zone (or"},
	})
}
