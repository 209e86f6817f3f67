"""A real two-node Ray cluster on this machine (`ray start` twice): placement over nodes, losing a
node mid-training, a Ray Job, and a teardown that leaves no process behind. One cluster serves the
whole module; the local Ray of other test modules is shut down first and restarted at the end."""

import argparse
import json
import math
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
import ray
from helpers import SLOW_RESTARTS, small_ppo
from ray.job_submission import JobStatus, JobSubmissionClient

import rlcourse.course.cluster
from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.course.cluster import LocalCluster
from rlcourse.course.train_job import build_config, build_parser, format_result
from rlcourse.utils.resources import init_ray

pytestmark = pytest.mark.timeout(300)

LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1"}


@pytest.fixture(scope="module")
def cluster():
    had_local_ray = ray.is_initialized()
    ray.shutdown()  # a driver belongs to one cluster at a time
    cluster = LocalCluster(num_workers=1, head_cpus=1, worker_cpus=1, verbose=False)
    try:
        cluster.connect()
        yield cluster
    finally:
        cluster.shutdown()
        if had_local_ray:  # the session's local Ray, for the test modules that come later
            init_ray(num_cpus=2)


@pytest.fixture(scope="module")
def algo(cluster):
    config = (small_ppo().environment("CartPole-v1").debugging(seed=0)
              .env_runners(num_env_runners=2, num_envs_per_env_runner=2, num_cpus_per_env_runner=0.5)
              .resources(placement_strategy="SPREAD")
              .fault_tolerance(**SLOW_RESTARTS)
              .training(train_batch_size_per_learner=500, minibatch_size=250, num_epochs=2))
    algo = config.build_algo()
    yield algo
    if ray.is_initialized():  # else the cluster, and the runners with it, is gone already
        algo.stop()


def listening_addresses(processes: list[psutil.Process]) -> set[str]:
    addresses = set()
    for process in processes:
        try:
            addresses |= {c.laddr.ip for c in process.net_connections("inet")
                          if c.status == psutil.CONN_LISTEN}
        except psutil.NoSuchProcess:
            continue
    return addresses


def test_every_node_listens_on_loopback_only(cluster):
    nodes = {node["NodeName"]: node for node in ray.nodes() if node["Alive"]}
    assert sorted(nodes) == ["head", "worker-1"]
    assert {node["NodeManagerAddress"] for node in nodes.values()} == {"127.0.0.1"}
    assert nodes["worker-1"]["Resources"]["worker-1"] == 1 and nodes["head"]["Resources"]["CPU"] == 1
    head, worker = cluster.processes("head"), cluster.processes("worker-1")
    assert head and worker and not {p.pid for p in head} & {p.pid for p in worker}
    addresses = listening_addresses(head + worker)
    assert addresses and addresses <= LOOPBACK, addresses
    assert cluster.dashboard_url.startswith("http://127.0.0.1:")


def test_each_node_runs_rays_start_command_without_ray_serve(cluster):
    """ray_cli.py: a node's `ray start --block` lives as long as the node, so it must not load Ray
    Serve and pandas (+75 MB each) just because `ray serve` is installed."""
    for node in cluster.nodes.values():
        assert node.command[:3] == ["ray", "start", "--block"]
        libraries = Path(f"/proc/{node.process.pid}/maps").read_text()
        assert "/site-packages/ray/" in libraries  # it is Ray's CLI ...
        assert "/site-packages/pandas/" not in libraries  # ... without Serve's (pandas' C code)


def test_spread_runners_land_on_both_nodes(algo):
    assert sorted(algo.env_runner_group.get_node_names()) == ["head", "worker-1"]
    result = algo.train()
    assert result["env_runners"]["num_healthy_env_runners"] == 2


