package infra

import (
	"maps"
	"slices"
	"strings"

	"gke-rl/cluster"
	"gke-rl/internal/kinds"
	"gke-rl/internal/naming"
	"gke-rl/workloads"
)

// rawConfig is the stack configuration as decoded, before defaults: a nil pointer is a key the
// stack does not set.
type rawConfig struct {
	Cluster struct {
		Name                  *string  `json:"name"`
		Mode                  *string  `json:"mode"`
		ReleaseChannel        *string  `json:"releaseChannel"`
		AuthorizedNetworks    []string `json:"authorizedNetworks"`
		CPUMachineType        *string  `json:"cpuMachineType"`
		MaintenanceStart      *string  `json:"maintenanceStart"`
		NoUpgradesFrom        *string  `json:"noUpgradesFrom"`
		NoUpgradesUntil       *string  `json:"noUpgradesUntil"`
		NodeServiceAccount    *string  `json:"nodeServiceAccount"`
		PreviewServiceAccount *string  `json:"previewServiceAccount"`
		DeployServiceAccount  *string  `json:"deployServiceAccount"`
	}
	Network struct {
		NodeCIDR        *string `json:"nodeCidr"`
		PodCIDR         *string `json:"podCidr"`
		ServiceCIDR     *string `json:"serviceCidr"`
		GVNICCIDR       *string `json:"gvnicCidr"`
		RDMACIDR        *string `json:"rdmaCidr"`
		RDMASubnets     *int    `json:"rdmaSubnets"`
		MTU             *int    `json:"mtu"`
		PSAPrefixLength *int    `json:"psaPrefixLength"`
	}
	GPU struct {
		Type         *string `json:"type"`
		Nodes        *int    `json:"nodes"`
		Provisioning *string `json:"provisioning"`
		Reservation  *string `json:"reservation"`
		MinNodes     *int    `json:"minNodes"`
		MaxNodes     *int    `json:"maxNodes"`
		Placement    *string `json:"placement"`
		// DriverVersion is read after the runs' releases (defaultDriverVersion).
		DriverVersion *string `json:"driverVersion"`
	}
	Storage struct {
		Type        *string `json:"type"`
		CapacityGiB *int    `json:"capacityGib"`
		Throughput  *int    `json:"throughput"`
		Filesystem  *string `json:"filesystem"`
		GKESupport  *bool   `json:"gkeSupport"`
		Bucket      *string `json:"bucket"`
		MountPath   *string `json:"mountPath"`
		Protect     *bool   `json:"protect"`
		Adopt       *bool   `json:"adopt"`

		CheckpointBudgetSeconds *int `json:"checkpointBudgetSeconds"`
	}
	Gate struct {
		Enabled             *bool   `json:"enabled"`
		MinBusBandwidthGBps *int    `json:"minBusBandwidthGBps"`
		StorageGiB          *int    `json:"storageGib"`
		CapacityWaitMinutes *int    `json:"capacityWaitMinutes"`
		RunID               *string `json:"runId"`
	}
	Tokens struct {
		HuggingFace *bool `json:"huggingFace"`
		WandB       *bool `json:"wandb"`
	}
	Monitoring struct {
		Enabled              *bool    `json:"enabled"`
		NotificationChannels []string `json:"notificationChannels"`
	}
	Ray struct {
		Version *string `json:"version"`
		Image   *string `json:"image"`
		Mirror  *bool   `json:"mirror"`
	}
	Job rawJob
	// Jobs are the entries of `jobs` in name order, each merged over Job (mergeJob).
	Jobs []namedJobEntry
}

// namedJobEntry is an entry of `jobs` with its key, and the keys it sets itself (before
// mergeJob), named as job's: its problems are reported under them.
type namedJobEntry struct {
	name string
	rawJobEntry
	own map[string]bool
}

