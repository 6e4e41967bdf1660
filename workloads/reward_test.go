package workloads_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/test/clitest"
	"gke-rl/test/golden"
	"gke-rl/workloads"
)

func TestVerlScoresWithTheProgramsReward(t *testing.T) {
	for dataset := range workloads.VerlDatasets {
		r := run()
		r.Dataset = dataset
		args := map[string]string{}
		for _, o := range workloads.VerlOverrides(r) {
			args[o.Key] = o.Value
		}
		assert.Equal(t, "/etc/gke-rl/reward.py", args["custom_reward_function.path"], dataset)
		name := args["custom_reward_function.name"]
		require.NotEmpty(t, name, "%s: a dataset verl prepares has the program's scorer", dataset)
		assert.Regexp(t, regexp.MustCompile(`(?m)^def `+regexp.QuoteMeta(name)+`\(`), workloads.RewardModule(), "%s: reward.py defines %s", dataset, name)
	}
	cm := workloads.RunScriptObject("ns")
	assert.Equal(t, workloads.RewardModule(), cm.Data["reward.py"], "the reward module ships beside run.sh, read-only on the Ray pods")
}

// rewardHarness runs a verl release's own reward path (testdata/verl/<tag>) on one row: verl's
// default reward (default_compute_score) when no module is given, else verl's loader of a custom
// reward function (get_custom_reward_fn, taken from verl/trainer/ppo/reward.py as it is, without
// the module's torch and Ray imports) on the module, called with the keywords the release's
// NaiveRewardManager passes (read from its naive.py: every call of its scorer passes the same).
// It prints the score, whether the marker file ($REWARD_MARKER) exists and whether prime_math was
// imported.
const rewardHarness = `
import ast, importlib.util, inspect, json, os, sys, typing
from functools import partial
verl, manager, module, name, data_source, solution, ground_truth = sys.argv[1:8]
marker = os.environ["REWARD_MARKER"]
sys.path.insert(0, verl)

def functions(path, names):
    tree = ast.parse(open(path).read())
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]

if module:
    loader = functions(os.path.join(verl, "verl/trainer/ppo/reward.py"), {"_call_with_kwargs", "get_custom_reward_fn"})
    assert len(loader) == 2, "verl's loader of a custom reward function moved"
    ns = {"importlib": importlib, "inspect": inspect, "os": os, "sys": sys, "partial": partial, "Optional": typing.Optional, "DictConfig": dict, "RawRewardFn": object}
    exec(compile(ast.Module(body=loader, type_ignores=[]), "verl/trainer/ppo/reward.py", "exec"), ns)
    score_fn = ns["get_custom_reward_fn"]({"custom_reward_function": {"path": module, "name": name, "reward_kwargs": {}}})
    calls = [n for n in ast.walk(ast.parse(open(os.path.join(verl, manager)).read()))
             if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "compute_score"]
    assert calls, "NaiveRewardManager's call of its scorer moved"
    # The keywords each call names (a **kwargs of the reward router's, set only with a reward
    # model, has no name).
    named = {tuple(k.arg for k in c.keywords if k.arg) for c in calls}
    assert len(named) == 1, "NaiveRewardManager's calls of its scorer differ: %r" % named
    keywords = list(named.pop())
    values = {"data_source": data_source, "solution_str": solution, "ground_truth": ground_truth, "extra_info": {}}
    score = score_fn(**{k: values[k] for k in keywords})
else:
    from verl.utils.reward_score import default_compute_score
    score = default_compute_score(data_source, solution, ground_truth)
print(json.dumps({"score": score, "ran": os.path.exists(marker), "prime_math": "verl.utils.reward_score.prime_math" in sys.modules}))
`

type rewardOutcome struct {
	Score     float64
	Ran       bool
	PrimeMath bool `json:"prime_math"`
}

// scoringPython is a python3 with what verl's scorers import (sympy, and pylatexenc for
// prime_math): Debian's, with python3-sympy and python3-pylatexenc, which .ci/run installs.
func scoringPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import sympy, pylatexenc").Run() == nil {
			return path
		}
	}
	msg := "no python3 imports sympy and pylatexenc (Debian packages python3-sympy python3-pylatexenc); this test runs verl's scorers"
	if os.Getenv(clitest.RequireEnv) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestAHostileRowRunsNoCodeThroughTheReward is the door of a dataset row that chooses its
