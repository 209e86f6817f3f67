"""Drift against RLlib 2.60 (imported, as pinned in requirements.lock): every setting the lessons'
code passes to a config, and every result key they read, exists in RLlib in the same place. Keys
rlcourse reports that RLlib does not are listed below with RLlib's nearest equivalent, so a new one,
or one RLlib adds or renames, fails here instead of surprising a learner who moves to RLlib."""

import ast
import dataclasses
import inspect
import json
from pathlib import Path

import pytest
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.algorithms.dqn import DQNConfig
from ray.rllib.algorithms.impala import IMPALAConfig
from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig
from ray.rllib.algorithms.sac import SACConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.utils import metrics as rllib_metrics

import rlcourse
from rlcourse import PPOConfig
from rlcourse.core import ALL_MODULES
from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG

pytestmark = pytest.mark.timeout(300)

LESSONS = sorted((Path(__file__).resolve().parents[1] / "lessons").glob("[0-9][0-9]_*.ipynb"))
SETTERS = ("environment", "env_runners", "training", "learners", "evaluation", "fault_tolerance",
           "resources", "multi_agent", "rl_module", "callbacks", "debugging", "reporting",
           "framework", "api_stack", "checkpointing")

# The result keys the lessons read (lesson, path): each must be in rlcourse's and RLlib's results.
TAUGHT_RESULT_KEYS = [
    ("01", "env_runners/episode_return_mean"),
    ("05", "timers/env_runner_sampling_timer"),
    ("05", "timers/learner_update_timer"),
    ("05", "timers/synch_weights"),
    ("04", "learners/__all_modules__/num_env_steps_trained"),
    ("05", "num_env_steps_sampled_lifetime"),
    ("06", "fault_tolerance/num_healthy_workers"),
    ("06", "fault_tolerance/num_remote_worker_restarts"),
    ("07", "training_iteration"),
    ("07", "learners/default_policy/default_optimizer_learning_rate"),
    ("08", "evaluation/env_runners/episode_return_mean"),
    ("09", "learners/__all_modules__/num_env_steps_trained_lifetime"),
]

# rlcourse's result keys that RLlib 2.60's PPO result lacks, with RLlib's nearest equivalent.
COURSE_ONLY_RESULT_KEYS = {
    "env_runners/num_healthy_env_runners": "fault_tolerance/num_healthy_workers",
    "env_runners/num_env_runner_restarts": "fault_tolerance/num_remote_worker_restarts",
    "env_runners/num_env_runner_failures": "none (RLlib logs lost runners, it does not count them)",
    "env_runners/num_sub_env_restarts": "none (RLlib restarts sub-envs without a metric)",
    "env_runners/num_sub_env_restarts_lifetime": "none",
    "learners/default_policy/num_env_steps_trained": "learners/default_policy/num_module_steps_trained",
    "learners/default_policy/gradients_default_optimizer_global_norm":
        "the same key, logged by RLlib only when grad_clip is set",
    "num_env_steps_trained_lifetime": "learners/__all_modules__/num_env_steps_trained_lifetime",
    "num_env_steps_sampled_throughput":
        "env_runners/num_env_steps_sampled_lifetime_throughput/throughput_since_last_reduce",
    "num_env_steps_trained_throughput": "learners/__all_modules__/num_env_steps_trained_throughput",
    "evaluation/num_healthy_env_runners": "fault_tolerance/num_healthy_workers (of the eval group)",
    "evaluation/evaluation_time_s": "timers/evaluation_iteration",
    "evaluation/env_runners/num_sub_env_restarts": "none",
    "evaluation/env_runners/num_sub_env_restarts_lifetime": "none",
}


def lesson_sources(cell_types: tuple[str, ...] = ("code",)) -> dict[str, str]:
    """Each lesson's cells of these types joined, by lesson number."""
    return {path.name[:2]: "\n".join("".join(cell["source"]) for cell in
                                     json.loads(path.read_text())["cells"]
                                     if cell["cell_type"] in cell_types)
            for path in LESSONS}


def settings_in_lessons() -> dict[tuple[str, str], set[str]]:
    """(setter, keyword) -> the lessons whose code calls `<config>.setter(keyword=...)`."""
    used: dict[tuple[str, str], set[str]] = {}
    for lesson, source in lesson_sources().items():
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in SETTERS):
                for keyword in node.keywords:
                    if keyword.arg:
                        used.setdefault((node.func.attr, keyword.arg), set()).add(lesson)
    return used


def rllib_setting_names(setter: str) -> set[str]:
    """Every keyword RLlib 2.60 takes in `setter`, across the algorithms the course teaches."""
    names: set[str] = set()
    for config_class in (AlgorithmConfig, RLlibPPOConfig, IMPALAConfig, APPOConfig, DQNConfig,
                         SACConfig):
        if hasattr(config_class, setter):
            names |= set(inspect.signature(getattr(config_class, setter)).parameters)
    return names


def leaf_paths(result: dict, prefix: str = "") -> set[str]:
    """'a/b/c' for every leaf of a nested result dict (the copied config left out)."""
    paths: set[str] = set()
    for key, value in result.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key != "config":
            paths |= leaf_paths(value, path + "/")
        else:
            paths.add(path)
    return paths


def two_iterations(config) -> set[str]:
    """The result keys of a second training iteration (the first has no earlier sample to time)."""
    config = (config.environment("CartPole-v1").env_runners(num_env_runners=0)
              .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
              .evaluation(evaluation_interval=1, evaluation_duration=2))
    algo = config.build_algo()
    try:
        algo.train()
        return leaf_paths(algo.train())
    finally:
        algo.stop()


