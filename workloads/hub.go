package workloads

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"gke-rl/internal/kinds"
)

// hubFetch (hub_fetch.py, run as `python3 -I -c SCRIPT TYPE REPOSITORY REVISION [LOCAL_DIR]`)
// downloads one Hub repository. It resolves REVISION (empty: the default branch) to its commit
// first, logs it, and downloads that commit: the log names exactly what was fetched, even if a
// branch moves meanwhile. Without LOCAL_DIR the files go to the hub cache under HF_HOME, and a
// dataset is also loaded once to build the Arrow cache that NeMo RL's offline run reads. The
// token, when set, is read from HF_TOKEN_PATH by huggingface_hub itself.
//
//go:embed hub_fetch.py
var hubFetch string

// Hub repository types, as huggingface_hub names them.
const (
	hubModel   = "model"
	hubDataset = "dataset"
)

// fetchCommand fetches a Hub repository at revision into localDir (empty: the hub cache). The
// download holds the Hugging Face token, so Python runs isolated (-I): no PYTHON* variable, no
// user site directory and not the working directory is on its import path, so nothing a writer
// of the volume or of the container's environment planted is imported in its place.
func fetchCommand(repoType, repo, revision, localDir string) []string {
	cmd := []string{"python3", "-I", "-c", hubFetch, repoType, repo, revision}
	if localDir != "" {
		cmd = append(cmd, localDir)
	}
	return cmd
}

// VerlDatasetSources are the Hub datasets that verl v0.6.0's preparation scripts read
// (examples/data_preprocess/gsm8k.py, math_dataset.py: `data_source`); the program downloads
// them itself, at the pinned revision, and hands the scripts the copy (--local_dataset_path).
var VerlDatasetSources = map[string]string{
	"gsm8k": "openai/gsm8k",
	"math":  "DigitalLearningGmbH/MATH-lighteval",
}

// HubDatasets are the Hub datasets a run of framework f on dataset loads, in order; none for a
// dataset the framework does not know.
func HubDatasets(f kinds.Framework, dataset string) []string {
	if f == kinds.Verl {
		if src, ok := VerlDatasetSources[dataset]; ok {
			return []string{src}
		}
		return nil
	}
	return NeMoRLDatasetSources[dataset]
}

var (
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
	// A tag or branch: git's ref name rules (git check-ref-format) narrowed to the characters
	// Hub repositories use: parts of letters, digits, '.', '_' and '-', joined by '/'.
	refPattern   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$`)
	shortPattern = regexp.MustCompile(`^[0-9a-f]{7,39}$`)
)

// CheckRevision returns why revision cannot name a Hub revision, or "" when it can: a full
// commit ID, or a tag or branch name.
func CheckRevision(revision string) string {
	switch {
	case commitPattern.MatchString(revision):
		return ""
	case shortPattern.MatchString(revision):
		return fmt.Sprintf("%q looks like an abbreviated commit ID; allowed: the full 40-character commit ID (the Hub's \"Files and versions\" history shows it), or a tag or branch name", revision)
	case !refPattern.MatchString(revision) || strings.Contains(revision, "..") || strings.HasSuffix(revision, ".lock") || strings.HasSuffix(revision, "."):
		return fmt.Sprintf("%q is not a revision; allowed: a full 40-character commit ID, or a tag or branch name (letters, digits, '.', '_' and '-', parts joined by '/')", revision)
	}
	return ""
}

// IsCommit reports whether revision is a full commit ID (content that cannot change).
func IsCommit(revision string) bool { return commitPattern.MatchString(revision) }

// atRevision names a prepared directory after the revision it holds, so that pinning another
// revision prepares it again instead of finding the old one complete.
func atRevision(dir, revision string) string {
	if revision == "" {
		return dir
	}
	return dir + "@" + strings.ReplaceAll(revision, "/", "--")
}
