package infra

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/internal/words"
	"gke-rl/workloads"
)

// CheckpointBytesPerParameter is what one full training checkpoint holds per model parameter
// under mixed-precision Adam: 2 bytes of bf16 weights, 2 of bf16 gradients and 12 of optimizer
// state (fp32 master weights, momentum and variance). This is the 16-byte accounting of
// Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models"
// (SC 2020), section 3.1. Frameworks that drop the gradients write 14 bytes; 16 is the bound
// we plan for.
const CheckpointBytesPerParameter = 16

// GCSFuseWriteMBpsPerNode is the write throughput assumed for one node writing a checkpoint
// through GCS FUSE with streaming writes: a few hundred MB/s per node in GCS FUSE's own
// performance figures (https://cloud.google.com/storage/docs/cloud-storage-fuse/performance), taken at
// 500 MB/s. Nodes write their shards in parallel.
const GCSFuseWriteMBpsPerNode = 500

// DefaultCheckpointBudgetSeconds is how long one checkpoint may take before the plan warns:
// training stalls while it is written.
const DefaultCheckpointBudgetSeconds = 300

// modelSizePattern finds a parameter count such as 72B, 1.5B or 500M in a model ID
// (`Qwen/Qwen2.5-72B-Instruct`, `google/gemma-3-27b-it`).
var modelSizePattern = regexp.MustCompile(`(?i)(?:^|[-_/])(\d+(?:\.\d+)?)([bm])(?:$|[-_])`)

// sizePattern is a `job.modelSize` value.
var sizePattern = regexp.MustCompile(`(?i)^(\d+(?:\.\d+)?)([bm])$`)

// ParseModelSize reads a parameter count written like 72B, 1.5B or 500M.
func ParseModelSize(s string) (float64, bool) {
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	return sizeValue(m[1], m[2])
}

func sizeValue(number, unit string) (float64, bool) {
	n, err := strconv.ParseFloat(number, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	if strings.EqualFold(unit, "b") {
		return n * 1e9, true
	}
	return n * 1e6, true
}

// modelParameters is the model's parameter count: `job.modelSize` when set, otherwise read from
// the model ID. It reports false when neither tells.
func modelParameters(c *Config) (float64, bool) { return jobParameters(c.Job) }

// jobParameters is modelParameters of one job.
func jobParameters(j JobConfig) (float64, bool) {
	if j.ModelSize != "" {
		return ParseModelSize(j.ModelSize)
	}
	return nameParameters(j.Model)
}

// nameParameters is the parameter count a model ID says (Qwen/Qwen2.5-72B-Instruct: 72e9).
func nameParameters(model string) (float64, bool) {
	m := modelSizePattern.FindStringSubmatch(model)
	if m == nil {
		return 0, false
	}
	return sizeValue(m[1], m[2])
}

// storageWriteMBps is the shared storage's aggregate write throughput in MB/s: capacity in TiB
// times the tier for Lustre, GCSFuseWriteMBpsPerNode per GPU node for GCS FUSE.
func storageWriteMBps(c *Config) float64 {
	if c.Storage.Type == kinds.GCSFuse {
		return float64(GCSFuseWriteMBpsPerNode * c.GPU.Nodes)
	}
	tier, _ := LookupLustreTier(c.Storage.Throughput)
	return tier.AggregateMBps(c.Storage.CapacityGiB)
}

// CheckpointEstimate is the time to write one full checkpoint of the configured model.
type CheckpointEstimate struct {
	Parameters float64
	// GB is the checkpoint's size in 10^9 bytes.
	GB float64
	// WriteMBps is the storage's aggregate write throughput.
	WriteMBps float64
	Seconds   float64
	// Basis says how the throughput was derived, for the stack output and the warning.
	Basis string
}

// estimateCheckpoint sizes one checkpoint; it is nil when the model's size is unknown.
func estimateCheckpoint(c *Config) *CheckpointEstimate {
	params, ok := modelParameters(c)
	if !ok {
		return nil
	}
	e := &CheckpointEstimate{Parameters: params, WriteMBps: storageWriteMBps(c)}
	e.GB = params * CheckpointBytesPerParameter / 1e9
	e.Seconds = e.GB * 1000 / e.WriteMBps
	if c.Storage.Type == kinds.GCSFuse {
		e.Basis = fmt.Sprintf("GCS FUSE: writes go at FUSE speed, about %d MB/s per node × %s", GCSFuseWriteMBpsPerNode, words.Count(c.GPU.Nodes, "node"))
	} else {
		e.Basis = fmt.Sprintf("Managed Lustre: %.1f TiB × %d MB/s per TiB", float64(c.Storage.CapacityGiB)/1024, c.Storage.Throughput)
	}
	return e
}

// Summary is the estimate in one line, for the `checkpointEstimate` stack output.
func (e CheckpointEstimate) Summary() string {
	return fmt.Sprintf("one checkpoint ≈ %.0f GB (%s parameters × %d bytes) at %.0f MB/s (%s) ≈ %.0f s",
		e.GB, formatParams(e.Parameters), CheckpointBytesPerParameter, e.WriteMBps, e.Basis, math.Ceil(e.Seconds))
}

func formatParams(p float64) string {
	if p >= 1e9 {
		return strconv.FormatFloat(p/1e9, 'f', -1, 64) + "B"
	}
	return strconv.FormatFloat(p/1e6, 'f', -1, 64) + "M"
}

// WeightBytesPerParameter is a model's weights on the shared volume: bf16, as the Hub ships the
// models of the program's table and as NeMo RL's Megatron conversion writes them.
const WeightBytesPerParameter = 2

// modelCopiesGB is what one model takes on the shared volume beside the checkpoints: the data
// preparation's download (models/) and the run's checked copy of it (checkpoints/.gke-rl/
// models/, which run.sh promotes once a model and revision, for every experiment of them).
// 0 when the model's size is unknown.
func modelCopiesGB(j JobConfig) float64 {
	params, _ := jobParameters(j)
	return 2 * params * WeightBytesPerParameter / 1e9
}

// conversionGB is NeMo RL's conversion of the model to Megatron's format, in the experiment's
// checkpoint directory (workloads.NeMoRLConversionDir), when its effective configuration trains
// with Megatron; 0 otherwise.
func conversionGB(f kinds.Framework, j JobConfig) float64 {
	params, ok := jobParameters(j)
	release, known := workloads.LookupRelease(f, j.FrameworkRelease)
	if !ok || !known || !workloads.ConvertsToMegatron(release, j.Recipe, j.Args) {
		return 0
	}
	return params * WeightBytesPerParameter / 1e9
}

// modelKey names a model's copies on the volume: the directory the data preparation downloads
// it to (one per repository and revision), which names its checked copy too.
func modelKey(j JobConfig) string {
	return workloads.Run{Model: j.Model, Revisions: j.Revisions}.ModelDir()
}
