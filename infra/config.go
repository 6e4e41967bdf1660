package infra

import (
	"maps"
	"strings"

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
	// RayJob, and the stack's queue decides when (workloads/queue). Empty, the stack trains `job`.
	Jobs       []JobConfig
	Gate       GateConfig
	Monitoring MonitoringConfig
	Tokens     TokensConfig
	// Siblings are the other stacks of the project directory (ReadSiblings), whose cluster names
	// this one's must not take.
	Siblings []Sibling

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
	// DriverVersion is the NVIDIA driver GKE installs on the GPU nodes: "default" or "latest"
	// (cluster.DriverDefault, cluster.DriverLatest); unset, the newest any run's image needs
	// (defaultDriverVersion).
	DriverVersion string `json:"driverVersion"`
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
	ModelSize string `json:"modelSize"`
	// ModelShape is the model's shape from its config.json, for a model outside the program's
	// table (workloads.KnownShape); nil takes the table's.
	ModelShape           *ModelShape `json:"modelShape"`
	Dataset              string      `json:"dataset"`
	MaxSteps             int         `json:"maxSteps"`
	Epochs               int         `json:"epochs"`
	PromptsPerStep       int         `json:"promptsPerStep"`
	GenerationsPerPrompt int         `json:"generationsPerPrompt"`
	CheckpointPeriod     int         `json:"checkpointPeriod"`
	KeepCheckpoints      int         `json:"keepCheckpoints"`
	Args                 []string    `json:"args"`
	// Recipe is NeMo RL's config file, relative to its source directory.
	Recipe string `json:"recipe"`
	// FrameworkRelease is the framework's release the run trains with (workloads.ReleaseTags):
	// its code, image, configuration and launcher. Part of the experiment's identity.
	FrameworkRelease string `json:"frameworkRelease"`
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

// A stack with `jobs` runs several experiments on its GPUs through a queue (Kueue): each entry
// is an experiment, named by its key, that trains as `job` would in a RayJob of its own with
// its own checkpoints, and takes from `job` every key it does not set. The queue admits the
// experiments that fit its quota, the GPU pool's gpu.maxNodes nodes, highest priority first, and
// holds the others suspended, with no pod and no GPU node, until one ends.
//
// Queued reports whether the stack's runs go through the queue (`jobs` is set).
func (c *Config) Queued() bool { return len(c.Jobs) > 0 }

// Runs are the runs the stack names: `job`, or every experiment of `jobs`, stopped ones too.
func (c *Config) Runs() []JobConfig {
	if c.Queued() {
		return c.Jobs
	}
	return []JobConfig{c.Job}
}

// ForExperiment is the configuration as one experiment of `jobs` sees it: its job as `job`, its
// node count as gpu.nodes, its keys as the ones the stack sets.
func (c *Config) ForExperiment(j JobConfig) *Config {
	e := *c
	e.Job = j
	e.GPU.Nodes = j.Nodes
	e.explicit = maps.Clone(c.explicit)
	for k := range e.explicit {
		if strings.HasPrefix(k, "job.") {
			delete(e.explicit, k)
		}
	}
	maps.Copy(e.explicit, j.explicit)
	return &e
}

// ModelShape is `job.modelShape`: the values of a model's config.json that size its memory
// estimate, under config.json's names in camel case.
type ModelShape struct {
	HiddenSize      int `json:"hiddenSize"`
	NumHiddenLayers int `json:"numHiddenLayers"`
	VocabSize       int `json:"vocabSize"`
}

// Shape is job.modelShape as the estimates take it, or nil when the stack leaves it to the
// program's table.
func (j JobConfig) Shape() *workloads.Shape {
	if j.ModelShape == nil {
		return nil
	}
	m := j.ModelShape
	return &workloads.Shape{Hidden: m.HiddenSize, Layers: m.NumHiddenLayers, Vocab: m.VocabSize, Source: "job.modelShape"}
}
