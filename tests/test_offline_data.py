"""Offline data (rlcourse/offline/): runners record RLlib's columns as whole Parquet files, and bad
data fails before training with a message naming the file, the column and the fix."""

import base64
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlcourse.algorithms.bc import BCConfig
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.offline import offline_env_runner
from rlcourse.offline.offline_data import OfflineData
from rlcourse.offline.offline_data_checks import OfflineDataError
from rlcourse.offline.offline_env_runner import OfflineSingleAgentEnvRunner
from rlcourse.utils.validation import ConfigError

RLLIB_COLUMNS = ["eps_id", "agent_id", "module_id", "obs", "actions", "rewards", "new_obs",
                 "terminateds", "truncateds", "action_logp"]
CARTPOLE = gym.make("CartPole-v1")
SPACES = (CARTPOLE.observation_space, CARTPOLE.action_space)


def record(tmp_path: Path, steps: int = 200, **settings) -> OfflineSingleAgentEnvRunner:
    config = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
              .offline_data(output=str(tmp_path), **settings).debugging(seed=0))
    runner = OfflineSingleAgentEnvRunner(config)
    runner.sample(num_timesteps=steps)
    return runner


def rows(n: int = 8, **columns) -> pa.Table:
    """A table of n CartPole steps in RLlib's columns, with `columns` replaced."""
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(n + 1, 4)).astype(np.float32)
    data = {"eps_id": ["a"] * n, "obs": list(obs[:-1]), "actions": rng.integers(0, 2, n),
            "rewards": np.ones(n, np.float32), "new_obs": list(obs[1:]),
            "terminateds": [False] * (n - 1) + [True], "truncateds": [False] * n}
    data.update(columns)
    return pa.table({k: v for k, v in data.items() if v is not None})


def offline_data(path) -> OfflineData:
    return OfflineData(BCConfig().offline_data(input_=str(path)), *SPACES)


def test_runners_record_rllibs_columns_one_row_per_step(tmp_path):
    runner = record(tmp_path)
    files = sorted(tmp_path.rglob("*"))
    assert [f.relative_to(tmp_path).parts[0] for f in files] == ["cartpole-v1"] * 2  # folder, file
    table = pq.read_table(files[1])
    assert table.column_names == RLLIB_COLUMNS and table.num_rows == 200
    data = table.to_pydict()
    obs, new_obs = np.array(data["obs"]), np.array(data["new_obs"])
    same_episode = np.array(data["eps_id"][1:]) == np.array(data["eps_id"][:-1])
    # Steps follow each other within an episode; an episode ends on a terminated (or last) row.
    assert np.allclose(obs[1:][same_episode], new_obs[:-1][same_episode])
    assert not np.array(data["terminateds"][:-1])[same_episode].any()
    assert np.array(data["terminateds"][:-1])[~same_episode].all()
    assert set(data["actions"]) == {0, 1} and all(x is None for x in data["agent_id"])
    assert not [f for f in table.schema if pa.types.is_binary(f.type)]  # nothing pickled
    runner.stop()


def test_max_rows_per_file_writes_full_files_and_the_rest_on_stop(tmp_path):
    runner = record(tmp_path, output_max_rows_per_file=64, output_write_remaining_data=True)
    sizes = lambda: sorted(pq.read_metadata(f).num_rows for f in tmp_path.rglob("*.parquet"))  # noqa: E731
    assert sizes() == [64, 64, 64]
    runner.stop()
    assert sizes() == [8, 64, 64, 64]


def test_an_interrupted_write_leaves_no_file(tmp_path, monkeypatch):
    def killed(table, where):
        Path(where).write_bytes(b"PAR1 half")
        raise KeyboardInterrupt
    monkeypatch.setattr(offline_env_runner.pq, "write_table", killed)
    with pytest.raises(KeyboardInterrupt):
        record(tmp_path)
    assert not list(tmp_path.rglob("*.parquet"))  # only a hidden .tmp, which readers skip
    with pytest.raises(OfflineDataError, match="no Parquet files"):
        offline_data(tmp_path)


