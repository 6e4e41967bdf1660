package plan_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
)

func TestShippedStacksPlanCleanly(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			res := plantest.Plan(t, stack)
			assert.NotEmpty(t, res.OfType("gcp:compute/network:Network"))
		})
	}
}

func TestGoldenPlans(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, plan.WriteJSON(&out, plantest.Plan(t, stack)))
			plantest.Golden(t, stack+".plan.json", out.Bytes())
		})
	}
}

func TestGoldenManifests(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			out, err := offline.ManifestsYAML(plantest.Plan(t, stack))
			require.NoError(t, err)
			plantest.Golden(t, stack+".manifests.yaml", out)
		})
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	var first, second bytes.Buffer
	require.NoError(t, plan.WriteJSON(&first, plantest.Plan(t, "b200-spot")))
	require.NoError(t, plan.WriteJSON(&second, plantest.Plan(t, "b200-spot")))
	assert.Equal(t, first.String(), second.String())
}

// -s names the stack as pulumi's own flag does; a stack without a file is refused naming the
// stacks there are.
func TestCLIStackFlag(t *testing.T) {
	code, out, errOut := plantest.Main(t, "-s", "smoke")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "resources to create")
	// The stacks named are the directory's stack files, a user's own copies among them.
	dir := t.TempDir()
	for _, file := range []string{"Pulumi.yaml", "Pulumi.smoke.yaml"} {
		data, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), file))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), data, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, strings.Replace(file, "smoke", "my-smoke", 1)), data, 0o644))
	}
	var stdout, stderr bytes.Buffer
	code = plan.Main([]string{"--stack", "prod"}, plantest.Env(dir, &stdout, &stderr))
	assert.Equal(t, cmd.ExitUsage, code)
	assert.Equal(t, "error: stack prod: no file "+filepath.Join(dir, "Pulumi.prod.yaml")+"; the stacks here: my-smoke, smoke\n", stderr.String())
}

// --help answers on stdout with status 0; each flag shows its own name, not a word of its text.
func TestCLIHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		code, out, errOut := plantest.Main(t, arg)
		assert.Equal(t, cmd.ExitOK, code, arg)
		assert.Empty(t, errOut, arg)
		assert.Contains(t, out, "usage: go run . plan --stack NAME")
		assert.Contains(t, out, "  -destroy\n    \tprint what pulumi destroy would do")
		// A flag with a value names it as the usage line does.
		for _, flag := range []string{"-stack NAME", "-config PATH=VALUE", "-manifests DIR", "-prices FILE", "-compare FILE"} {
			assert.Contains(t, out, "\n  "+flag+"\n", arg)
		}
	}
	code, _, errOut := plantest.Main(t)
	assert.Equal(t, cmd.ExitUsage, code, "no stack is a usage error")
	assert.Contains(t, errOut, "usage:")
}

