"""Tuned examples: every shipped file loads and checks, bad files fail with the fix, the result keys
the loader accepts are what train() really reports, and `rlcourse train --config` and
`rlcourse tuned-examples` judge runs by the pass criteria. (That every shipped example reaches its
pass mark is tests/test_learning.py's matrix.)"""

import textwrap

import pytest

from rlcourse.algorithms.appo.appo import APPOConfig
from rlcourse.algorithms.dqn.dqn import DQNConfig
from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.sac.sac import SACConfig
from rlcourse.connectors.env_to_module import FlattenObservations
from rlcourse.course import train_job, tuned_examples_suite
from rlcourse.course.tuned_example import (
    TUNE_RESULT_KEYS,
    TunedExampleError,
    load_tuned_example,
    result_keys,
    result_value,
)
from rlcourse.tune.search_space import check_search_spaces

SHIPPED = tuned_examples_suite.find_examples([])
GRIDWORLD = next(path for path in SHIPPED if path.name == "gridworld_ppo.yaml")


def flatten(result: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in result.items():
        keys |= flatten(value, f"{prefix}{key}/") if isinstance(value, dict) else {prefix + key}
    return keys


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_course_ships_every_algorithm_yaml_and_a_course_env_example():
    names = {path.relative_to(tuned_examples_suite.TUNED_EXAMPLES).as_posix() for path in SHIPPED}
    assert {"ppo/cartpole_ppo.py", "ppo/pendulum_ppo.py", "impala/cartpole_impala.py",
            "appo/cartpole_appo.py",
            "dqn/cartpole_dqn.py", "apex_dqn/cartpole_apex_dqn.py", "sac/pendulum_sac.py",
            "ppo/gridworld_ppo.yaml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_example_loads_validates_and_uses_real_result_keys(path):
    example = load_tuned_example(path)
    if example.is_sweep:  # each value of each search space is checked
        check_search_spaces(example.config)
    else:
        example.config.validate()
    assert example.stop and example.pass_criteria
    if not example.is_sweep:  # a budget in env steps, not seconds: the same on any machine
        assert "num_env_steps_sampled_lifetime" in example.stop and "time_total_s" not in example.stop
    assert set(example.stop) | set(example.pass_criteria) <= result_keys(example.config)
    # A pass mark that the stop values cannot reach first would make the example fail forever.
    assert all(key in example.stop and example.stop[key] >= mark
               for key, mark in example.pass_criteria.items())


def test_yaml_example_becomes_the_config_it_says(tmp_path):
    example = load_tuned_example(GRIDWORLD)
    assert example.name == "gridworld-ppo"
    assert type(example.config).__name__ == "PPOConfig"
    assert example.config.env.__name__ == "GridWorld"
    assert example.config.env_to_module_connector is FlattenObservations  # imported by name
    assert example.config.env_config == {"size": 7, "slip": 0.1}
    assert example.config.num_env_runners == 2 and example.config.seed == 0
    # YAML 1.1 (PyYAML's) reads 1e-3 as text; the loader reads it as Python and YAML 1.2 do.
    text = PASSES_AT_ONCE.replace("num_epochs: 1", "num_epochs: 1, lr: 1e-3")
    example = load_tuned_example(write(tmp_path, "e.yaml", text.replace(
        "stop: {training_iteration: 1}", "stop: {time_total_s: 1E3}")))
    assert (example.config.lr, example.stop) == (1e-3, {"time_total_s": 1000.0})


@pytest.mark.timeout(120)
@pytest.mark.parametrize("config_class", [PPOConfig, IMPALAConfig, APPOConfig, DQNConfig, SACConfig],
                         ids=["PPO", "IMPALA", "APPO", "DQN", "SAC"])
def test_static_result_keys_are_what_train_reports(config_class):
    config = (config_class().environment("Pendulum-v1" if config_class is SACConfig
                                         else "CartPole-v1")
              .evaluation(evaluation_interval=1, evaluation_duration=1))
    if config_class is DQNConfig:  # learning (and the learner's keys) from the first iteration on
        config.training(num_steps_sampled_before_learning_starts=0)
    elif config_class is SACConfig:  # the same, with a batch that the first 100 steps fill
        config.training(num_steps_sampled_before_learning_starts=0, train_batch_size_per_learner=64)
    elif config_class is PPOConfig:  # one epoch: RLlib's 30 report no other keys
        config.training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
    else:
        config.training(train_batch_size_per_learner=200)
    with config.build_algo() as algo:  # no runner actors: no Ray
        result = algo.train()
    assert flatten(result) == result_keys(config) - TUNE_RESULT_KEYS
    without_evaluation = config.copy().evaluation(evaluation_interval=None)
    assert not any(key.startswith("evaluation/") for key in result_keys(without_evaluation))


def test_tune_result_keys_are_keys_tune_adds():
    from ray.tune.result import AUTO_RESULT_KEYS

    assert set(TUNE_RESULT_KEYS) <= set(AUTO_RESULT_KEYS)


def test_result_value_reads_flattened_keys():
    result = {"env_runners": {"episode_return_mean": 12.5}, "training_iteration": 3}
    assert result_value(result, "env_runners/episode_return_mean") == 12.5
    assert result_value(result, "training_iteration") == 3
    with pytest.raises(KeyError):
        result_value(result, "env_runners/episode_reward_mean")


BAD_FILES = {
    "no config": ("noconfig.py", """\
        stop = {"training_iteration": 1}
        pass_criteria = {"training_iteration": 1}
        """, ["noconfig.py", "defines no `config`"]),
    "stop key typo": ("typo.py", """\
        from rlcourse.algorithms.ppo.ppo import PPOConfig
        config = PPOConfig().environment("CartPole-v1")
        stop = {"env_runners/episode_reward_mean": 450}
        pass_criteria = {"env_runners/episode_return_mean": 450}
        """, ["typo.py", "stop key 'env_runners/episode_reward_mean'",
              "did you mean 'env_runners/episode_return_mean'"]),
    "unknown run": ("run.yaml", """\
        x:
          env: CartPole-v1
          run: DreamerV3
          stop: {training_iteration: 1}
          pass_criteria: {training_iteration: 1}
        """, ["run.yaml", "`run: DreamerV3`", "'APPO'", "'PPO'"]),
    "unknown setting": ("setting.yaml", """\
        x:
          env: CartPole-v1
          run: PPO
          stop: {training_iteration: 1}
          pass_criteria: {training_iteration: 1}
          config: {num_env_runner: 2}
        """, ["setting.yaml", "num_env_runner", "did you mean 'num_env_runners'"]),
    "RLlib's old setting": ("old.yaml", """\
        x:
          env: CartPole-v1
          run: PPO
          stop: {training_iteration: 1}
          pass_criteria: {training_iteration: 1}
          config: {num_workers: 2}
        """, ["old.yaml", "num_workers", "env_runners(num_env_runners=...)"]),
    "bad value": ("value.yaml", """\
        x:
          env: CartPole-v1
          run: PPO
          stop: {training_iteration: 1}
          pass_criteria: {training_iteration: 1}
          config: {num_env_runners: -1}
        """, ["value.yaml", "num_env_runners=-1", "whole number >= 0"]),
    "YAML syntax": ("syntax.yaml", """\
        x:
          env: [CartPole-v1
          run: PPO
        """, ["syntax.yaml, line 3, column 6: not valid YAML", "fix its syntax"]),
    "env class typo": ("env.yaml", """\
        x:
          env: rlcourse.course.envs:Gridworld
          run: PPO
          stop: {training_iteration: 1}
          pass_criteria: {training_iteration: 1}
        """, ["env.yaml: env: 'rlcourse.course.envs:Gridworld' cannot be imported",
              "has no attribute 'Gridworld'", "'module:Class'"]),
    "connector module typo": ("connector.yaml", """\
        x:
          env: CartPole-v1
          run: PPO
          stop: {training_iteration: 1}
          pass_criteria: {training_iteration: 1}
          config: {env_to_module_connector: "rlcourse.connectors.env_to_modul:FlattenObservations"}
        """, ["connector.yaml: env_to_module_connector:", "No module named "
              "'rlcourse.connectors.env_to_modul'", "'module:Class'"]),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_tuned_example_fails_naming_file_key_and_fix(case, tmp_path):
    name, text, expected = BAD_FILES[case]
    with pytest.raises(TunedExampleError) as error:
        load_tuned_example(write(tmp_path, name, text))
    for part in expected:
        assert part in str(error.value)


TINY_BUDGET = """\
    tiny:
      env: rlcourse.course.envs:GridWorld
      run: PPO
      stop: {env_runners/episode_return_mean: 0.9, num_env_steps_sampled_lifetime: 500}
      pass_criteria: {env_runners/episode_return_mean: 0.9}
      config: {num_env_runners: 0, train_batch_size_per_learner: 500, minibatch_size: 250, seed: 0,
               env_to_module_connector: "rlcourse.connectors.env_to_module:FlattenObservations"}
    """
PASSES_AT_ONCE = """\
    at-once:
      env: CartPole-v1
      run: PPO
      stop: {training_iteration: 1}
      pass_criteria: {training_iteration: 1}
      config: {num_env_runners: 0, train_batch_size_per_learner: 200, minibatch_size: 100,
               num_epochs: 1}
    """


@pytest.mark.timeout(120)
def test_train_config_exits_1_when_the_pass_mark_is_not_met(tmp_path, capsys, ray_session):
    path = write(tmp_path, "tiny.yaml", TINY_BUDGET)
    assert train_job.main(["--config", str(path), "--checkpoint-dir", str(tmp_path / "ck")]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert sum(line.startswith("iter ") for line in lines) == 1  # 500 steps: the budget's end
    assert lines[-1].startswith("done: FAILED tiny:")
    assert (tmp_path / "ck").is_dir()


@pytest.mark.timeout(120)
def test_train_config_exits_0_when_the_example_passes(tmp_path, capsys, ray_session):
    """(Whether each shipped example passes is tests/test_learning.py's matrix.)"""
    assert train_job.main(["--config", str(write(tmp_path, "once.yaml", PASSES_AT_ONCE))]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("done: PASSED at-once:")


@pytest.mark.timeout(120)
def test_suite_skips_sweeps_and_tabulates_each_pass_and_failure(tmp_path, capsys, ray_session):
    write(tmp_path, "once.yaml", PASSES_AT_ONCE)
    write(tmp_path, "tiny.yaml", TINY_BUDGET)
    sweep = tuned_examples_suite.TUNED_EXAMPLES / "ppo" / "cartpole_ppo_lr_sweep.py"
    assert tuned_examples_suite.main([str(sweep), str(tmp_path)]) == 1  # one failed
    out = capsys.readouterr().out
    assert "a sweep (search spaces); run it with `rlcourse tune`" in out  # sweeps are skipped
    table = out[out.index("example "):].splitlines()[2:4]
    assert [[cell.strip() for cell in row.split("|")[:2]] for row in table] == [
        ["at-once", "PASS"], ["tiny", "FAIL"]]
    assert "1 of 2 tuned examples passed" in out


def test_suite_filter_that_matches_nothing_says_so():
    with pytest.raises(SystemExit, match="no tuned examples .* whose path contains 'nothing'"):
        tuned_examples_suite.find_examples([], "nothing")