def test_rllibs_packed_formats_are_refused_as_settings():
    with pytest.raises(ConfigError, match="output_write_episodes"):
        BCConfig().environment("CartPole-v1").offline_data(output_write_episodes=True).validate()
    with pytest.raises(ConfigError, match="output_compress_columns.*pickle"):
        BCConfig().environment("CartPole-v1").offline_data(
            output_compress_columns=["obs"]).validate()
    with pytest.raises(ValueError, match=r"input_.*offline_data\(input_=PATH\)"):
        BCConfig().environment("CartPole-v1").validate()


@pytest.mark.parametrize("table, message", [
    (rows(actions=None), r"has no column 'actions'.*offline_data\(output=...\)"),
    (rows(actions=np.full(8, 2)), r"column 'actions': values outside.*Discrete\(2\)"),
    (rows(actions=np.full(8, 0.5)), r"column 'actions': values outside"),
    (rows(actions=np.r_[0, 1, 0, 1, 0, 7, 0, 1]), r"Discrete\(2\): row 5: action 7\. Train on"),
    (rows(actions=np.r_[0, 1, np.nan, 1, 0, 1, 0, 1]),  # as pandas writes a column with a null
     r"actions are float64 \(row 2: nan\), and Discrete actions must be integers\. Write"),
    (rows(obs=[np.zeros(4, np.float32)] * 3 + [None] * 5),
     r"column 'obs', row 3: no value \(null\).*Drop those rows"),
    (rows(obs=list(np.zeros((8, 3), np.float32))), r"column 'obs': observations of shape \(3,\)"),
    (rows(obs=[np.zeros(4 - k % 2, np.float32) for k in range(8)]),
     r"column 'obs': lists of 3 to 4 values.*lists of one length"),
    (rows(rewards=np.r_[np.ones(5), np.nan, 1, 1]), r"column 'rewards', row 5: a non-finite"),
    (rows(terminateds=[False, None] + [False] * 5 + [True]),  # was taken, as objects
     r"column 'terminateds', row 1: no value \(null\)"),
    (rows(terminateds=[None] + [False] * 6 + [True]),  # crashed: len(False)
     r"column 'terminateds', row 0: no value \(null\)"),
    (rows(rewards=list(np.ones((8, 1), np.float32))),  # was taken: CQL's targets broadcast
     r"column 'rewards': values of shape \(1,\), where each row needs one number"),
    (rows(truncateds=list(np.zeros((8, 3), bool))),
     r"column 'truncateds': values of shape \(3,\)"),
    (rows(rewards=["1"] * 8), r"column 'rewards': holds string"),
    (rows(n=1).slice(0, 0), r"hold no rows"),
    (rows(obs=[base64.b64encode(b"pickled").decode()] * 8),
     r"column 'obs': holds string.*pickled.*never unpickles.*output_compress_columns=\[\]"),
    (pa.table({"item": [b"msgpack episode"]}),
     r"whole episodes.*output_write_episodes=True.*output_write_episodes=False"),
])
def test_bad_data_fails_naming_file_column_and_fix(tmp_path, table, message):
    pq.write_table(table, tmp_path / "bad.parquet")
    with pytest.raises(OfflineDataError, match=message) as error:
        offline_data(tmp_path)
    assert "bad.parquet" in str(error.value)


def test_files_that_are_not_parquet_are_named(tmp_path):
    (tmp_path / "data.csv").write_text("obs,actions\n0,1\n")
    with pytest.raises(OfflineDataError, match="data.csv is not a readable Parquet file.*output="):
        offline_data(tmp_path / "data.csv")
    pq.write_table(rows(), tmp_path / "whole.parquet")
    (tmp_path / "half.parquet").write_bytes((tmp_path / "whole.parquet").read_bytes()[:500])
    with pytest.raises(OfflineDataError, match="half.parquet is not a readable Parquet file"):
        offline_data(tmp_path)