@pytest.fixture(scope="module")
def results(ray_session) -> dict[str, set[str]]:
    return {"rlcourse": two_iterations(PPOConfig()), "rllib": two_iterations(RLlibPPOConfig())}


def test_every_setting_the_lessons_pass_is_an_rllib_setting():
    used = settings_in_lessons()
    assert {("training", "lr"), ("env_runners", "num_env_runners"),
            ("learners", "num_learners")} <= set(used)  # the scan sees the lessons' configs
    missing = {f"config.{setter}({name}=...) in lessons {sorted(lessons)}"
               for (setter, name), lessons in used.items()
               if name not in rllib_setting_names(setter)}
    assert missing == set()


def test_the_default_models_settings_are_rllibs():
    rllib_fields = {field.name for field in dataclasses.fields(DefaultModelConfig)}
    assert set(DEFAULT_MODEL_CONFIG) <= rllib_fields


# Every setting of PPO's, IMPALA's and APPO's whose default the course changed to RLlib's (issue 18): an
# RLlib example run with only its import changed must get the same algorithm.
DEFAULT_SETTINGS = {
    "PPOConfig": ["lr", "train_batch_size_per_learner", "minibatch_size", "num_epochs", "gamma",
                  "lambda_", "clip_param", "vf_clip_param", "vf_loss_coeff", "entropy_coeff",
                  "use_kl_loss", "kl_coeff", "kl_target", "grad_clip", "num_env_runners",
                  "num_envs_per_env_runner", "rollout_fragment_length",
                  "metrics_num_episodes_for_smoothing"],
    "IMPALAConfig": ["lr", "train_batch_size_per_learner", "minibatch_size", "num_epochs", "gamma",
                     "grad_clip", "vtrace", "vtrace_clip_rho_threshold",
                     "vtrace_clip_pg_rho_threshold", "vf_loss_coeff", "entropy_coeff",
                     "broadcast_interval", "learner_queue_size", "num_env_runners",
                     "rollout_fragment_length", "max_requests_in_flight_per_env_runner"],
    "APPOConfig": ["lr", "train_batch_size_per_learner", "num_epochs", "grad_clip", "vtrace",
                   "vf_loss_coeff", "entropy_coeff", "broadcast_interval", "num_env_runners",
                   "clip_param", "use_kl_loss", "kl_coeff", "kl_target", "target_worker_clipping",
                   "tau", "target_network_update_freq", "circular_buffer_num_batches",
                   "circular_buffer_iterations_per_batch"],
}


@pytest.mark.parametrize("config_name", sorted(DEFAULT_SETTINGS))
def test_ppo_impala_and_appo_defaults_are_rllibs(config_name):
    ours = getattr(rlcourse, config_name)()
    theirs = {"PPOConfig": RLlibPPOConfig, "IMPALAConfig": IMPALAConfig,
              "APPOConfig": APPOConfig}[config_name]()
    differ = {name: (getattr(ours, name), getattr(theirs, name))
              for name in DEFAULT_SETTINGS[config_name]
              if getattr(ours, name) != getattr(theirs, name)}
    assert differ == {}
    # The default network: RLlib's DefaultModelConfig under the algorithm's own model_config.
    rllib_model = {**dataclasses.asdict(DefaultModelConfig()), **theirs.model_config}
    assert {key: rllib_model[key] for key in ours.model_config} == ours.model_config


@pytest.mark.parametrize("lesson, path", TAUGHT_RESULT_KEYS,
                         ids=[path for _, path in TAUGHT_RESULT_KEYS])
def test_a_result_key_a_lesson_reads_is_in_both_results(results, lesson, path):
    code, text = lesson_sources()[lesson], lesson_sources(("code", "markdown"))[lesson]
    assert path in text or all(f'"{part}"' in code or f"'{part}'" in code
                               for part in path.split("/")), \
        f"lesson {lesson} no longer reads {path}: update TAUGHT_RESULT_KEYS"
    assert path in results["rlcourse"]
    assert path in results["rllib"], f"RLlib 2.60 has no result key {path}"


def test_every_rlcourse_result_key_is_rllibs_or_listed_with_rllibs_equivalent(results):
    course_only = results["rlcourse"] - results["rllib"]
    assert course_only == set(COURSE_ONLY_RESULT_KEYS)  # a stale entry fails too
    for path, equivalent in COURSE_ONLY_RESULT_KEYS.items():
        if "/" in equivalent.split(" ")[0]:
            assert equivalent.split(" ")[0] in results["rllib"], (path, equivalent)


def test_multi_agent_result_keys_are_rllibs():
    """RLlib's MultiAgentEnvRunner's names (a multi-agent run of both is lesson 10's and 11's)."""
    from rlcourse.utils.metrics.metrics_logger import EpisodeStats

    stats = EpisodeStats(window=4).add([{"episode_returns": [1.0], "episode_lens": [3],
                                         "num_env_steps_sampled": 3, "custom_metrics": {},
                                         "agent_episode_returns": {"a": [1.0]},
                                         "module_episode_returns": {"p": [1.0]}}])
    assert rllib_metrics.EPISODE_AGENT_RETURN_MEAN in stats
    assert rllib_metrics.EPISODE_MODULE_RETURN_MEAN in stats
    assert rllib_metrics.ALL_MODULES == ALL_MODULES
