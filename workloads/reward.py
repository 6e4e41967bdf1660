# The reward of gke-rl's verl runs: the scorer of the dataset the stack prepared, whatever a row's
# data_source says.
#
# verl's default reward (verl/utils/reward_score/__init__.py, default_compute_score, v0.6.0 and
# v0.7.0) picks its scorer by each row's own data_source: rows marked numina_* go to prime_math,
# whose grader runs eval() on a ground truth containing \pi (prime_math/grader.py, handle_pi), and
# codecontests, apps, ... run the row's code. The parquet files are written by the data
# preparation, under datasets/, which support principals may write; the trainer runs as the
# training principal, which may write the checkpoints every rank loads on resume. So the program
# chooses the scorer: verl loads this file by path (custom_reward_function.path, which only
# `pulumi up` sets, from a ConfigMap the Ray pods mount read-only) and calls the function that
# custom_reward_function.name names, one function a dataset. A row's data_source only names the
# row in the log.
#
# verl calls it with keywords (verl/workers/reward_manager/naive.py, NaiveRewardManager.__call__):
# data_source, solution_str, ground_truth, extra_info.

from verl.utils.reward_score import gsm8k as _gsm8k
from verl.utils.reward_score import math_reward as _math_reward

# What the dataset's preparation script writes as data_source (verl's
# examples/data_preprocess/gsm8k.py and math_dataset.py).
_EXPECTED = {"gsm8k": "openai/gsm8k", "math": "DigitalLearningGmbH/MATH-lighteval"}
_reported = set()


def _note(dataset, data_source):
    """Says once per value that a row's data_source is not the dataset's: it changes nothing, but
    a planted or mislabelled row shows in the run's log."""
    if data_source != _EXPECTED[dataset] and data_source not in _reported and len(_reported) < 10:
        _reported.add(data_source)
        print(f"gke-rl reward: a row's data_source {str(data_source)[:80]!r} is not {_EXPECTED[dataset]!r}; "
              f"scored as {dataset} all the same", flush=True)


def gsm8k(data_source=None, solution_str="", ground_truth="", extra_info=None, **_):
    """GSM8K's scorer (verl/utils/reward_score/gsm8k.py): 1 for the right final number, else 0."""
    _note("gsm8k", data_source)
    return float(_gsm8k.compute_score(str(solution_str), str(ground_truth)))


def math(data_source=None, solution_str="", ground_truth="", extra_info=None, **_):
    """MATH's scorer (verl/utils/reward_score/math_reward.py): the boxed answer compared as text."""
    _note("math", data_source)
    return float(_math_reward.compute_score(str(solution_str), str(ground_truth)))