// rawJob is `job` as decoded, and each entry of `jobs`, which starts from it.
type rawJob struct {
	Enabled    *bool   `json:"enabled"`
	Name       *string `json:"name"`
	ResumeFrom *string `json:"resumeFrom"`
	workloads.Tuning
	Model                *string           `json:"model"`
	Revisions            map[string]string `json:"revisions"`
	ModelSize            *string           `json:"modelSize"`
	ModelShape           *ModelShape       `json:"modelShape"`
	Dataset              *string           `json:"dataset"`
	MaxSteps             *int              `json:"maxSteps"`
	Epochs               *int              `json:"epochs"`
	PromptsPerStep       *int              `json:"promptsPerStep"`
	GenerationsPerPrompt *int              `json:"generationsPerPrompt"`
	CheckpointPeriod     *int              `json:"checkpointPeriod"`
	KeepCheckpoints      *int              `json:"keepCheckpoints"`
	Args                 []string          `json:"args"`

	Recipe                *string `json:"recipe"`
	FrameworkRelease      *string `json:"frameworkRelease"`
	BackoffLimit          *int    `json:"backoffLimit"`
	ActiveDeadlineSeconds *int    `json:"activeDeadlineSeconds"`
}

// rawJobEntry is one entry of `jobs`: an experiment, named by its key.
type rawJobEntry struct {
	rawJob
	// Priority orders the waiting experiments of the queue: higher first.
	Priority *int `json:"priority"`
	// Nodes is how many GPU nodes the experiment's Ray workers take (gpu.nodes unset).
	Nodes *int `json:"nodes"`
}

// Defaults of the config keys, as documented in docs/configuration.md. A default that depends on another
// key (the dataset on the framework, the bucket on the project) is set in applyDefaults.
const (
	DefaultClusterName    = "gke-rl"
	DefaultReleaseChannel = "REGULAR"
	// DefaultCPUMachineType fits the Ray head (8 vCPU, 32 GiB in the seeds' manifests) next to
	// the system pods.
	DefaultCPUMachineType  = "n2-standard-16"
	DefaultNodeCIDR        = "10.0.0.0/20"
	DefaultPodCIDR         = "10.4.0.0/14"
	DefaultServiceCIDR     = "10.8.0.0/20"
	DefaultGVNICCIDR       = "192.168.0.0/24"
	DefaultRDMACIDR        = "192.168.8.0/21"
	DefaultMTU             = 8896
	DefaultPSAPrefixLength = 20
	DefaultGPUType         = "b200"
	DefaultGPUNodes        = 2
	DefaultCapacityGiB     = 18000
	DefaultThroughput      = 500
	DefaultFilesystem      = "lustrefs"
	DefaultMountPath       = "/data"
	DefaultModel           = "Qwen/Qwen2.5-32B-Instruct"
	DefaultMaxSteps        = 20
	DefaultPrompts         = 32
	DefaultGenerations     = 8
	DefaultCheckpointEvery = 10
	DefaultKeepCheckpoints = 2
	// DefaultBackoffLimit retries a spot run on ten fresh clusters before giving up.
	DefaultBackoffLimit = 10
	// OneNodeMinBusBandwidthGBps is the gate's default minimum on a single GPU node, where
	// all_gather runs over the node's own RDMA NICs (NVLink, peer-to-peer and shared memory
	// off): each hop of NCCL's ring crosses one 400 Gb/s NIC, which NCCL fills to 48-49 GB/s
	// (NVIDIA's answer in NVIDIA/nccl-tests#267). No one-node run over the NICs is published;
	// half a NIC's line rate fails a NIC path that is broken or falls back to the host, not one
	// that is a little slow.
	OneNodeMinBusBandwidthGBps = 25
	// DefaultGateStorageGiB is what the storage check writes and reads back.
	DefaultGateStorageGiB = 4
	// StandingCapacityWaitMinutes is the gate's wait for a GPU node of reserved or on-demand
	// capacity: the nodes are normally there; a pool that scales from zero creates one in 10 to
	// 15 minutes with the driver and the RDMA installer (docs/operations.md, timings).
	StandingCapacityWaitMinutes = 30
	// PreemptibleCapacityWaitMinutes is the wait on spot and flex-start capacity: creation as
	// above, after a wait for capacity that GKE does not bound.
	PreemptibleCapacityWaitMinutes = 60
	// MaxCapacityWaitMinutes keeps the gate within a working session: a longer wait is better
	// spent on another zone or provisioning model.
	MaxCapacityWaitMinutes = 240
	// DefaultMaintenanceStart puts GKE's daily maintenance window at 03:00 UTC.
	DefaultMaintenanceStart = "03:00"
	// DefaultNoUpgradesFrom and DefaultNoUpgradesUntil are a fixed exclusion window (the same
	// on every `pulumi up`, so no diff) that ends the day before the end of standard support of
	// the newest minor version a cluster is created on (1.35: 2027-04-11, cluster.LatestSupportEnd):
	// GKE refuses an exclusion of this scope that ends later. The plan warns 30 days before it
	// ends; then move cluster.noUpgradesUntil forward, once the next minor's dates are known.
	DefaultNoUpgradesFrom  = "2026-11-01T00:00:00Z"
	DefaultNoUpgradesUntil = "2027-04-10T00:00:00Z"
)