def test_losing_the_worker_node_is_survived_on_the_head(cluster, algo):
    assert sorted(algo.env_runner_group.get_node_names()) == ["head", "worker-1"]
    head = cluster.processes("head")
    steps_before = algo.train()["num_env_steps_sampled_lifetime"]
    cluster.stop_node("worker-1")
    # Exactly one node stopped: none of its processes is left, every process of the head runs.
    assert cluster.processes("worker-1") == [] and cluster.alive_nodes() == ["head"]
    assert all(process.is_running() for process in head)
    for _ in range(10):  # the runner of worker-1 comes back on the head within a few iterations
        result = algo.train()
        runners = result["env_runners"]
        if runners["num_healthy_env_runners"] == 2 and runners["num_env_runner_restarts"] >= 1:
            break
    assert runners["num_healthy_env_runners"] == 2 and runners["num_env_runner_restarts"] >= 1
    assert algo.env_runner_group.get_node_names() == ["head", "head"]
    result = algo.train()  # and training goes on with both runners
    assert result["num_env_steps_sampled_lifetime"] >= steps_before + 2 * 500
    assert math.isfinite(result["env_runners"]["episode_return_mean"])


def test_a_submitted_job_trains_on_a_new_worker_and_its_logs_are_read_back(cluster, algo,
                                                                             tmp_path):
    algo.stop()  # the head's CPU is free again
    assert cluster.add_worker(num_cpus=1) == "worker-2"
    client = JobSubmissionClient(cluster.dashboard_url)
    job_id = client.submit_job(entrypoint=(
        "python -m rlcourse train --algo ppo --num-env-runners 2 --num-envs-per-env-runner 2 "
        "--placement-strategy STRICT_SPREAD --stop-return 40 --max-iterations 30 --seed 0 "
        "--set lr=1e-3 train_batch_size_per_learner=2000 minibatch_size=250 num_epochs=6 "
        "'model_config={fcnet_hiddens: [64, 64]}' "
        f"--checkpoint-dir {tmp_path / 'checkpoint'}"))
    deadline = time.monotonic() + 240
    while not (status := client.get_job_status(job_id)).is_terminal():
        assert time.monotonic() < deadline, client.get_job_logs(job_id)
        time.sleep(1)
    logs = client.get_job_logs(job_id)
    assert status == JobStatus.SUCCEEDED, logs
    placement = next(line for line in logs.splitlines() if "runners on nodes" in line)
    assert "Ray cluster: 2 node(s)" in logs and "'head'" in placement and "'worker-2'" in placement
    assert "iter    1 | return" in logs and "done: reached return 40" in logs
    assert f"checkpoint: {tmp_path / 'checkpoint'}" in logs and (tmp_path / "checkpoint").is_dir()


def test_a_job_without_the_token_is_refused(cluster, tmp_path):
    marker = tmp_path / "ran"
    request = urllib.request.Request(
        f"{cluster.dashboard_url}/api/jobs/", method="POST",
        data=json.dumps({"entrypoint": f"touch {marker}"}).encode(),
        headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    client = JobSubmissionClient(cluster.dashboard_url)  # with the token: the same API answers
    assert all(str(marker) not in job.entrypoint for job in client.list_jobs())
    assert not marker.exists()


RAY_TIMED_OUT = "Exception: The current node timed out during startup. This could happen because..."


def fake_ray(tmp_path: Path, then: str) -> Path:
    """A `ray` command that records its arguments and, the first time, fails as `ray start` does when
    its node misses Ray's 30 s registration wait; after that it runs `then`."""
    script = tmp_path / "ray"
    script.write_text(f"""#!/bin/sh
echo "$@" >> {tmp_path}/calls
if [ ! -e {tmp_path}/failed ]; then touch {tmp_path}/failed; echo '{RAY_TIMED_OUT}'; exit 1; fi
{then}
""")
    script.chmod(0o755)
    return script


def test_a_worker_that_missed_rays_start_up_wait_is_started_once_more(cluster, tmp_path,
                                                                      monkeypatch, capfd):
    monkeypatch.setattr(rlcourse.course.cluster, "RAY_CLI", [str(fake_ray(
        tmp_path, then=f'exec {sys.executable} -m rlcourse.course.ray_cli "$@"'))])
    name = cluster.add_worker(num_cpus=1)
    assert name in cluster.alive_nodes()
    assert (tmp_path / "calls").read_text().count(f"--node-name={name}") == 2
    assert f"starting ['{name}'] once more" in capfd.readouterr().err
    cluster.stop_node(name)
    assert cluster.processes(name) == []


def test_teardown_leaves_no_process_of_the_cluster(cluster):
    processes = cluster.processes()
    assert len(processes) > 10  # Ray's processes of both running nodes
    cluster.shutdown()
    assert not ray.is_initialized()  # the driver was disconnected first
    assert cluster.processes() == [] and cluster.alive_nodes() == []
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)
    assert not cluster.temp_root.exists()


