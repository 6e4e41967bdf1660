package infra

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// ProjectName is the Pulumi project name and so the namespace of the program's config keys.
const ProjectName = "gke-rl"

// Top-level config keys of the `gke-rl` namespace. Structured keys hold objects whose fields are
// set with `pulumi config set --path <key>.<field> <value>`.
const (
	KeyZone       = "zone"
	KeyCluster    = "cluster"
	KeyNetwork    = "network"
	KeyGPU        = "gpu"
	KeyStorage    = "storage"
	KeyFramework  = "framework"
	KeyRay        = "ray"
	KeyJob        = "job"
	KeyJobs       = "jobs"
	KeyGate       = "gate"
	KeyMonitoring = "monitoring"
	KeyTokens     = "tokens"

	// The GCP provider's own keys.
	KeyGCPProject = "gcp:project"
	KeyGCPRegion  = "gcp:region"
)

// Config is the typed, defaulted and validated stack configuration.
type Config struct {
	// Project and Region are the GCP provider's `gcp:project` and `gcp:region`.
	Project string
	Region  string
	// Zone is where the GPU nodes, the Lustre instance and the RoCE network profile live.
	Zone      string
	Cluster   ClusterConfig
	Network   NetworkConfig
	GPU       GPUConfig
	Storage   StorageConfig
	Framework kinds.Framework
	Ray       RayConfig
	Job       JobConfig
	// Jobs are the experiments of `jobs`, in name order: each trains as `job` would, in its own
	// RayJob, and the stack's queue decides when (queue.go). Empty, the stack trains `job`.
	Jobs       []JobConfig
	Gate       GateConfig
	Monitoring MonitoringConfig
	Tokens     TokensConfig

	// explicit marks the optional keys that the stack sets (explicitKeys).
	explicit map[string]bool
}

// ClusterConfig is `cluster.*`.
type ClusterConfig struct {
	Name               string     `json:"name"`
	Mode               kinds.Mode `json:"mode"`
	ReleaseChannel     string     `json:"releaseChannel"`
	AuthorizedNetworks []string   `json:"authorizedNetworks"`
	// CPUMachineType sizes the Standard cluster's CPU pool (Ray head and system pods).
	CPUMachineType string `json:"cpuMachineType"`
	// MaintenanceStart is the daily maintenance window's start, HH:MM in UTC.
	MaintenanceStart string `json:"maintenanceStart"`
	// NoUpgradesFrom and NoUpgradesUntil bound the maintenance exclusion that keeps GKE from
	// upgrading the minor version or the nodes mid-run (RFC 3339; Until "none" removes it).
	NoUpgradesFrom  string `json:"noUpgradesFrom"`
	NoUpgradesUntil string `json:"noUpgradesUntil"`
	// NodeServiceAccount is a service account made once, outside the stack, for the nodes
	// (cluster.NodeRoles); empty, the program makes one, which takes a deployer that may create
	// service accounts and grant project roles.
	NodeServiceAccount string `json:"nodeServiceAccount"`
	// PreviewServiceAccount is the identity of pull-request previews: inside the cluster it may
	// read the kinds the stack manages and write only as a dry run (cluster.PreviewAccess).
	PreviewServiceAccount string `json:"previewServiceAccount"`
	// DeployServiceAccount is the identity of the deploy workflow: inside the cluster it may do
	// what `up` does, in the stack's namespaces (cluster.DeployAccess), so that its Google roles
	// need no Kubernetes rights.
	DeployServiceAccount string `json:"deployServiceAccount"`
}

// NetworkConfig is `network.*`: the address plan of the three VPCs.
type NetworkConfig struct {
	// NodeCIDR, PodCIDR and ServiceCIDR are the main subnet's primary and secondary ranges.
	NodeCIDR    string `json:"nodeCidr"`
	PodCIDR     string `json:"podCidr"`
	ServiceCIDR string `json:"serviceCidr"`
	// GVNICCIDR is the gVNIC VPC's only subnet.
	GVNICCIDR string `json:"gvnicCidr"`
	// RDMACIDR is split into RDMASubnets equal subnets of the RDMA VPC, one per RDMA NIC.
	RDMACIDR    string `json:"rdmaCidr"`
	RDMASubnets int    `json:"rdmaSubnets"`
	// MTU of the gVNIC and RDMA VPCs.
	MTU int `json:"mtu"`
	// PSAPrefixLength sizes the Private Service Access range that Managed Lustre draws from.
	PSAPrefixLength int `json:"psaPrefixLength"`
}

