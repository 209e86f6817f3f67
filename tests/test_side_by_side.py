"""The side-by-side helper of lesson 15: the same config function on rlcourse and on RLlib."""

import math

import numpy as np
import pytest

from rlcourse.course import side_by_side

pytestmark = pytest.mark.timeout(240)


def small_ppo(PPOConfig):  # noqa: N803 (the parameter is the class the function builds from)
    return (PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
            .learners(num_learners=0)
            .training(lr=1e-3, train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
            .rl_module(model_config={"fcnet_hiddens": [16], "fcnet_activation": "tanh"})
            .debugging(seed=0))


def ppo_and_register_env(PPOConfig, register_env):  # noqa: N803
    register_env("side-by-side-cartpole", lambda env_config: None)
    return PPOConfig()


def test_the_two_programs_differ_in_their_import_lines_only():
    diff = side_by_side.code_diff(small_ppo)
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-from rlcourse import PPOConfig",
                       "+from ray.rllib.algorithms.ppo import PPOConfig"]
    rllib = side_by_side.program(small_ppo, "ray.rllib")
    assert rllib.startswith("from ray.rllib.algorithms.ppo import PPOConfig\n")
    assert ".training(lr=1e-3" in rllib  # the function's own text follows the imports
    both = side_by_side.import_lines(ppo_and_register_env, "ray.rllib")
    assert both == ["from ray.rllib.algorithms.ppo import PPOConfig",
                    "from ray.tune.registry import register_env"]
    assert side_by_side.import_lines(ppo_and_register_env, "rlcourse") == [
        "from rlcourse import PPOConfig, register_env"]
    assert side_by_side.diff_markdown(small_ppo).startswith("```diff\n")


def test_the_names_come_from_the_package_asked_for():
    from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig
    from ray.tune.registry import register_env as rllib_register_env

    from rlcourse import PPOConfig, register_env

    assert side_by_side.imports(ppo_and_register_env, "rlcourse") == {
        "PPOConfig": PPOConfig, "register_env": register_env}
    assert side_by_side.imports(ppo_and_register_env, "ray.rllib") == {
        "PPOConfig": RLlibPPOConfig, "register_env": rllib_register_env}


def test_a_bad_package_or_parameter_gives_a_clear_error():
    expected = r"package must be one of \['rlcourse', 'ray.rllib'\], got 'rllib'"
    with pytest.raises(ValueError, match=expected):
        side_by_side.run(small_ppo, "rllib", max_env_steps=1)

    def asks_for_dqn(DQNConfig):  # noqa: N803
        return DQNConfig()

    with pytest.raises(ValueError,
                       match=r"takes \['DQNConfig'\].*may be \['APPOConfig', "
                             r"'FlattenObservations', 'IMPALAConfig'"):
        side_by_side.program(asks_for_dqn, "rlcourse")
    with pytest.raises(ValueError, match="never ends"):
        side_by_side.run(small_ppo, "rlcourse")


def test_defaults_are_read_from_both_libraries():
    rows = {name: (ours, theirs) for name, ours, theirs in side_by_side.defaults(
        "PPOConfig", ["lr", "num_epochs", "gamma"]) + side_by_side.defaults(
        "IMPALAConfig", ["min_time_s_per_iteration"])}
    from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig

    from rlcourse import PPOConfig
    assert rows["lr"] == (PPOConfig().lr, RLlibPPOConfig().lr)
    assert rows["num_epochs"] == (PPOConfig().num_epochs, RLlibPPOConfig().num_epochs)
    assert rows["gamma"] == (0.99, 0.99)
    assert rows["min_time_s_per_iteration"][0] == side_by_side.NO_SUCH_SETTING  # RLlib's only
    assert rows["min_time_s_per_iteration"][1] > 0


def test_first_reaching_skips_nan_and_takes_the_first_crossing():
    rows = np.array([[100, 0.5, math.nan], [200, 1.0, 9.0], [300, 1.5, 12.0], [400, 2.0, 8.0],
                     [500, 2.5, 15.0]])
    assert side_by_side.first_reaching(rows, 10.0) == (300, 1.5)
    assert side_by_side.first_reaching(rows, 9.0) == (200, 1.0)
    assert side_by_side.first_reaching(rows, 16.0) is None


@pytest.mark.parametrize("package", side_by_side.PACKAGES)
def test_both_libraries_train_and_report_the_keys_the_lesson_reads(ray_session, package):
    lines = []
    run = side_by_side.run(small_ppo, package, max_env_steps=600, progress=lines.append)
    assert run.package == package and run.rows.shape[1] == 3 and len(run.rows) == len(lines) >= 2
    assert np.all(np.diff(run.env_steps) > 0) and np.all(np.diff(run.seconds) > 0)
    assert run.env_steps[-1] >= 600 > run.env_steps[-2]  # stopped at the first row past the budget
    assert 0 < run.build_seconds < run.seconds[0]
    assert not math.isnan(run.returns[-1]) and run.returns[-1] > 5  # CartPole episodes ended
    result = run.last_result
    for key in ("episode_return_mean", "episode_len_mean", "num_episodes"):
        assert key in result["env_runners"], key
    for key in ("policy_loss", "vf_loss", "entropy"):
        assert key in result["learners"]["default_policy"], key
    timers = result["timers"]
    assert timers["env_runner_sampling_timer"] > 0 and timers["learner_update_timer"] > 0
    assert f"{package:>9}: iteration   1 |" in lines[0] and "return" in lines[0]


def test_a_return_target_stops_the_run_at_the_first_iteration_that_reaches_it(ray_session):
    run = side_by_side.run(small_ppo, "rlcourse", target_return=15.0, max_env_steps=20_000,
                           progress=None)
    reached = run.first_reaching(15.0)
    assert reached is not None and reached[0] == run.env_steps[-1]  # the last row, not a later one
    assert np.all(np.nan_to_num(run.returns[:-1], nan=0) < 15.0)