// The tree ends with the resource count, then a summary of what printed before it and has
// scrolled away: the placeholders and warnings, counted, the first of each in full, and the cost.
func TestCLITreeEndsWithCountAndSummary(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--config", "storage.checkpointBudgetSeconds=60")
	require.Equal(t, cmd.ExitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.GreaterOrEqual(t, len(lines), 5)
	assert.Regexp(t, `^\d+ resources to create`, lines[len(lines)-5])
	assert.Equal(t, "Summary:", lines[len(lines)-4])
	assert.Equal(t, "  2 placeholders (`pulumi preview` and `pulumi up` refuse a stack with one); the first: gcp:project: \"your-project-id\" is the shipped placeholder; set your project: pulumi config set gcp:project <project-id> (`gcloud projects list` lists yours)", lines[len(lines)-3])
	assert.True(t, strings.HasPrefix(lines[len(lines)-2], "  1 warning: storage.checkpointBudgetSeconds: "), lines[len(lines)-2])
	assert.Contains(t, errOut, "warning: "+strings.TrimPrefix(lines[len(lines)-2], "  1 warning: ")+"\n", "the warning printed before the tree, in full")
	assert.Regexp(t, `^  per hour while training: \$[\d,]+\.\d\d; per month while idle: \$[\d,]+\.\d\d; at most a run: \$[\d,]+\.\d\d, for its longest, `, lines[len(lines)-1])
	assert.Contains(t, out, "gcp:compute/network:Network networks-rdma")

	// Every shipped stack, its placeholders set, plans with no warning.
	for _, stack := range plantest.Stacks {
		args := []string{"--stack", stack, "--config", "gcp:project=acme-rl", "--config", "cluster.authorizedNetworks[0]=198.18.0.7/32"}
		if stack == "h200-reserved" {
			args = append(args, "--config", "gpu.reservation=acme-h200")
		}
		_, out, _ = plantest.Main(t, args...)
		assert.Contains(t, out, "Summary:\n  no placeholder\n  no warning\n", stack)
	}
}

// The tree nests each component's resources under it: "├─" before all but the last of a level,
// "└─" before the last, and "│  " down the side of a component that has more after it.
func TestCLITreeNestsResourcesUnderTheirComponents(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "smoke")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n├─ gke-rl:cluster:Cluster cluster\n│  ├─ command:local:Command cluster-crds\n")
	assert.Contains(t, out, "\n│  └─ pulumi:providers:kubernetes cluster-gke\n├─ gke-rl:infra:Monitoring monitoring\n│  ├─ ")
	assert.Contains(t, out, "\n│  └─ gcp:monitoring/dashboard:Dashboard monitoring-dashboard\n")
	// The timeouts the program sets, by operation: all three, or the two a Job has.
	assert.Contains(t, out, "\n│  ├─ gcp:container/cluster:Cluster cluster-gke  name=gke-rl-smoke location=us-east1 [timeouts create 60m, update 90m, delete 60m]\n")
	assert.Regexp(t, `─ kubernetes:batch/v1:Job [^\n]* \[timeouts create 2h, update 2h\]\n`, out)
	_, tree, _ := strings.Cut(out, "(offline; placeholders stand for values the cloud computes)\n")
	tree, _, _ = strings.Cut(tree, "\nOutputs (")
	lines := strings.Split(tree, "\n")
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], "└─ "), "the last root closes the tree: %q", lines[len(lines)-1])
	for _, l := range lines[:len(lines)-1] {
		assert.False(t, strings.HasPrefix(l, "└─ "), "only the last root is closed: %q", l)
	}

	// The count: each line of the tree is a resource, a component when its type is the
	// program's own (gke-rl:...).
	components := 0
	for _, l := range lines {
		if strings.Contains(l, "─ gke-rl:") {
			components++
		}
	}
	assert.Contains(t, out, fmt.Sprintf("\n%d resources to create (%d cloud and Kubernetes resources, %d components)\n", len(lines), len(lines)-components, components))
}

// A stopped run (job.enabled=false) trains with nothing: --json carries no settings of it, so a
// later --compare does not read every setting as removed.
func TestAStoppedRunHasNoSettings(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--json", "--config", "job.enabled=false")
	require.Equal(t, cmd.ExitOK, code, errOut)
	var doc struct {
		Settings map[string]map[string]any `json:"settings"`
		Outputs  map[string]any            `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.NotEmpty(t, doc.Outputs["experiment"], "the experiment is still named")
	assert.Empty(t, doc.Settings)
}

// --json carries the placeholders and warnings the text plan prints before its tree.
func TestJSONCarriesPlaceholdersAndWarnings(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--json", "--config", "storage.checkpointBudgetSeconds=60")
	require.Equal(t, cmd.ExitOK, code, errOut)
	var doc struct {
		Placeholders []struct{ Key, Message string } `json:"placeholders"`
		Warnings     []struct{ Key, Message string } `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Placeholders, 2)
	assert.Equal(t, "gcp:project", doc.Placeholders[0].Key)
	assert.Contains(t, errOut, "placeholder: gcp:project: "+doc.Placeholders[0].Message+"\n")
	require.Len(t, doc.Warnings, 1)
	assert.Equal(t, "storage.checkpointBudgetSeconds", doc.Warnings[0].Key)
}