// GPUConfig is `gpu.*`.
type GPUConfig struct {
	Type         string             `json:"type"`
	Nodes        int                `json:"nodes"`
	Provisioning kinds.Provisioning `json:"provisioning"`
	Reservation  string             `json:"reservation"`
	// MinNodes and MaxNodes bound the GPU pool's autoscaler.
	MinNodes int `json:"minNodes"`
	MaxNodes int `json:"maxNodes"`
	// Placement is "" or "compact" (a compact placement policy for the GPU pool).
	Placement string `json:"placement"`
}

// StorageConfig is `storage.*`.
type StorageConfig struct {
	Type        kinds.StorageType `json:"type"`
	CapacityGiB int               `json:"capacityGib"`
	// Throughput is the Lustre tier in MB/s per TiB.
	Throughput int    `json:"throughput"`
	Filesystem string `json:"filesystem"`
	GKESupport bool   `json:"gkeSupport"`
	Bucket     string `json:"bucket"`
	MountPath  string `json:"mountPath"`
	Protect    bool   `json:"protect"`
	// Adopt takes over the storage that an earlier `pulumi destroy` kept, instead of creating it.
	Adopt bool `json:"adopt"`
	// CheckpointBudgetSeconds is how long one checkpoint may take before the plan warns.
	CheckpointBudgetSeconds int `json:"checkpointBudgetSeconds"`
}

// RayConfig is `ray.*`. Empty values mean the framework's pinned defaults.
type RayConfig struct {
	Version string `json:"version"`
	Image   string `json:"image"`
	// Mirror pulls an image of Docker Hub or nvcr.io through an Artifact Registry remote
	// repository in the region (cluster.MirrorOf).
	Mirror bool `json:"mirror"`
}

// JobConfig is `job.*`: the GRPO run.
type JobConfig struct {
	Enabled bool `json:"enabled"`
	// Name is the experiment (experiment.go): it names the checkpoint and log directories, the
	// RayJob and the W&B run. Unset, it is derived from what is trained.
	Name string `json:"name"`
	// ResumeFrom is another experiment whose newest checkpoint this one starts from while it
	// has none of its own.
	ResumeFrom string `json:"resumeFrom"`
	// Tuning are the knobs researchers tune (job.learningRate, job.klCoef, ...).
	Tuning workloads.Tuning `json:"-"`
	Model  string           `json:"model"`
	// Revisions pin the Hugging Face Hub downloads, keyed by repository ID (the model's and
	// the datasets' the run loads, workloads.HubDatasets): a full commit ID, a tag or a branch.
	// A repository without one is fetched at its default branch, and the data preparation logs
	// the commit it got. Keyed by ID, a pin stays with its repository: switching job.model
	// leaves the old model's pin inert instead of applying it to another repository.
	Revisions map[string]string `json:"revisions"`
	// ModelSize is the parameter count (72B, 1.5B, 500M) when the model ID does not say it.
	ModelSize            string   `json:"modelSize"`
	Dataset              string   `json:"dataset"`
	MaxSteps             int      `json:"maxSteps"`
	Epochs               int      `json:"epochs"`
	PromptsPerStep       int      `json:"promptsPerStep"`
	GenerationsPerPrompt int      `json:"generationsPerPrompt"`
	CheckpointPeriod     int      `json:"checkpointPeriod"`
	KeepCheckpoints      int      `json:"keepCheckpoints"`
	Args                 []string `json:"args"`
	// Recipe is NeMo RL's config file, relative to its source directory.
	Recipe string `json:"recipe"`
	// BackoffLimit is how many times a failed run is retried: by KubeRay on a new cluster when
	// the RayJob has its own (spot, flex-start), by the entrypoint on the long-lived cluster
	// otherwise.
	BackoffLimit int `json:"backoffLimit"`
	// ActiveDeadlineSeconds bounds each attempt of a RayJob with its own cluster (KubeRay's
	// activeDeadlineSeconds) and the whole run, retries included, on the long-lived cluster (the
	// entrypoint's RUN_DEADLINE_SECONDS); 0 means no bound. Unset, it is derived from the run's
	// length and model (deadline.go).
	ActiveDeadlineSeconds int `json:"activeDeadlineSeconds"`

	// Priority and Nodes are an entry of `jobs`'s: the order of the queue's waiting
	// experiments (higher first), and the GPU nodes its Ray workers take.
	Priority int `json:"-"`
	Nodes    int `json:"-"`
	// explicit marks the job's keys that the stack sets, named as `job`'s (explicitJobKeys);
	// own, of an entry of `jobs`, those the entry sets itself, not through `job`.
	explicit, own map[string]bool
}

