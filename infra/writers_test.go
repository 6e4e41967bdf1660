package infra_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/offline"
	"gke-rl/storage"
	"gke-rl/test/plantest"
)

// A checkpoint is code to the framework that resumes from it (verl v0.6.0 loads its shards with
// torch.load(weights_only=False) on every rank: verl/utils/checkpoint/fsdp_checkpoint_manager.py),
// so only the pods that train may write one. For every shipped stack, with both tokens (each
// reader an account of its own), this lists every pod template that can write the run's
// checkpoint directory (a read-write mount of the shared claim that covers it) and every
// principal the bucket grants writing there (its objectUser without the condition that stops
// at the checkpoints), and finds the Ray head and workers alone, running as principals that
// only they use.
func TestOnlyTheTrainingPodsCanWriteTheCheckpoints(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack, "tokens.huggingFace=true", "tokens.wandb=true")
		checkpoints := strings.TrimPrefix(res.Blueprint.Run.Layout.Checkpoints(), res.Blueprint.Storage.Volume.MountPath+"/")
		pods := podTemplates(t, res)
		require.NotEmpty(t, pods)

		writers := map[string]string{} // pod → service account
		for name, pod := range pods {
			if canWrite(pod, checkpoints) {
				writers[name] = fmt.Sprint(pod["serviceAccountName"])
			}
		}
		names := slices.Sorted(maps.Keys(writers))
		t.Logf("%s: pods that can write %s: %v", stack, checkpoints, names)
		for _, name := range names {
			assert.True(t, strings.HasPrefix(name, "RayCluster head") || strings.HasPrefix(name, "RayCluster worker"),
				"%s: %s can write the checkpoints and does not train", stack, name)
		}
		assert.NotEmpty(t, names, "%s: the training pods write the checkpoints", stack)

		granted := bucketWriters(t, res)
		t.Logf("%s: principals that can write %s: %v", stack, checkpoints, granted)
		if res.Blueprint.Storage.Bucket == nil {
			assert.Empty(t, granted, "%s: no bucket, no principal", stack)
			continue
		}
		trainers := map[string]bool{}
		for _, account := range writers {
			trainers[account] = true
		}
		assert.Equal(t, slices.Sorted(maps.Keys(trainers)), granted, "%s: the bucket lets the training pods' principals alone write the checkpoints", stack)
		for name, pod := range pods {
			if _, trains := writers[name]; !trains {
				assert.NotContains(t, granted, pod["serviceAccountName"], "%s: %s runs as a principal that can write the checkpoints", stack, name)
			}
		}
	}
}

// The support principal's condition, evaluated with the Common Expression Language as IAM
// evaluates it on Cloud Storage's resource names: the checkpoints' objects, folders and managed
// folders are outside it, and so is the object named `checkpoints` itself, which GCS FUSE would
// present as a symbolic link in the directory's place; every other object and the bucket itself
// are inside.
func TestOutsideCheckpointsCondition(t *testing.T) {
	expr := storage.OutsideCheckpoints("acme-rl-smoke", "checkpoints/")
	env, err := cel.NewEnv(cel.Variable("resource", cel.MapType(cel.StringType, cel.DynType)))
	require.NoError(t, err)
	ast, iss := env.Compile(expr)
	require.NoError(t, iss.Err(), expr)
	prg, err := env.Program(ast)
	require.NoError(t, err)
	granted := func(name string) bool {
		out, _, err := prg.Eval(map[string]any{"resource": map[string]any{"name": "projects/_/buckets/acme-rl-smoke/" + name}})
		require.NoError(t, err)
		return out.Value().(bool)
	}
	for _, name := range []string{"objects/checkpoints", "objects/checkpoints/", "objects/checkpoints/a-9f3889/global_step_10/model.pt",
		"folders/checkpoints/", "folders/checkpoints/a-9f3889/", "managedFolders/checkpoints/"} {
		assert.False(t, granted(name), "%s is the checkpoints'", name)
	}
	for _, name := range []string{"objects/datasets/gsm8k/train.parquet", "objects/huggingface/hub/x", "folders/prepared/", "objects/logs/a/run.log"} {
		assert.True(t, granted(name), "%s is the support pods'", name)
	}
	out, _, err := prg.Eval(map[string]any{"resource": map[string]any{"name": "projects/_/buckets/acme-rl-smoke"}})
	require.NoError(t, err)
	assert.Equal(t, true, out.Value(), "the bucket itself: listing it mounts it")
}