// defaultDatasets is the dataset each framework's GRPO example trains on.
var defaultDatasets = map[kinds.Framework]string{
	kinds.NeMoRL: "DeepScaler",
	kinds.Verl:   "gsm8k",
}

func applyDefaults(c *Config, r *rawConfig) {
	c.Cluster = ClusterConfig{
		Name:               or(r.Cluster.Name, DefaultClusterName),
		Mode:               kinds.Mode(or(r.Cluster.Mode, string(kinds.Standard))),
		ReleaseChannel:     strings.ToUpper(or(r.Cluster.ReleaseChannel, DefaultReleaseChannel)),
		AuthorizedNetworks: r.Cluster.AuthorizedNetworks,
		CPUMachineType:     or(r.Cluster.CPUMachineType, DefaultCPUMachineType),
		MaintenanceStart:   or(r.Cluster.MaintenanceStart, DefaultMaintenanceStart),
		NoUpgradesFrom:     or(r.Cluster.NoUpgradesFrom, DefaultNoUpgradesFrom),
		NoUpgradesUntil:    or(r.Cluster.NoUpgradesUntil, DefaultNoUpgradesUntil),

		NodeServiceAccount:    or(r.Cluster.NodeServiceAccount, ""),
		PreviewServiceAccount: or(r.Cluster.PreviewServiceAccount, ""),
		DeployServiceAccount:  or(r.Cluster.DeployServiceAccount, ""),
	}
	gpuType := or(r.GPU.Type, DefaultGPUType)
	rdmaSubnets := 8
	if spec, ok := LookupGPU(gpuType); ok {
		rdmaSubnets = spec.RDMANICs
	}
	c.Network = NetworkConfig{
		NodeCIDR:        or(r.Network.NodeCIDR, DefaultNodeCIDR),
		PodCIDR:         or(r.Network.PodCIDR, DefaultPodCIDR),
		ServiceCIDR:     or(r.Network.ServiceCIDR, DefaultServiceCIDR),
		GVNICCIDR:       or(r.Network.GVNICCIDR, DefaultGVNICCIDR),
		RDMACIDR:        or(r.Network.RDMACIDR, DefaultRDMACIDR),
		RDMASubnets:     or(r.Network.RDMASubnets, rdmaSubnets),
		MTU:             or(r.Network.MTU, DefaultMTU),
		PSAPrefixLength: or(r.Network.PSAPrefixLength, DefaultPSAPrefixLength),
	}
	c.GPU = GPUConfig{
		Type:         gpuType,
		Nodes:        or(r.GPU.Nodes, DefaultGPUNodes),
		Provisioning: kinds.Provisioning(or(r.GPU.Provisioning, string(defaultProvisioning(gpuType)))),
		Reservation:  or(r.GPU.Reservation, ""),
		Placement:    or(r.GPU.Placement, ""),
	}
	c.GPU.MinNodes = or(r.GPU.MinNodes, c.GPU.Nodes)
	c.GPU.MaxNodes = or(r.GPU.MaxNodes, c.GPU.Nodes)
	if r.GPU.MinNodes == nil && c.GPU.Provisioning.Preemptible() {
		// Spot and flex-start capacity is requested when the Ray workers need it and released
		// when the job's cluster is gone: the pool scales from and back to zero, and a stockout
		// delays the run instead of failing `pulumi up`.
		c.GPU.MinNodes = 0
	}
	c.Storage = StorageConfig{
		Type:        kinds.StorageType(or(r.Storage.Type, string(kinds.Lustre))),
		CapacityGiB: or(r.Storage.CapacityGiB, DefaultCapacityGiB),
		Throughput:  or(r.Storage.Throughput, DefaultThroughput),
		Filesystem:  or(r.Storage.Filesystem, DefaultFilesystem),
		// Port 988 is GKE's recommended default for new clusters; GKE support (port 6988, the
		// legacy port) is an opt-in for instances created with it.
		GKESupport: or(r.Storage.GKESupport, false),
		Bucket:     or(r.Storage.Bucket, defaultBucket(c.Project, c.Cluster.Name)),
		MountPath:  or(r.Storage.MountPath, DefaultMountPath),
		Protect:    or(r.Storage.Protect, true),
		Adopt:      or(r.Storage.Adopt, false),

		CheckpointBudgetSeconds: or(r.Storage.CheckpointBudgetSeconds, DefaultCheckpointBudgetSeconds),
	}
	if c.Framework == "" {
		c.Framework = kinds.NeMoRL
	}
	c.Ray = RayConfig{Version: or(r.Ray.Version, ""), Image: or(r.Ray.Image, ""), Mirror: or(r.Ray.Mirror, true)}
	c.Job = jobConfig(c, r.Job)
	c.Tokens = TokensConfig{HuggingFace: or(r.Tokens.HuggingFace, false), WandB: or(r.Tokens.WandB, false)}
	c.Monitoring = MonitoringConfig{
		Enabled:              or(r.Monitoring.Enabled, true),
		NotificationChannels: r.Monitoring.NotificationChannels,
	}
	c.Gate = GateConfig{
		Enabled:             or(r.Gate.Enabled, !c.GPU.Provisioning.Preemptible()),
		MinBusBandwidthGBps: or(r.Gate.MinBusBandwidthGBps, defaultMinBusBandwidth(gpuType, c.GPU.Nodes)),
		StorageGiB:          or(r.Gate.StorageGiB, DefaultGateStorageGiB),
		CapacityWaitMinutes: or(r.Gate.CapacityWaitMinutes, defaultCapacityWaitMinutes(c.GPU.Provisioning)),
		RunID:               or(r.Gate.RunID, ""),
	}
	// The raw pointers tell which keys the stack sets: validate rejects an explicit zero, the
	// warnings name keys that do nothing, an unset deadline is derived.
	c.explicit = explicitKeys(r)
	maps.Copy(c.explicit, c.Job.explicit)
	for _, e := range r.Jobs {
		c.Jobs = append(c.Jobs, experimentConfig(c, e))
	}
	if r.GPU.MinNodes == nil && len(c.Jobs) > 0 {
		// A queue's experiments run in Ray clusters of their own, which bring up the nodes they
		// need and give them back: nothing uses a node between them, whatever the provisioning
		// (a reservation bills its machines anyway; the bill says so).
		c.GPU.MinNodes = 0
	}
	c.GPU.DriverVersion = or(r.GPU.DriverVersion, defaultDriverVersion(c))
}