// TokensConfig is `tokens.*`: which tokens the run reads. Their values live in Secret Manager
// only (workloads.Tokens): the program creates the secrets empty and never reads them.
type TokensConfig struct {
	// HuggingFace makes the Hugging Face token available to the data preparation and the Ray
	// pods (gated or private models and datasets, higher download rate limits).
	HuggingFace bool `json:"huggingFace"`
	// WandB turns Weights & Biases logging on, with the netrc entry its secret holds.
	WandB bool `json:"wandb"`
}

// RetiredTokenKeys are the keys that once held the tokens as Pulumi secrets, each with the
// token that replaces it: a stack that still sets one is refused with the way to move.
var RetiredTokenKeys = map[string]string{"hfToken": "huggingFace", "wandbApiKey": "wandb"}

// GateConfig is `gate.*`: the post-deploy checks before the Ray cluster and the run.
type GateConfig struct {
	// Enabled defaults to true on reserved and on-demand capacity (nodes that are there
	// anyway), false on spot and flex-start (whose pools are empty until a run).
	Enabled bool `json:"enabled"`
	// MinBusBandwidthGBps fails the NCCL all_gather below it.
	MinBusBandwidthGBps int `json:"minBusBandwidthGBps"`
	// StorageGiB is written and read back on the shared volume.
	StorageGiB int `json:"storageGib"`
	// CapacityWaitMinutes is how long a gate pod may wait for its GPU node (scale-up from zero,
	// node creation, spot or flex-start capacity) before the gate fails naming no capacity; the
	// pods' own clocks start once they are on their nodes.
	CapacityWaitMinutes int `json:"capacityWaitMinutes"`
	// RunID names the gate's Jobs: changing it runs the gate again (its Jobs run once).
	RunID string `json:"runId"`
}

// MonitoringConfig is `monitoring.*`: the dashboard and the alert policies.
type MonitoringConfig struct {
	Enabled bool `json:"enabled"`
	// NotificationChannels are Cloud Monitoring channels, projects/<p>/notificationChannels/<id>,
	// that receive the alerts.
	NotificationChannels []string `json:"notificationChannels"`
}