// The tree shows the stack outputs, as `pulumi up` would set them: the commands a user runs
// next and the checkpoint estimate, before the closing count.
func TestCLITreeShowsTheOutputs(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved")
	require.Equal(t, cmd.ExitOK, code, errOut)
	_, outputs, found := strings.Cut(out, "Outputs (`pulumi stack output <name>` after `pulumi up`):\n")
	require.True(t, found)
	assert.Contains(t, outputs, "\n  kubeconfigCommand      gcloud container clusters get-credentials verl-h200 --location us-south1 --project your-project-id --dns-endpoint\n")
	assert.Regexp(t, `\n  checkpointEstimate +one checkpoint ≈ 512 GB`, outputs)
	assert.Contains(t, outputs, "\n  podNetworks            gvnic-1; rdma-0; rdma-1;")
	assert.Regexp(t, `\n\d+ resources to create`, outputs, "the count still closes the plan")
}

func TestCLIPrintsWarningsOnStderrAndStillPlans(t *testing.T) {
	yours := []string{"--config", "gcp:project=acme-rl", "--config", "cluster.authorizedNetworks[0]=35.235.240.0/20"}
	code, out, errOut := plantest.Main(t, append([]string{"--stack", "b200-spot", "--config", "storage.checkpointBudgetSeconds=60"}, yours...)...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `resources to create`, out)
	assert.Contains(t, errOut, "warning: storage.checkpointBudgetSeconds: ")
	assert.Contains(t, errOut, "over the 60 s budget")

	// Within the default budget and with no placeholder left, the shipped stack plans with no
	// warning at all.
	_, _, quiet := plantest.Main(t, append([]string{"--stack", "b200-spot"}, yours...)...)
	assert.Empty(t, strings.TrimSpace(quiet))
}

func TestCLIInvalidConfigPrintsOnlyErrors(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--config", "gpu.type=a100", "--config", "gpu.nodes=0")
	assert.Equal(t, cmd.ExitInvalidConfig, code)
	assert.Empty(t, out, "no resource output on invalid config")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	require.Len(t, lines, 2, errOut)
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l, "error: "), l)
	}
	assert.Contains(t, errOut, "error: gpu.type: \"a100\" is not a supported GPU; allowed: b200, h200")
	assert.Contains(t, errOut, "error: gpu.nodes:")
}

func TestCLIUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no stack":        {},
		"unknown stack":   {"--stack", "nope"},
		"stray argument":  {"--stack", "b200-spot", "extra"},
		"malformed value": {"--stack", "b200-spot", "--config", "gpu.nodes"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, _ := plantest.Main(t, args...)
			assert.Equal(t, cmd.ExitUsage, code)
			assert.Empty(t, out)
		})
	}
}