@pytest.mark.parametrize("input_, message", [
    (5, r"input_=5 in config.offline_data\(input_=...\): pass a path"),
    ([None], r"input_=\[None\] .*pass a path \(str\), a list of paths, or a ray.data.Dataset"),
    ([], r"input_=\[\] .*an empty list names no data"),
])
def test_input_that_names_no_files_is_refused(input_, message):
    with pytest.raises(ConfigError, match=message):
        OfflineData(BCConfig().offline_data(input_=input_), *SPACES)


@pytest.mark.parametrize("settings, message", [
    ({"iter_batches_kwargs": {"prefetch": 4}}, r"iter_batches_kwargs=.*'prefetch_batches'.*"
     r"not \['prefetch'\]"),
    ({"iter_batches_kwargs": {"batch_size": 10}}, r"not \['batch_size'\]\. The batch size is "
     r"config.training\(train_batch_size_per_learner"),
    ({"input_read_method_kwargs": {"bogus": 1}, "materialize_data": False},
     r"input_read_method_kwargs=.*read_parquet.*'override_num_blocks'.*not \['bogus'\]"),
    ({"input_read_method_kwargs": {"filter": None}, "materialize_data": False},  # read_parquet
     r"input_read_method_kwargs=.*not \['filter'\]"),                         # refuses it
    ({"input_read_method_kwargs": {"num_cpus": 1}},  # BC's materialize_data=True reads no Dataset
     r"input_read_method_kwargs=.*materialize_data=False"),
    ({"materialize_data": "no"}, r"materialize_data='no'.*use True"),
])
def test_read_settings_are_checked_before_reading(tmp_path, settings, message):
    pq.write_table(rows(), tmp_path / "good.parquet")
    with pytest.raises(ConfigError, match=message):
        OfflineData(BCConfig().offline_data(input_=str(tmp_path), **settings), *SPACES)


def test_a_path_without_parquet_files_is_named(tmp_path):
    (tmp_path / "notes.txt").write_text("no data here")
    with pytest.raises(OfflineDataError, match=f"input_='{tmp_path}'.*no Parquet files"):
        offline_data(tmp_path)
    with pytest.raises(OfflineDataError, match="does not exist"):
        offline_data(tmp_path / "missing")


def test_bc_for_an_env_unlike_the_data_fails_while_building(tmp_path):
    record(tmp_path, steps=50).stop()
    config = BCConfig().environment("Acrobot-v1").offline_data(input_=str(tmp_path))
    with pytest.raises(OfflineDataError, match=r"cartpole-v1.*column 'obs'.*shape \(4,\).*Box"):
        config.build_algo()


def test_a_dataset_streams_checked_batches_epoch_after_epoch(ray_session, tmp_path):
    import ray.data

    record(tmp_path, steps=100).stop()
    data = offline_data(tmp_path)
    batches = [data.sample(40) for _ in range(5)]  # 100 rows: two batches per epoch
    assert all(b["obs"].shape == (40, 4) and b["obs"].dtype == np.float32 for b in batches)
    assert np.array_equal(batches[0]["actions"], batches[2]["actions"])
    with pytest.raises(OfflineDataError, match="fewer than one batch of 500"):
        data.sample(500)
    data.stop()
    with pytest.raises(OfflineDataError, match=r"ray.data.Dataset .* holds no rows"):  # was an
        OfflineData(BCConfig().offline_data(input_=ray.data.from_items([])), *SPACES)  # AttributeError
    bad = ray.data.from_items([{"obs": np.zeros(4, np.float32), "actions": 3}] * 4)
    config = BCConfig().offline_data(input_=bad)
    with pytest.raises(OfflineDataError, match=r"ray.data.Dataset.*'actions': values outside"):
        OfflineData(config, *SPACES).sample(4)