// defaultDriverVersion is GKE's LATEST driver when an image a run of the stack takes from its
// release needs a newer driver branch than GKE's DEFAULT installs (workloads.Release.
// DriverBranch: NeMo RL v0.7.0's CUDA 13.2), DEFAULT otherwise. Every run the stack names counts,
// stopped ones too, so that stopping or starting an experiment does not change the GPU pool's
// nodes. An image of `ray.image` is the user's: its driver is theirs to set.
func defaultDriverVersion(c *Config) string {
	if _, ok := releaseNeedingLatestDriver(c); ok {
		return cluster.DriverLatest
	}
	return cluster.DriverDefault
}

// releaseNeedingLatestDriver is the first release a run of the stack takes its image from whose
// image needs a newer driver branch than GKE's DEFAULT installs.
func releaseNeedingLatestDriver(c *Config) (workloads.Release, bool) {
	if c.Ray.Image != "" {
		return workloads.Release{}, false
	}
	for _, j := range c.Runs() {
		if r, ok := workloads.LookupRelease(c.Framework, j.FrameworkRelease); ok && r.DriverBranch > cluster.DefaultDriverBranch {
			return r, true
		}
	}
	return workloads.Release{}, false
}

// jobConfig is a job's configuration with defaults: `job`'s, or an entry of `jobs` once it has
// taken what it does not set from `job` (mergeJob).
func jobConfig(c *Config, r rawJob) JobConfig {
	j := JobConfig{
		Enabled:              or(r.Enabled, true),
		Name:                 or(r.Name, ""),
		ResumeFrom:           or(r.ResumeFrom, ""),
		Tuning:               r.Tuning,
		Model:                or(r.Model, DefaultModel),
		Revisions:            r.Revisions,
		ModelSize:            or(r.ModelSize, ""),
		ModelShape:           r.ModelShape,
		Dataset:              or(r.Dataset, defaultDatasets[c.Framework]),
		MaxSteps:             or(r.MaxSteps, 0),
		Epochs:               or(r.Epochs, 0),
		PromptsPerStep:       or(r.PromptsPerStep, DefaultPrompts),
		GenerationsPerPrompt: or(r.GenerationsPerPrompt, DefaultGenerations),
		CheckpointPeriod:     or(r.CheckpointPeriod, DefaultCheckpointEvery),
		KeepCheckpoints:      or(r.KeepCheckpoints, DefaultKeepCheckpoints),
		Args:                 r.Args,

		Recipe:                orNonEmpty(r.Recipe, ""),
		FrameworkRelease:      orNonEmpty(r.FrameworkRelease, defaultReleaseTag(c.Framework)),
		BackoffLimit:          or(r.BackoffLimit, DefaultBackoffLimit),
		ActiveDeadlineSeconds: or(r.ActiveDeadlineSeconds, 0),
		explicit:              explicitJobKeys(r),
	}
	// Unset, the recipe is the one NeMo RL wrote for the model's size class: the 8B recipe's
	// single-GPU rollout cannot hold a 72B model, nor its optimizer state one node's GPUs.
	if j.Recipe == "" {
		billions, _ := jobParameters(j)
		j.Recipe = workloads.NeMoRLRecipeFor(billions / 1e9)
	}
	// A run bounded by neither steps nor epochs would train until its deadline: default to steps.
	if r.MaxSteps == nil && r.Epochs == nil {
		j.MaxSteps = DefaultMaxSteps
	}
	return j
}