func TestCLIJSONShape(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved", "--json")
	require.Equal(t, cmd.ExitOK, code, errOut)
	var doc struct {
		Stack     string                       `json:"stack"`
		Resources []map[string]json.RawMessage `json:"resources"`
		Outputs   map[string]any               `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "h200-reserved", doc.Stack)
	require.NotEmpty(t, doc.Resources)
	for _, r := range doc.Resources {
		for _, key := range []string{"urn", "type", "name", "parent", "dependencies", "inputs", "options"} {
			assert.Contains(t, r, key)
		}
		var opts map[string]any
		require.NoError(t, json.Unmarshal(r["options"], &opts))
		for _, key := range []string{"protect", "retainOnDelete", "ignoreChanges", "deletedWith", "provider"} {
			assert.Contains(t, opts, key)
		}
	}
	assert.Equal(t, "us-south1-b", doc.Outputs["zone"])
}

func TestLookupWalksMapsAndLists(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "a:1"}}}}
	v, ok := offline.Lookup(obj, "spec.containers.0.image")
	assert.True(t, ok)
	assert.Equal(t, "a:1", v)
	for _, missing := range []string{"spec.containers.1.image", "spec.containers.x", "spec.volumes", "spec.containers.0.image.tag"} {
		_, ok := offline.Lookup(obj, missing)
		assert.False(t, ok, missing)
	}
}

func TestDependenciesIncludeInputSources(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	net := res.Find("gcp:compute/network:Network", "networks-rdma")
	sub := res.Find("gcp:compute/subnetwork:Subnetwork", "networks-rdma-3")
	require.NotNil(t, sub)
	assert.Contains(t, sub.Dependencies, net.URN, "a subnet waits for its network")
}

// The tokens never pass through the program: a value given under a retired key is refused
// without being printed, and with the tokens on, no manifest holds a Secret, on either stack
// (NeMo RL with its own cluster, verl with a RayCluster and the data preparation Job).
func TestTokensNeverPassThroughThePlan(t *testing.T) {
	const sentinel = "hf_SENTINEL_do_not_print_4242"
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			code, out, errOut := plantest.Main(t, "--stack", stack, "--config", "hfToken="+sentinel, "--config", "wandbApiKey="+sentinel)
			assert.Equal(t, cmd.ExitInvalidConfig, code)
			assert.NotContains(t, out+errOut, sentinel)
			assert.Contains(t, errOut, "error: hfToken: tokens no longer pass through Pulumi")
			assert.Contains(t, errOut, "revoke this token and issue a new one", "the old one stays in git history and state versions")
			assert.Contains(t, errOut, "rotate the passphrase")

			dir := t.TempDir()
			code, _, errOut = plantest.Main(t, "--stack", stack, "--config", "tokens.huggingFace=true", "--config", "tokens.wandb=true", "--manifests", dir)
			require.Equal(t, cmd.ExitOK, code, errOut)
			files, err := os.ReadDir(dir)
			require.NoError(t, err)
			var classes int
			for _, f := range files {
				assert.False(t, strings.HasPrefix(f.Name(), "secret-"), "%s: no Secret holds a token", f.Name())
				if strings.HasPrefix(f.Name(), "secretproviderclass-") {
					classes++
				}
			}
			assert.Equal(t, 2, classes, "one SecretProviderClass a token names its secret")
		})
	}
}

func TestConfigErrorListsProblems(t *testing.T) {
	_, err := plantest.TryPlan("b200-spot", "gpu.type=a100")
	var cfgErr *offline.ConfigError
	require.True(t, errors.As(err, &cfgErr))
	assert.True(t, cfgErr.Problems.Has("gpu.type"))
}

func TestCLIOutputFailureIsNotAConfigError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-directory")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, _, errOut := plantest.Main(t, "--stack", "b200-spot", "--manifests", filepath.Join(file, "out"))
	assert.Equal(t, cmd.ExitOutput, code)
	assert.Contains(t, errOut, "not a problem with your configuration")
}

// The JSON plan refers to each Kubernetes object's manifest instead of repeating it, so that a
// pod change shows once in review, in the manifests.
func TestJSONPlanRefersToManifests(t *testing.T) {
	res := plantest.Plan(t, "h200-reserved")
	var out bytes.Buffer
	require.NoError(t, plan.WriteJSON(&out, res))
	var doc struct {
		Resources []struct {
			Type   string         `json:"type"`
			Inputs map[string]any `json:"inputs"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	files := map[string]bool{}
	for _, m := range offline.Manifests(res) {
		files[m.File] = true
	}
	var refs int
	for _, r := range doc.Resources {
		if !strings.HasPrefix(r.Type, "kubernetes:") || strings.HasPrefix(r.Type, "pulumi:") {
			continue
		}
		ref, ok := r.Inputs["manifest"].(map[string]any)
		require.True(t, ok, "%s inputs are a manifest reference", r.Type)
		assert.Len(t, r.Inputs, 1)
		assert.True(t, files[ref["file"].(string)], "%v names a manifest", ref)
		refs++
	}
	assert.Equal(t, len(files), refs, "one reference per manifest")
}

// The plan of a shipped stack works on a fresh clone and names each placeholder with the
// command that sets it; a stack of the user's own values names none.
func TestPlanFlagsThePlaceholders(t *testing.T) {
	code, _, errOut := plantest.Main(t, "--stack", "h200-reserved")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, errOut, "placeholder: gcp:project: \"your-project-id\" is the shipped placeholder; set your project: pulumi config set gcp:project <project-id>")
	assert.Contains(t, errOut, "placeholder: cluster.authorizedNetworks[0]: 203.0.113.7/32 is the shipped placeholder")
	assert.Contains(t, errOut, "placeholder: gpu.reservation: \"your-h200-reservation\" is the shipped placeholder")
	assert.Contains(t, errOut, "`pulumi preview` and `pulumi up` refuse a stack with placeholders")

	code, _, errOut = plantest.Main(t, "--stack", "b200-spot", "--config", "gcp:project=acme-rl", "--config", "cluster.authorizedNetworks[0]=35.235.240.0/20")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.NotContains(t, errOut, "placeholder:")
}