def test_plain_list_columns_stream_as_arrays_and_ragged_ones_fail_when_read(ray_session, tmp_path):
    """Arrow list columns (not Ray Data's tensor type), as other tools write observations: the
    learner's batches get [rows, 4] arrays; lists of different lengths in a streamed ray.data
    Dataset (not checked file by file) fail naming the column when a batch is read."""
    import ray.data

    pq.write_table(rows(n=100), tmp_path / "lists.parquet")
    data = offline_data(tmp_path)
    batch = data.sample(40)
    assert batch["obs"].shape == (40, 4) and batch["obs"].dtype == np.float32
    data.stop()
    ragged = ray.data.from_arrow(rows(obs=[np.zeros(4 - k % 2, np.float32) for k in range(8)]))
    data = OfflineData(BCConfig().offline_data(input_=ragged), *SPACES)
    with pytest.raises(OfflineDataError, match=r"ray.data.Dataset.*, column 'obs': lists of 3 to 4"):
        data.sample(4)
    data.stop()


def test_reads_prefetch_two_batches_as_rllibs_do_unless_told_otherwise(ray_session, tmp_path):
    record(tmp_path, steps=100).stop()
    data = offline_data(tmp_path)
    assert data.sample(40, num_shards=1)[0].iter_batches_kwargs == {"prefetch_batches": 2}
    data.stop()
    told = {"prefetch_batches": 0, "local_shuffle_buffer_size": 100}
    data = OfflineData(BCConfig().offline_data(input_=str(tmp_path), iter_batches_kwargs=told),
                       *SPACES)
    reader = data.sample(40, num_shards=1)[0]
    assert reader.iter_batches_kwargs == told and reader.next_batch()["obs"].shape == (40, 4)
    data.stop()


def test_a_recording_config_survives_a_checkpoints_json(tmp_path):
    from rlcourse.utils.checkpoint_contents import config_from_json, config_to_json

    config = PPOConfig().environment("CartPole-v1").offline_data(output=str(tmp_path))
    loaded = config_from_json(config_to_json(config), "test")
    assert loaded.env_runner_cls is OfflineSingleAgentEnvRunner and loaded.output == str(tmp_path)
    assert PPOConfig().offline_data(output=str(tmp_path)).offline_data(
        output=None).env_runner_cls is None


def test_recording_settings_are_checked():
    config = PPOConfig().environment("CartPole-v1")
    with pytest.raises(ConfigError, match="output_max_rows_per_file"):
        config.copy().offline_data(output="x", output_max_rows_per_file=0).validate()
    with pytest.raises(ConfigError, match="output=.*single-agent"):
        config.copy().offline_data(output="x").multi_agent(
            policies={"p"}, policy_mapping_fn=lambda agent_id, episode, **kwargs: "p").validate()



@pytest.mark.parametrize("output, message", [
    (5, r"output=5 in config.offline_data\(output=...\): pass a folder path"),
    ("file/sub", r"output=.*file/sub.*cannot write to the folder .*\(Not a directory\)"),
])
def test_an_output_that_is_no_folder_is_named(tmp_path, output, message):
    (tmp_path / "file").write_text("not a folder")
    config = PPOConfig().environment("CartPole-v1").offline_data(
        output=str(tmp_path / output) if isinstance(output, str) else output)
    with pytest.raises(ConfigError, match=message):
        OfflineSingleAgentEnvRunner(config)


def test_runner_actors_write_their_remaining_rows_when_stopped(ray_session, algo_factory, tmp_path):
    config = (PPOConfig().environment("CartPole-v1")
              .env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5)
              .offline_data(output=str(tmp_path), output_max_rows_per_file=64,
                            output_write_remaining_data=True))
    algo = algo_factory(config)
    algo.env_runner_group.sample(num_timesteps=100)
    algo.stop()
    assert sorted(pq.read_metadata(f).num_rows for f in tmp_path.rglob("*.parquet")) == [36, 64]