// scorer: with verl's default reward, a row marked numina_cn_k12 whose ground truth holds \pi
// reaches prime_math's grader, which runs it with eval (prime_math/grader.py, handle_pi); with
// the program's reward module, loaded and called as verl does, the same row is scored by the
// dataset's own scorer and runs nothing.
func TestAHostileRowRunsNoCodeThroughTheReward(t *testing.T) {
	// The reward manager each release's GRPO run calls: v0.6.0's NaiveRewardManager; v0.7.0's
	// reward loop (reward_model.use_reward_loop defaults to true, verl/trainer/config/
	// _generated_ppo_trainer.yaml) with its "naive" manager, which calls the custom function
	// whenever custom_reward_function.path is set (verl/experimental/reward_loop/reward_loop.py,
	// compute_score).
	managers := map[string]string{
		"v0.6.0": "verl/workers/reward_manager/naive.py",
		"v0.7.0": "verl/experimental/reward_loop/reward_manager/naive.py",
	}
	for _, tag := range workloads.ReleaseTags(kinds.Verl) {
		t.Run(tag, func(t *testing.T) { hostileRowAt(t, tag, managers[tag]) })
	}
}

func hostileRowAt(t *testing.T, tag, manager string) {
	python := scoringPython(t)
	verl := filepath.Join(golden.RepoRoot(), "testdata", "verl", tag)
	require.NotEmpty(t, manager, "the reward manager of verl %s", tag)
	module := filepath.Join(t.TempDir(), "reward.py")
	require.NoError(t, os.WriteFile(module, []byte(workloads.RewardModule()), 0o444))

	score := func(t *testing.T, module, name, dataSource, solution, groundTruth string) (rewardOutcome, string) {
		marker := filepath.Join(t.TempDir(), "ran")
		// In a directory of its own: a row's code that escapes writes nothing into the checkout.
		res := clitest.RunIn(t, t.TempDir(), []string{"PYTHONDONTWRITEBYTECODE=1", "REWARD_MARKER=" + marker}, python, "-c", rewardHarness, verl, manager, module, name, dataSource, solution, groundTruth)
		require.Zero(t, res.Code, res.Stderr)
		lines := regexp.MustCompile(`(?m)^\{.*\}$`).FindAllString(res.Stdout, -1)
		require.NotEmpty(t, lines, res.Stdout)
		var o rewardOutcome
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &o))
		return o, res.Stdout
	}
	// exec(bytes.fromhex(...)) of code that writes the marker, with \pi so that handle_pi evals it.
	// The marker's path comes from the environment, not from the harness's arguments, whose
	// order may change.
	hostile := "exec(bytes.fromhex('" + hex.EncodeToString([]byte(`open(__import__("os").environ["REWARD_MARKER"], "w").write("x")`)) + "'))#\\pi"

	before, _ := score(t, "", "", "numina_cn_k12", `The answer is \boxed{3}`, hostile)
	require.True(t, before.PrimeMath && before.Ran, "the hostile row runs its code through verl's default reward (the door this test guards): %+v", before)

	for dataset, name := range workloads.VerlRewardFunctions {
		t.Run(dataset, func(t *testing.T) {
			after, log := score(t, module, name, "numina_cn_k12", `The answer is \boxed{3}`, hostile)
			assert.False(t, after.Ran, "the row's code ran")
			assert.False(t, after.PrimeMath, "prime_math was imported")
			assert.Zero(t, after.Score)
			// Printed by the program's function alone: verl's loader took it (v0.6.0 also says
			// "using customized reward function", v0.7.0 nothing).
			assert.Contains(t, log, `a row's data_source 'numina_cn_k12' is not`, "the program's function scored it, and a planted row shows in the run's log")
			assert.Contains(t, log, "scored as "+dataset+" all the same")
		})
	}
	// The scorers still score: the right answer in each dataset's own format.
	right, _ := score(t, module, "gsm8k", "openai/gsm8k", "so she pays 18 dollars.\n#### 18", "18")
	assert.InDelta(t, 1.0, right.Score, 0, "GSM8K's final number after ####")
	wrong, _ := score(t, module, "gsm8k", "openai/gsm8k", "#### 17", "18")
	assert.Zero(t, wrong.Score)
	right, log := score(t, module, "math", "DigitalLearningGmbH/MATH-lighteval", `so \boxed{\frac{1}{2}}`, `\frac{1}{2}`)
	assert.InDelta(t, 1.0, right.Score, 0, "MATH's boxed answer")
	assert.NotContains(t, log, "is not", "a row of the dataset's own data_source is not reported")
}