def test_a_node_that_fails_to_start_raises_with_its_log_and_leaves_nothing(tmp_path, monkeypatch):
    fake_ray = tmp_path / "ray"
    fake_ray.write_text("#!/bin/sh\necho 'cannot start: no room'\nexit 1\n")
    fake_ray.chmod(0o755)
    monkeypatch.setattr(rlcourse.course.cluster, "RAY_CLI", [str(fake_ray)])
    before = set(Path("/tmp").glob("rlc-*"))
    with pytest.raises(RuntimeError, match="'head' did not start(.|\n)*cannot start: no room"):
        LocalCluster(num_workers=1, verbose=False)
    assert set(Path("/tmp").glob("rlc-*")) == before  # its temp dirs are gone too


def test_a_head_that_misses_the_wait_twice_fails_after_one_more_start(tmp_path, monkeypatch, capfd):
    """The first start times out (Ray's 30 s wait): every node is stopped and started once more;
    the second fails too, and that error is raised, with nothing left behind."""
    monkeypatch.setattr(rlcourse.course.cluster, "RAY_CLI", [str(fake_ray(
        tmp_path, then="echo 'cannot start: no room'; exit 1"))])
    before = set(Path("/tmp").glob("rlc-*"))
    with pytest.raises(RuntimeError, match="'head' did not start(.|\n)*cannot start: no room"):
        LocalCluster(num_workers=1, verbose=False)
    calls = (tmp_path / "calls").read_text()
    assert calls.count("--node-name=head") == 2 and calls.count("--node-name=worker-1") == 2
    assert "starting ['head', 'worker-1'] once more" in capfd.readouterr().err
    assert set(Path("/tmp").glob("rlc-*")) == before


def test_train_job_options_become_the_config():
    args = build_parser().parse_args([
        "--algo", "impala", "--env", "Pendulum-v1", "--num-env-runners", "3",
        "--num-cpus-per-env-runner", "0.25", "--placement-strategy", "SPREAD", "--seed", "7"])
    config = build_config(args)
    assert isinstance(config, IMPALAConfig) and config.env == "Pendulum-v1"
    assert (config.num_env_runners, config.num_cpus_per_env_runner) == (3, 0.25)
    assert (config.placement_strategy, config.seed) == ("SPREAD", 7)
    assert config.lr == 5e-4  # the algorithm's own (RLlib's) defaults otherwise
    with pytest.raises(SystemExit):  # argparse rejects an unknown algorithm
        build_parser().parse_args(["--algo", "a3c"])


def test_train_job_set_changes_any_setting_through_its_setter():
    args = build_parser().parse_args([
        "--algo", "ppo", "--set", "lr=3e-3", "num_epochs=6", "use_kl_loss=false",
        "model_config={fcnet_hiddens: [64, 64], vf_share_layers: false}"])
    config = build_config(args)
    assert (config.lr, config.num_epochs, config.use_kl_loss) == (3e-3, 6, False)
    assert config.model_config["fcnet_hiddens"] == [64, 64]
    assert config.model_config["vf_share_layers"] is False
    with pytest.raises(ValueError, match="num_sgd_iter"):  # a misspelt name is named, with the fix
        build_config(build_parser().parse_args(["--set", "num_sgd_iter=6"]))
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        build_config(build_parser().parse_args(["--set", "lr"]))


def test_train_job_prints_one_readable_line_per_iteration():
    result = {"training_iteration": 3, "num_env_steps_sampled_lifetime": 6000,
              "env_runners": {"episode_return_mean": 51.25, "num_healthy_env_runners": 2,
                              "num_env_runner_restarts": 1}}
    line = format_result(result, elapsed_s=4.5)
    assert line == ("iter    3 | return    51.2 | env steps     6000 | "
                    "runners healthy 2 (restarts 1) |    4.5 s")
    assert isinstance(build_parser().parse_args([]), argparse.Namespace)