// The queue's table lines up with a name as long as an experiment's may be and a priority of
// seven digits, and a map output (`experiments`) reads as name=value parts, not Go's map syntax.
func TestCLIQueueTableHoldsLongNamesAndMapOutputsReadAsText(t *testing.T) {
	long := strings.Repeat("x", infra.MaxQueuedNameLength)
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs."+long+".maxSteps=4", "--config", "jobs.b.priority=1000000")
	require.Equal(t, cmd.ExitOK, code, errOut)
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  runs ") {
			rows = append(rows, line)
		}
	}
	require.Len(t, rows, 2)
	assert.Equal(t, strings.Index(rows[0], "priority"), strings.Index(rows[1], "priority"), "\n%s", strings.Join(rows, "\n"))
	assert.Equal(t, strings.Index(rows[0], "GPUs"), strings.Index(rows[1], "GPUs"), "\n%s", strings.Join(rows, "\n"))
	assert.NotContains(t, out, "map[")
	assert.Regexp(t, `(?m)^  experiments +b=\{checkpointDir=/data/checkpoints/b-[0-9a-f]{6}; gpus=8; `, out)
}

// Each experiment that trains has the command that follows its training log, as the single run
// has rayJobLogs; a stopped one has none.
func TestEachExperimentHasItsLogCommand(t *testing.T) {
	res := plantest.Plan(t, "smoke", "jobs.a.maxSteps=4", "jobs.b.enabled=false")
	experiments := res.Outputs["experiments"].(map[string]any)
	a := experiments["a"].(map[string]any)
	assert.Equal(t, "kubectl -n gke-rl-smoke logs -f job/"+a["rayJob"].(string), a["logs"])
	assert.NotContains(t, experiments["b"].(map[string]any), "logs", "a stopped experiment trains nothing")
	single := plantest.Plan(t, "smoke")
	assert.Equal(t, "kubectl -n gke-rl-smoke logs -f job/"+single.Outputs["rayJob"].(string), single.Outputs["rayJobLogs"])
}