// podTemplates are the pod specs of every workload the plan creates, by kind and place: Jobs'
// templates, and the RayCluster's (or the RayJob's own cluster's) head and worker groups and the
// RayJob's submitter.
func podTemplates(t *testing.T, res *offline.Result) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	spec := func(template any) map[string]any {
		m, _ := template.(map[string]any)
		s, _ := m["spec"].(map[string]any)
		return s
	}
	addCluster := func(kind string, cluster map[string]any) {
		if head, ok := cluster["headGroupSpec"].(map[string]any); ok {
			out[kind+" head"] = spec(head["template"])
		}
		groups, _ := cluster["workerGroupSpecs"].([]any)
		for _, g := range groups {
			g := g.(map[string]any)
			out[fmt.Sprintf("RayCluster worker %v", g["groupName"])] = spec(g["template"])
		}
	}
	for _, r := range res.Resources {
		switch {
		case strings.HasSuffix(r.Type, ":Job"):
			out["Job "+fmt.Sprint(plantest.Input(t, r, "metadata.name"))] = spec(plantest.Input(t, r, "spec.template"))
		case strings.HasSuffix(r.Type, ":RayCluster"):
			addCluster("RayCluster", plantest.Input(t, r, "spec").(map[string]any))
		case strings.HasSuffix(r.Type, ":RayJob"):
			s := plantest.Input(t, r, "spec").(map[string]any)
			if cluster, ok := s["rayClusterSpec"].(map[string]any); ok {
				addCluster("RayCluster", cluster)
			}
			if sub, ok := s["submitterPodTemplate"]; ok {
				out["RayJob submitter"] = spec(sub)
			}
		}
	}
	return out
}

// canWrite is whether a container of the pod mounts the shared claim read-write where the
// checkpoint directory (a path relative to the volume's root) is.
func canWrite(pod map[string]any, checkpoints string) bool {
	shared := map[string]bool{}
	volumes, _ := pod["volumes"].([]any)
	for _, v := range volumes {
		v := v.(map[string]any)
		if pvc, ok := v["persistentVolumeClaim"].(map[string]any); ok && pvc["claimName"] == storage.ClaimName {
			shared[fmt.Sprint(v["name"])] = true
		}
	}
	containers, _ := pod["containers"].([]any)
	inits, _ := pod["initContainers"].([]any)
	for _, c := range append(slices.Clone(containers), inits...) {
		mounts, _ := c.(map[string]any)["volumeMounts"].([]any)
		for _, m := range mounts {
			m := m.(map[string]any)
			if !shared[fmt.Sprint(m["name"])] || m["readOnly"] == true {
				continue
			}
			sub, _ := m["subPath"].(string)
			if sub == "" || checkpoints == sub || strings.HasPrefix(checkpoints, strings.TrimSuffix(sub, "/")+"/") {
				return true
			}
		}
	}
	return false
}

// bucketWriters are the Kubernetes service accounts whose principals the bucket grants a role
// that writes objects, without the condition that stops it at the checkpoints.
func bucketWriters(t *testing.T, res *offline.Result) []string {
	t.Helper()
	var out []string
	for _, b := range res.OfType("gcp:storage/bucketIAMMember:BucketIAMMember") {
		if plantest.Input(t, b, "role") != storage.BucketRole {
			continue
		}
		bucket := res.Blueprint.Storage.Bucket
		if cond, ok := b.Input("condition.expression"); ok && cond == storage.OutsideCheckpoints(bucket.Name, bucket.CheckpointsPrefix) {
			continue
		}
		member := plantest.Input(t, b, "member").(string)
		_, account, _ := strings.Cut(member, "/sa/")
		out = append(out, account)
	}
	slices.Sort(out)
	return out
}