// defaultReleaseTag is the framework's default release, "" for a framework the program does not
// run (validateFramework refuses it).
func defaultReleaseTag(f kinds.Framework) string {
	r, _ := workloads.LookupRelease(f, "")
	return r.Tag
}

// experimentConfig is an entry of `jobs` with defaults.
func experimentConfig(c *Config, e namedJobEntry) JobConfig {
	j := jobConfig(c, e.rawJob)
	j.Name = e.name
	j.Priority = or(e.Priority, 0)
	j.Nodes = or(e.Nodes, c.GPU.Nodes)
	j.own = e.own
	j.own["jobs.nodes"] = e.Nodes != nil
	return j
}

// explicitKeys records the optional keys that the stack sets, which the defaults would otherwise
// hide.
func explicitKeys(r *rawConfig) map[string]bool {
	return map[string]bool{
		// Keys that apply to one cluster mode or one storage type (inapplicableKeys).
		"cluster.cpuMachineType":   r.Cluster.CPUMachineType != nil,
		"storage.capacityGib":      r.Storage.CapacityGiB != nil,
		"storage.throughput":       r.Storage.Throughput != nil,
		"storage.filesystem":       r.Storage.Filesystem != nil,
		"storage.gkeSupport":       r.Storage.GKESupport != nil,
		"storage.bucket":           r.Storage.Bucket != nil && *r.Storage.Bucket != "",
		"gpu.minNodes":             r.GPU.MinNodes != nil,
		"gpu.maxNodes":             r.GPU.MaxNodes != nil,
		"gate.minBusBandwidthGBps": r.Gate.MinBusBandwidthGBps != nil,
		"gate.storageGib":          r.Gate.StorageGiB != nil,
		"gate.capacityWaitMinutes": r.Gate.CapacityWaitMinutes != nil,
		"gate.runId":               r.Gate.RunID != nil && *r.Gate.RunID != "",
		"ray.mirror":               r.Ray.Mirror != nil && *r.Ray.Mirror,
	}
}

