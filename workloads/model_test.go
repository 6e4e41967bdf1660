package workloads_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/test/clitest"
	"gke-rl/workloads"
)

// runModelDoor runs a NeMo RL run's entrypoint (NeMo RL loads every model with
// trust_remote_code=True) on a volume at root whose model the data preparation downloaded and
// plant then changed, with the framework replaced by a command that records that it ran. It
// returns run.sh's output, its exit status and whether the framework ran.
func runModelDoor(t *testing.T, plant func(r workloads.Run), env ...string) (string, int, bool) {
	t.Helper()
	r := run()
	r.Nodes, r.GPUsPerNode = 1, 8
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	plant(r)
	ran := filepath.Join(t.TempDir(), "ran")
	res := clitest.Run(t, env, clitest.Tool(t, "bash"), "-c", onHead(t, workloads.Command(kinds.NeMoRL, r, r.Layout.Root, []string{"touch", ran})))
	_, err := os.Stat(ran)
	return res.Stdout + res.Stderr, res.Code, err == nil
}

func write(t *testing.T, name, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
	require.NoError(t, os.WriteFile(name, []byte(content), 0o644))
}

// The model the run loads is run.sh's copy in the checkpoints' tree, of the files a framework
// loads alone: Python files and pickles the repository holds beside its safetensors are not
// copied, and the copy is made once for every experiment of the model.
func TestTheRunLoadsACheckedCopyOfTheModel(t *testing.T) {
	var r workloads.Run
	out, code, ran := runModelDoor(t, func(run workloads.Run) {
		r = run
		write(t, filepath.Join(r.ModelDir(), "modeling_qwen2.py"), "import os; os.system('curl evil')\n")
		write(t, filepath.Join(r.ModelDir(), "training_args.bin"), "pickle")
		write(t, filepath.Join(r.ModelDir(), ".cache/huggingface/download/config.json.metadata"), "x")
	})
	require.Equal(t, 0, code, out)
	assert.True(t, ran)
	assert.Contains(t, out, "copied the model files of "+r.ModelDir()+" to "+r.TrainingModelDir())
	assert.FileExists(t, filepath.Join(r.TrainingModelDir(), "config.json"))
	assert.FileExists(t, filepath.Join(r.TrainingModelDir(), "model-00002-of-00002.safetensors"))
	for _, name := range []string{"modeling_qwen2.py", "training_args.bin", ".cache"} {
		assert.NoFileExists(t, filepath.Join(r.TrainingModelDir(), name))
	}
	assert.NoDirExists(t, filepath.Join(r.TrainingModelDir(), ".cache"))
	partials, _ := filepath.Glob(r.TrainingModelDir() + ".partial-*")
	assert.Empty(t, partials)
}

// Each door a writer of the volume could open to run code on the GPU nodes through the model,
// planted on the volume: the run refuses it before the framework starts.
func TestTheRunRefusesAModelThatBringsCode(t *testing.T) {
	outside := t.TempDir()
	cases := []struct {
		sentence string
		plant    func(r workloads.Run)
		want     string
	}{
		{"an auto_map in config.json, which makes transformers import the model's Python", func(r workloads.Run) {
			write(t, filepath.Join(r.ModelDir(), "config.json"), `{"model_type": "qwen2", "auto_map": {"AutoModelForCausalLM": "modeling_evil.Qwen2"}}`)
		}, "config.json has an auto_map (code the model brings): refused"},
		{"an auto_map written with escapes, in the tokenizer's configuration", func(r workloads.Run) {
			write(t, filepath.Join(r.ModelDir(), "tokenizer_config.json"), `{"\u0061uto_map": {"AutoTokenizer": ["tok.T", null]}}`)
		}, "tokenizer_config.json has an auto_map"},
		{"an auto_map nested in a sub-configuration", func(r workloads.Run) {
			write(t, filepath.Join(r.ModelDir(), "config.json"), `{"text_config": {"auto_map": {"AutoConfig": "c.C"}}}`)
		}, "config.json has an auto_map"},
		{"weights only as pickles", func(r workloads.Run) {
			for _, name := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
				require.NoError(t, os.Remove(filepath.Join(r.ModelDir(), name)))
			}
			write(t, filepath.Join(r.ModelDir(), "pytorch_model.bin"), "pickle")
		}, "has no safetensors weights: refused"},
		{"a symbolic link in the model", func(r workloads.Run) {
			write(t, filepath.Join(outside, "config.json"), `{}`)
			require.NoError(t, os.Remove(filepath.Join(r.ModelDir(), "config.json")))
			require.NoError(t, os.Symlink(filepath.Join(outside, "config.json"), filepath.Join(r.ModelDir(), "config.json")))
		}, "config.json is not a plain file: refused"},
		{"a download the data preparation has not finished", func(r workloads.Run) {
			require.NoError(t, os.Remove(workloads.CompleteMarker(r.ModelDir())))
		}, "is not complete (no "},
		{"a link at checkpoints, as a GCS FUSE symlink object made before the first run shows", func(r workloads.Run) {
			require.NoError(t, os.Symlink(outside, filepath.Join(r.Layout.Root, "checkpoints")))
		}, "/checkpoints/ray-a4-grpo is a symbolic link, or is reached through one: refused"},
		{"a link where the checked copy goes", func(r workloads.Run) {
			require.NoError(t, os.MkdirAll(filepath.Dir(r.TrainingModelDir()), 0o755))
			require.NoError(t, os.Symlink(r.ModelDir(), r.TrainingModelDir()))
		}, r0().TrainingModelDir()[len("/lustre"):] + " is a symbolic link, or is reached through one: refused"},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			out, code, ran := runModelDoor(t, tc.plant)
			assert.Equal(t, 26, code, out)
			assert.False(t, ran, "the framework did not start")
			assert.Contains(t, out, tc.want)
			entries, _ := os.ReadDir(outside)
			for _, e := range entries {
				assert.Equal(t, "config.json", e.Name(), "nothing written through a link")
			}
		})
	}
}

// A file swapped for a link while run.sh copies the model (here the moment cp copies
// config.json: a cp first on the PATH makes the swap, then runs the real one) is copied as the
// link, and the check of the copy refuses it.
func TestTheRunRefusesALinkSwappedIntoTheModelDuringTheCopy(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "config.json")
	write(t, outside, `{"auto_map": {"AutoConfig": "c.C"}}`)
	bin := t.TempDir()
	cp := clitest.Tool(t, "cp")
	out, code, ran := runModelDoor(t, func(r workloads.Run) {
		src := filepath.Join(r.ModelDir(), "config.json")
		write(t, filepath.Join(bin, "cp"), "#!/bin/bash\nif [[ ${@: -2:1} == "+src+" ]]; then rm "+src+" && ln -s "+outside+" "+src+"; fi\nexec "+cp+` "$@"`+"\n")
		require.NoError(t, os.Chmod(filepath.Join(bin, "cp"), 0o755))
	}, "PATH="+bin+":"+os.Getenv("PATH"))
	assert.Equal(t, 26, code, out)
	assert.False(t, ran)
	assert.Contains(t, out, "/config.json is not a plain file: refused")
}

// r0 is run() as the tests' cases name it before their volume exists.
func r0() workloads.Run { r := run(); r.Layout.Root = "/lustre"; return r }