// The plan shows what each experiment trains with and the key that set each value: the entry's
// own, job's, which it inherits, or a key's default; so a researcher tells the experiments apart
// without reading their RayJobs.
func TestCLIShowsEachExperimentsSettingsAndTheirKeys(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs.a.maxSteps=4",
		"--config", "jobs.b.learningRate=5e-6", "--config", "jobs.c.enabled=false")
	require.Equal(t, cmd.ExitOK, code, errOut)
	_, section, ok := strings.Cut(out, "Settings of the experiments (the framework's key = value, from the config key that sets it):\n")
	require.True(t, ok, out)
	section, _, _ = strings.Cut(section, "Costs in USD")
	a, b, _ := strings.Cut(section, "\n  b (")
	assert.Regexp(t, `^  a \(a-[0-9a-f]{6}, verl v0.6.0\):\n`, a)
	assert.Regexp(t, `(?m)^    trainer\.total_training_steps = 4 +jobs\.a\.maxSteps$`, a)
	assert.Regexp(t, `(?m)^    data\.train_batch_size = 64 +job\.promptsPerStep$`, a, "inherited from job")
	assert.Regexp(t, `(?m)^    actor_rollout_ref\.actor\.kl_loss_coef = 0\.001 +default of job\.klCoef$`, a)
	assert.NotContains(t, a, "optim.lr", "a sets no learning rate: verl's own")
	assert.Regexp(t, `(?m)^    actor_rollout_ref\.actor\.optim\.lr = 5e-06 +jobs\.b\.learningRate$`, b)
	assert.Contains(t, b, "  c: stopped (jobs.c.enabled=false)\n")
}

// `--config gpu.nodes 2`, the habit of `pulumi config set`, is shown the one word it means.
func TestCLIConfigInTwoWords(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--config", "gpu.nodes", "2")
	assert.Equal(t, cmd.ExitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "error: --config takes PATH=VALUE, one word: did you mean --config gpu.nodes=2?\n")
}

// The queue docs/operations.md shows (Several experiments: a queue) is what the plan prints for
// the command it gives: a price or a line that changes shows there too.
func TestOperationsShowsTheQueueThePlanPrints(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs.baseline.maxSteps=4",
		"--config", "jobs.kl-low.klCoef=0.0005", "--config", "jobs.kl-high.klCoef=0.01", "--config", "jobs.kl-high.priority=10")
	require.Equal(t, cmd.ExitOK, code, errOut)
	_, queue, ok := strings.Cut(out, "\nQueue (")
	require.True(t, ok, "the plan shows the queue")
	queue, _, _ = strings.Cut(queue, "\nSettings of the experiments")
	doc, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "operations.md"))
	require.NoError(t, err)
	_, shown, ok := strings.Cut(string(doc), "```\nQueue (")
	require.True(t, ok, "the guide shows the queue")
	shown, _, _ = strings.Cut(shown, "\n```\n")
	assert.Equal(t, queue, shown)
}

// The single run's plan shows what it trains with, and which key set each value, as the queue's
// table does for each experiment: a learning rate set by the stack is its own, one it leaves
// unset is a default.
func TestThePlanShowsTheRunsSettings(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--config", "job.learningRate=5e-6")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "Settings of the run (the framework's key = value, from the config key that sets it):\n  experiment (qwen2-5-0-5b-instruct-gsm8k-9f3889, verl v0.6.0):\n")
	assert.Regexp(t, `\n    actor_rollout_ref\.actor\.optim\.lr = 5e-06 +job\.learningRate\n`, out)
	assert.Regexp(t, `\n    data\.max_prompt_length = 512 +default of job\.maxPromptLength\n`, out)

	// One column for the keys that set the values, two spaces after the longest "key = value"
	// (the model's path).
	_, table, _ := strings.Cut(out, "verl v0.6.0):\n")
	table, _, _ = strings.Cut(table, "\n\n")
	longest, column := 0, -1
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "    ") {
			break
		}
		setting, _, found := strings.Cut(strings.TrimPrefix(line, "    "), "  ")
		require.True(t, found, line)
		longest = max(longest, len(setting))
		from := len(line) - len(strings.TrimLeft(line[4+len(setting):], " "))
		if column < 0 {
			column = from
		}
		assert.Equal(t, column, from, "the keys that set the values align: %q", line)
	}
	assert.Equal(t, 4+longest+2, column, "two spaces after the longest setting")
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs.a.maxSteps=4")
	assert.NotContains(t, out, "Settings of the run", "with jobs, the experiments' table says it")
	assert.Contains(t, out, "Settings of the experiments")
}