// LoadConfig reads the stack configuration from ctx, decodes it strictly and applies defaults.
// It returns Errors listing every problem of form (unknown keys, values of the wrong type, tokens
// in plain text) at once; Resolve checks the values.
//
// presentKeys are the full names (`gke-rl:gpu`) of every key the stack sets, used to reject
// unknown top-level keys; nil skips that check.
func LoadConfig(ctx *pulumi.Context, presentKeys []string) (*Config, error) {
	var errs Errors
	checkTopLevelKeys(presentKeys, &errs)

	cfg := &Config{}
	gcpCfg := config.New(ctx, "gcp")
	cfg.Project = gcpCfg.Get("project")
	cfg.Region = gcpCfg.Get("region")

	own := config.New(ctx, ProjectName)
	cfg.Zone = own.Get(KeyZone)
	cfg.Framework = kinds.Framework(own.Get(KeyFramework))

	raw := rawConfig{}
	decodeIfSet(own, KeyCluster, &raw.Cluster, &errs)
	decodeIfSet(own, KeyNetwork, &raw.Network, &errs)
	decodeIfSet(own, KeyGPU, &raw.GPU, &errs)
	decodeIfSet(own, KeyStorage, &raw.Storage, &errs)
	decodeIfSet(own, KeyRay, &raw.Ray, &errs)
	decodeIfSet(own, KeyJob, &raw.Job, &errs)
	if v, err := own.Try(KeyJobs); err == nil {
		raw.Jobs = decodeJobs(v, raw.Job, &errs)
	}
	decodeIfSet(own, KeyGate, &raw.Gate, &errs)
	decodeIfSet(own, KeyMonitoring, &raw.Monitoring, &errs)

	decodeIfSet(own, KeyTokens, &raw.Tokens, &errs)

	applyDefaults(cfg, &raw)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func decodeIfSet(own *config.Config, key string, target any, errs *Errors) {
	if v, err := own.Try(key); err == nil {
		decodeObject(key, v, target, errs)
	}
}

// knownTopLevelKeys are the keys of the gke-rl namespace.
var knownTopLevelKeys = []string{
	KeyZone, KeyCluster, KeyNetwork, KeyGPU, KeyStorage, KeyFramework, KeyRay, KeyJob, KeyJobs, KeyGate, KeyMonitoring, KeyTokens,
}

func checkTopLevelKeys(present []string, errs *Errors) {
	known := map[string]bool{}
	for _, k := range knownTopLevelKeys {
		known[k] = true
	}
	sorted := append([]string(nil), present...)
	sort.Strings(sorted)
	for _, full := range sorted {
		name, ok := strings.CutPrefix(full, ProjectName+":")
		if token, retired := RetiredTokenKeys[name]; ok && retired {
			// Never echo the value: it is a token.
			errs.Add(name, "tokens no longer pass through Pulumi, whose state, previews and passphrase would all reach them: "+
				"remove it (`pulumi config rm %s`), set `pulumi config set --path tokens.%s true`, and once `pulumi up` has created the secret, "+
				"store the token in Secret Manager with the command the `tokenCommands` output prints (README, Tokens); "+
				"and revoke this token and issue a new one (the old one stays readable, encrypted, in the stack file's git history and in every state version "+
				"that held it, to anyone with the passphrase), and rotate the passphrase (`pulumi stack change-secrets-provider passphrase`)", name, token)
			continue
		}
		if ok && !known[name] {
			errs.Add(name, "unknown key; the %s namespace takes %s", ProjectName, strings.Join(knownTopLevelKeys, ", "))
		}
	}
}

// EnvConfigKeys returns the config keys that the Pulumi engine passes to the program, read from
// the same environment variable the SDK reads; nil when not run by the engine.
func EnvConfigKeys() []string {
	raw := os.Getenv(pulumi.EnvConfig)
	if raw == "" {
		return nil
	}
	var m map[string]string
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// ConfigKeys are every key the stack configuration takes, as `pulumi config set --path` names
// them (`gpu.nodes`), read from the config types: the configuration reference is checked
// against them.
func ConfigKeys() []string {
	keys := []string{KeyGCPProject, KeyGCPRegion, KeyZone, KeyFramework}
	sections := reflect.TypeOf(rawConfig{})
	for i := 0; i < sections.NumField(); i++ {
		section := sections.Field(i)
		if section.Name == "Jobs" {
			// An entry of jobs, NAME standing for its key, takes every key of job and its own.
			keys = append(keys, "jobs.NAME", "jobs.NAME.priority", "jobs.NAME.nodes")
			continue
		}
		fields := map[string][]int{}
		collectFields(section.Type, nil, fields)
		for _, tag := range slices.SortedFunc(maps.Keys(fields), func(a, b string) int { return slices.Compare(fields[a], fields[b]) }) {
			keys = append(keys, strings.ToLower(section.Name)+"."+tag)
		}
	}
	return keys
}
