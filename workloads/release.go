package workloads

import (
	"fmt"
	"slices"

	"gke-rl/internal/kinds"
)

// Release is one release of a framework that the program runs (`job.frameworkRelease`): what
// its image holds, where its code comes from, and what its configuration tables were generated
// from. Every node of a run runs the same release.
type Release struct {
	Framework kinds.Framework
	// Tag is the framework's git tag (NVIDIA-NeMo/RL, volcengine/verl).
	Tag string
	// Image is the container image of the head, the workers and the data preparation; empty
	// when the release names no image that stays the same (ImageRecipe says how it is built):
	// `ray.image` must then pin one by digest, and `ray.version` give its Ray.
	Image string
	// ImageRecipe is the file, in the framework's repository at Tag, that builds Image (or the
	// image `ray.image` must pin).
	ImageRecipe string
	// RayVersion is the Ray inside Image; KubeRay reads it to gate features.
	RayVersion string
	// CUDA is the CUDA toolkit Image is built on.
	CUDA string
	// DriverBranch is the oldest NVIDIA driver branch Image runs on where that is newer than
	// the CUDA 12 images need (CUDA 13's minor-version compatibility starts at R580); 0 where
	// GKE's DEFAULT driver runs it, as it runs the CUDA 12 images. A stack with a run of such a
	// release asks GKE for its LATEST driver (infra/defaults.go, defaultDriverVersion;
	// cluster/driver.go).
	DriverBranch int
	// Source is verl's code at Tag, which the data preparation checks out and the run ships.
	Source VerlSource
	// RolloutMode is verl's actor_rollout_ref.rollout.mode, set on every run of the release:
	// v0.7.0 removed the synchronous rollout that v0.6.0 runs by default. Empty for v0.6.0,
	// whose runs keep the command they had (a new word would replace every running RayJob of
	// it on the next `up`), and its config's default, sync.
	RolloutMode string
	// NeMo RL's launch: the GRPO example the run starts, the key that names its training
	// dataset, and, where the dataset's loader no longer brings a validation set, the one
	// data.validation names for it.
	Launcher       string
	DatasetKey     string
	ValidationSets map[string]string
	// ConversionOverridesRename is whether the release names its Megatron conversion after
	// policy.hf_config_overrides too (v0.7.0: "<model>__hfovr_<hash>",
	// nemo_rl/models/megatron/setup.py), a directory run.sh's cleanup of an interrupted
	// conversion (NeMoRLConvertedDir) does not know.
	ConversionOverridesRename bool
	// Removed are keys of the release before that this one removed or moved, each with what
	// to do instead ("now ..." for a move), for the refusal of a stack that still sets one.
	Removed map[string]string
}

// VerlSource is a verl release's code: its commit, and the git tree hashes of the directories
// whose code runs (`git rev-parse <tag>:verl`, `git rev-parse <tag>:examples/data_preprocess`;
// every file in them has mode 100644 at both tags, so treehash.sh computes the same hash from
// the files alone): the package the run ships to every node, which the submitter checks, and the
// dataset scripts, which the data preparation checks before it runs one. A content hash fixed
// here: nothing of the repository on the shared volume is trusted.
type VerlSource struct {
	Commit, PackageTree, PreprocessTree string
}