// What the training processes run as code, for every shipped stack and both frameworks: the
// model they load with remote code allowed (NeMo RL's trust_remote_code=True), the checkpoints
// they unpickle (verl's torch.load(weights_only=False)), NeMo RL's Megatron conversion whose
// run_config.yaml every rank instantiates, the modules cache transformers imports from, and
// $HF_HOME/modules, which NeMo RL puts on every actor's PYTHONPATH when it exists. Each is read
// from the rendered objects (the RayJob's entrypoint and overrides, the Ray pods' environment),
// and each must be writable by the training pods alone: on the shared volume, by no other pod's
// mount and no principal but theirs (the bucket's grants evaluated with CEL on the object's
// name); off it, on the pod's own disk. verl's package is the one thing from elsewhere, shipped
// only as the submitter's checked copy (verified_copy; TestVerifiedCopyRefusesALinkSwapped...).
func TestTrainingPodsRunOnlyWhatTheyWrote(t *testing.T) {
	cases := []struct {
		stack     string
		framework string
		overrides []string
	}{
		{"b200-spot", "nemo-rl", nil},
		{"b200-spot", "verl", []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"}},
		{"smoke", "verl", nil}, // the stack's own framework
		{"h200-reserved", "verl", nil},
		{"h200-reserved", "nemo-rl", []string{"framework=nemo-rl", "job.dataset=DeepScaler"}},
	}
	for _, tc := range cases {
		res := plantest.Plan(t, tc.stack, append([]string{"tokens.huggingFace=true", "tokens.wandb=true"}, tc.overrides...)...)
		job := one(t, res, "RayJob")
		mount := res.Blueprint.Storage.Volume.MountPath
		env := map[string]string{}
		for _, k := range []string{"MODEL_DIR", "CHECKPOINT_DIR", "NRL_MEGATRON_CHECKPOINT_DIR"} {
			if w := entrypointValue(t, job, k); w != "" {
				env[k] = strings.TrimPrefix(w, k+"=")
			}
		}
		nemo := strings.Contains(get(t, job, "spec.entrypoint").(string), "FRAMEWORK=nemo-rl ")
		loaded := map[string]string{ // path → how it runs
			env["CHECKPOINT_DIR"]: "checkpoints, unpickled on resume",
		}
		require.NotEmpty(t, env["MODEL_DIR"], "%s: the entrypoint names the model it loads", tc.stack)
		entry := get(t, job, "spec.entrypoint").(string)
		if nemo {
			assert.Contains(t, entry, "policy.model_name="+env["MODEL_DIR"]+" ", "%s: NeMo RL loads the checked copy", tc.stack)
			loaded[env["MODEL_DIR"]] = "model, loaded with trust_remote_code=True"
			require.NotEmpty(t, env["NRL_MEGATRON_CHECKPOINT_DIR"], "%s: NeMo RL converts into a directory the run names", tc.stack)
			loaded[env["NRL_MEGATRON_CHECKPOINT_DIR"]] = "Megatron conversion, its run_config.yaml instantiated"
		} else {
			assert.Contains(t, entry, "actor_rollout_ref.model.path="+env["MODEL_DIR"]+" ", "%s: verl loads the checked copy", tc.stack)
			loaded[env["MODEL_DIR"]] = "model"
		}
		spec := clusterSpecOf(t, res)
		for _, container := range []string{"headGroupSpec.template.spec.containers.0", "workerGroupSpecs.0.template.spec.containers.0"} {
			podEnv := envOf(t, get(t, spec, container))
			modules, _ := podEnv["HF_MODULES_CACHE"].(string)
			home, _ := podEnv["HF_HOME"].(string)
			require.NotEmpty(t, modules, "%s %s: transformers' modules cache is named", tc.stack, container)
			require.NotEmpty(t, home)
			loaded[modules] = "remote code's copy, imported"
			loaded[home+"/modules"] = "on NeMo RL's actors' PYTHONPATH when it exists"
		}

		pods := podTemplates(t, res)
		trainers := map[string]bool{}
		for name, pod := range pods {
			if strings.HasPrefix(name, "RayCluster ") {
				trainers[fmt.Sprint(pod["serviceAccountName"])] = true
			}
		}
		for _, p := range slices.Sorted(maps.Keys(loaded)) {
			rel, onVolume := strings.CutPrefix(p, mount+"/")
			if !onVolume {
				assert.True(t, strings.HasPrefix(p, "/tmp/"), "%s: %s (%s) is on the pod's own disk", tc.stack, p, loaded[p])
				t.Logf("%s %s: %s (%s): the pod's own disk", tc.stack, tc.framework, p, loaded[p])
				continue
			}
			var podWriters []string
			for name, pod := range pods {
				if canWrite(pod, rel) {
					podWriters = append(podWriters, name)
				}
			}
			slices.Sort(podWriters)
			principals := bucketPrincipalsWriting(t, res, rel)
			t.Logf("%s %s: %s (%s): pods %v, principals %v", tc.stack, tc.framework, p, loaded[p], podWriters, principals)
			for _, name := range podWriters {
				assert.True(t, strings.HasPrefix(name, "RayCluster "), "%s: %s can write %s (%s) and does not train", tc.stack, name, p, loaded[p])
			}
			for _, account := range principals {
				assert.True(t, trainers[account], "%s: principal %s can write %s (%s) and does not train", tc.stack, account, p, loaded[p])
			}
		}
	}
}

// bucketPrincipalsWriting are the Kubernetes service accounts whose principals the bucket lets
// write the object rel/x: each grant of the objects' role, its condition (if any) evaluated with
// CEL on the object's resource name, as IAM evaluates it.
func bucketPrincipalsWriting(t *testing.T, res *offline.Result, rel string) []string {
	t.Helper()
	bucket := res.Blueprint.Storage.Bucket
	if bucket == nil {
		return nil
	}
	env, err := cel.NewEnv(cel.Variable("resource", cel.MapType(cel.StringType, cel.DynType)))
	require.NoError(t, err)
	var out []string
	for _, b := range res.OfType("gcp:storage/bucketIAMMember:BucketIAMMember") {
		if plantest.Input(t, b, "role") != storage.BucketRole {
			continue
		}
		if expr, ok := b.Input("condition.expression"); ok {
			ast, iss := env.Compile(expr.(string))
			require.NoError(t, iss.Err())
			prg, err := env.Program(ast)
			require.NoError(t, err)
			got, _, err := prg.Eval(map[string]any{"resource": map[string]any{"name": "projects/_/buckets/" + bucket.Name + "/objects/" + rel + "/x"}})
			require.NoError(t, err)
			if got.Value() != true {
				continue
			}
		}
		_, account, _ := strings.Cut(plantest.Input(t, b, "member").(string), "/sa/")
		out = append(out, account)
	}
	slices.Sort(out)
	return out
}