// explicitJobKeys records the keys of a job that it sets, named as `job`'s.
func explicitJobKeys(r rawJob) map[string]bool {
	return map[string]bool{
		"job.maxSteps": r.MaxSteps != nil,
		"job.epochs":   r.Epochs != nil,
		// Unset, the deadline is derived (deadline.go); 0 is a deliberate "none".
		"job.activeDeadlineSeconds": r.ActiveDeadlineSeconds != nil,
		// An empty recipe clears the stack's (`--config job.recipe=` when switching to verl).
		"job.recipe":               r.Recipe != nil && *r.Recipe != "",
		"job.frameworkRelease":     r.FrameworkRelease != nil && *r.FrameworkRelease != "",
		"job.model":                r.Model != nil,
		"job.dataset":              r.Dataset != nil,
		"job.promptsPerStep":       r.PromptsPerStep != nil,
		"job.generationsPerPrompt": r.GenerationsPerPrompt != nil,
		"job.checkpointPeriod":     r.CheckpointPeriod != nil,
		"job.keepCheckpoints":      r.KeepCheckpoints != nil,
		"job.backoffLimit":         r.BackoffLimit != nil,
		"job.args":                 len(r.Args) > 0,
	}
}

// defaultBucket derives a globally unique-enough bucket name from the project and cluster.
func defaultBucket(project, cluster string) string {
	name := strings.Trim(project+"-"+cluster+"-rl", "-")
	if len(name) > 63 {
		name = naming.New(project).Name(naming.MaxResourceNameLength, cluster, "rl")
	}
	return name
}

// defaultCapacityWaitMinutes is the gate's wait for its GPU nodes on a provisioning model.
// defaultProvisioning is on-demand where Compute Engine offers the GPU's machine type on demand,
// and otherwise the first consumption option it offers (spot, for A4).
func defaultProvisioning(gpuType string) kinds.Provisioning {
	if spec, ok := LookupGPU(gpuType); ok && spec.Provisionings != nil && !slices.Contains(spec.Provisionings, kinds.OnDemand) {
		return spec.Provisionings[0]
	}
	return kinds.OnDemand
}

func defaultCapacityWaitMinutes(p kinds.Provisioning) int {
	if p.Preemptible() {
		return PreemptibleCapacityWaitMinutes
	}
	return StandingCapacityWaitMinutes
}

// defaultMinBusBandwidth is the gate's minimum for nodes GPU nodes of gpuType: the machine's
// (GPUSpec.GateMinBusBandwidthGBps) across nodes, OneNodeMinBusBandwidthGBps on one. An unknown
// type is refused by validation; its minimum is the one of a node's NICs.
func defaultMinBusBandwidth(gpuType string, nodes int) int {
	spec, ok := LookupGPU(gpuType)
	if nodes < 2 || !ok {
		return OneNodeMinBusBandwidthGBps
	}
	return spec.GateMinBusBandwidthGBps
}

func orNonEmpty(p *string, fallback string) string {
	if p != nil && *p != "" {
		return *p
	}
	return fallback
}

func or[T any](p *T, fallback T) T {
	if p != nil {
		return *p
	}
	return fallback
}