// releases are the releases the program runs, oldest first for each framework.
var releases = []Release{
	// NeMo RL v0.5.0 (January 2026) is the release the NeMo RL guide targets; its pyproject pins
	// ray[default]==2.49.2. Its DeepScaler and DAPOMath17K loaders bring their AIME 2024
	// validation sets (nemo_rl/data/datasets/response_datasets/deepscaler.py, dapo_math.py).
	{Framework: kinds.NeMoRL, Tag: "v0.5.0", Image: "nvcr.io/nvidia/nemo-rl:v0.5.0", ImageRecipe: "docker/Dockerfile", RayVersion: "2.49.2", CUDA: "12.9",
		Launcher: "examples/run_grpo_math.py", DatasetKey: "data.dataset_name"},
	// NeMo RL v0.7.0 (2026-07-29): one GRPO launcher for every environment (examples/run_grpo.py,
	// commit 4b4824887); the datasets under data.train, their shared settings under
	// data.default (967d2c856; nemo_rl/data/utils.py setup_response_data asserts "train"); the
	// DeepScaler and DAPOMath17K loaders no longer bring a validation set, and with validation
	// on the run stops without one (nemo_rl/algorithms/grpo.py, "Validation dataset is required
	// if validation is enabled"): data.validation names the AIME 2024 sets v0.5.0 brought
	// (response_datasets/__init__.py: AIME2024 is HuggingFaceH4/aime_2024, DAPOMathAIME2024
	// BytedTsinghua-SIA/AIME-2024; docs/guides/grpo.md validates on the two the same way), so
	// the data preparation downloads what it did for v0.5.0; OpenMathInstruct-2 splits its own
	// (split_validation_size). run_grpo.py applies the overrides to the recipe in struct mode
	// (nemo_rl/utils/config.py parse_hydra_overrides): data.validation, null in the recipes,
	// takes the set as one value, {dataset_name:<name>}.
	// The image is built on CUDA 13.2 (docker/Dockerfile: cuda-dl-base:26.03-cuda13.2); uv.lock
	// pins ray 2.55.1.
	{Framework: kinds.NeMoRL, Tag: "v0.7.0", Image: "nvcr.io/nvidia/nemo-rl:v0.7.0", ImageRecipe: "docker/Dockerfile", RayVersion: "2.55.1", CUDA: "13.2", DriverBranch: 580,
		Launcher: "examples/run_grpo.py", DatasetKey: "data.train.dataset_name",
		ValidationSets:            map[string]string{"DeepScaler": "AIME2024", "DAPOMath17K": "DAPOMathAIME2024"},
		ConversionOverridesRename: true,
		Removed: map[string]string{
			"policy.megatron_cfg.converter_type": "unused, removed in commit 50972b9c9; remove it from job.args",
			"data.dataset_name":                  "now data.train.dataset_name (commit 967d2c856), which job.dataset sets",
			"data.prompt_file":                   "now data.default.prompt_file (commit 967d2c856)",
			"data.system_prompt_file":            "now data.default.system_prompt_file (commit 967d2c856)",
			"data.processor":                     "now data.default.processor (commit 967d2c856)",
			"data.env_name":                      "now data.default.env_name (commit 967d2c856)",
		}},
	// The verl guide uses verlai/verl:vllm011.latest, a moving tag. vllm011.dev7 is the fixed
	// build of that line (vLLM 0.11.0, Megatron core 0.14) that verl's own docs name as a
	// runtime image. It ships verl's dependencies but not verl (its Dockerfile uninstalls it),
	// so the data preparation checks out verl at the release's commit onto the shared volume.
	// vLLM 0.11.0 requires ray>=2.48; the image resolves 2.49.x. Its line is built for CUDA 12.8
	// (docker/verl0.6-cu128-torch2.8.0-fa2.7.4).
	{Framework: kinds.Verl, Tag: "v0.6.0", Image: "verlai/verl:vllm011.dev7", RayVersion: "2.49.2", CUDA: "12.8",
		Source: VerlSource{Commit: "ddd86f527a4af75095e4677b02b5aa272913a088", PackageTree: "21dba16c55f23a0d01e69f444817769d91ce3465", PreprocessTree: "d4b2959ebe2b070646015de73a487a558325cd13"}},
	// verl v0.7.0 (2026-01-05) names no image that stays the same: its docs and CI use
	// verlai/verl:vllm012.latest (docker/README.md, .github/workflows/vllm.yml), rebuilt from
	// docker/Dockerfile.stable.vllm (nvidia/cuda:12.9.1-devel-ubuntu22.04, torch 2.9.0, vLLM
	// 0.12.0) and with Ray unpinned (setup.py: ray[default]>=2.41.0). A run of it takes the
	// image pinned by digest, and its Ray, from ray.image and ray.version.
	{Framework: kinds.Verl, Tag: "v0.7.0", ImageRecipe: "docker/Dockerfile.stable.vllm", CUDA: "12.9",
		Source:      VerlSource{Commit: "f9c855f7cf04d603c9546bc01776c74806a879c1", PackageTree: "3e62a0a25ec2bad96d88ba7dc973313a0a1ef308", PreprocessTree: "8c2b6bb7d6e7b055db6231d4029acfa03c78bcc0"},
		RolloutMode: "async"},
}

// defaultTags are each framework's default release: the newest that the program can pin and that
// GKE's GPU drivers run. NeMo RL v0.7.0's image is pinned by tag with its recipe and needs a
// CUDA 13 driver (R580 or newer), which GKE's LATEST driver is (cluster.LatestDriverBranch):
// a stack running it asks for LATEST. verl v0.7.0 has no image that stays the same to pin (its
// Release): a default cannot ask every stack for a digest, so verl's stays v0.6.0. Moving a
// default re-names every experiment that does not set the key (a new experiment from step 0):
// a version that moves one says so in CHANGELOG.md.
var defaultTags = map[kinds.Framework]string{kinds.NeMoRL: "v0.7.0", kinds.Verl: "v0.6.0"}

// ReleaseTags are the releases of a framework the program runs, oldest first.
func ReleaseTags(f kinds.Framework) []string {
	var tags []string
	for _, r := range releases {
		if r.Framework == f {
			tags = append(tags, r.Tag)
		}
	}
	return tags
}

// LookupRelease is a framework's release by tag; "" is the framework's default.
func LookupRelease(f kinds.Framework, tag string) (Release, bool) {
	if tag == "" {
		tag = defaultTags[f]
	}
	i := slices.IndexFunc(releases, func(r Release) bool { return r.Framework == f && r.Tag == tag })
	if i < 0 {
		return Release{}, false
	}
	return releases[i], true
}

// ReleaseOf is a framework's release by tag ("" the default); a tag it does not run is a
// programming error, which the configuration's check rules out first.
func ReleaseOf(f kinds.Framework, tag string) Release {
	r, ok := LookupRelease(f, tag)
	if !ok {
		panic(fmt.Sprintf("no release %s of %s", tag, f))
	}
	return r
}

// DefaultRelease is a framework's default release.
func DefaultRelease(f kinds.Framework) Release { return ReleaseOf(f, "") }

// FirstRelease is the release a framework ran before releases could be chosen: experiments of
// it keep the names they had (the identity hashes no release for it).
func (r Release) FirstRelease() bool { return ReleaseTags(r.Framework)[0] == r.Tag }

// Name is the framework and the tag, as messages name a release: "verl v0.7.0".
func (r Release) Name() string { return fmt.Sprintf("%s %s", r.Framework, r.Tag) }
