"""deploy/: the `ray up` cluster, the KubeRay RayJob and the image agree with each other and with
requirements.lock (no cloud calls: the files are only parsed and validated)."""

import re
import shlex
from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config
from test_lock import LOCK

from rlcourse.course.train_job import build_parser

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
# The AWS machines of cluster.yaml: (vCPUs, GiB of memory).
INSTANCE_SIZES = {"m5.large": (2, 8), "m5.xlarge": (4, 16), "m5.2xlarge": (8, 32)}


@pytest.fixture(scope="module")
def cluster():
    return yaml.safe_load((DEPLOY / "cluster.yaml").read_text())


@pytest.fixture(scope="module")
def rayjob():
    return yaml.safe_load((DEPLOY / "rayjob.yaml").read_text())


def base_image() -> str:
    return re.search(r"^FROM (\S+)", (DEPLOY / "Dockerfile").read_text(), re.M).group(1)


def containers(rayjob) -> dict[str, dict]:
    spec = rayjob["spec"]["rayClusterSpec"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    (workers,) = spec["workerGroupSpecs"]
    return {"head": head, "worker": workers["template"]["spec"]["containers"][0]}


def gib(quantity: str) -> float:
    assert quantity.endswith("Gi"), quantity
    return float(quantity[:-2])


def test_the_image_is_built_on_the_locked_ray_and_python():
    assert base_image() == f"rayproject/ray:{LOCK['ray']}-py311-cpu"
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.lock" in dockerfile  # as `make install`


def test_cluster_yaml_is_a_valid_ray_up_config(cluster):
    config = prepare_config(cluster)  # fills in Ray's AWS defaults, as `ray up` does
    validate_config(config)  # Ray's own JSON schema for cluster configs
    assert config["head_node_type"] in config["available_node_types"]
    head_start = " ".join(cluster["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head_start  # reached only through `ray dashboard`
    assert any("ray start --address=$RAY_HEAD_IP:6379" in c
               for c in cluster["worker_start_ray_commands"])


def test_rayjob_has_what_kuberay_requires(rayjob):
    assert rayjob["apiVersion"] == "ray.io/v1" and rayjob["kind"] == "RayJob"
    spec = rayjob["spec"]
    assert spec["entrypoint"] and spec["shutdownAfterJobFinishes"] is True
    cluster_spec = spec["rayClusterSpec"]
    assert cluster_spec["rayVersion"] == LOCK["ray"]
    (group,) = cluster_spec["workerGroupSpecs"]
    assert group["groupName"] and group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    for container in containers(rayjob).values():
        assert container["name"] and container["image"]
        resources = container["resources"]
        assert resources["requests"] == resources["limits"]  # a fixed share of the machine
    for params in (cluster_spec["headGroupSpec"]["rayStartParams"], group["rayStartParams"]):
        assert all(isinstance(value, str) for value in params.values())  # KubeRay wants strings


def test_both_clusters_run_the_same_image_and_shape(cluster, rayjob):
    images = {cluster["docker"]["image"]} | {c["image"] for c in containers(rayjob).values()}
    assert len(images) == 1, images
    nodes = cluster["available_node_types"]
    head, worker = nodes[cluster["head_node_type"]], nodes["worker"]
    spec = rayjob["spec"]["rayClusterSpec"]
    (group,) = spec["workerGroupSpecs"]
    pods = containers(rayjob)
    # Logical CPUs: none on the head, the machine's vCPUs on each worker.
    assert head["resources"]["CPU"] == int(spec["headGroupSpec"]["rayStartParams"]["num-cpus"]) == 0
    assert worker["resources"]["CPU"] == int(pods["worker"]["resources"]["limits"]["cpu"])
    assert worker["min_workers"] == worker["max_workers"] == group["replicas"] == group["maxReplicas"]
    # Pods as large as the machines.
    for name, node in (("head", head), ("worker", worker)):
        cpus, memory = INSTANCE_SIZES[node["node_config"]["InstanceType"]]
        limits = pods[name]["resources"]["limits"]
        assert (int(limits["cpu"]), gib(limits["memory"])) == (cpus, memory), name
    assert worker["resources"]["CPU"] == INSTANCE_SIZES[worker["node_config"]["InstanceType"]][0]


def test_the_job_runs_rlcourse_train_and_fits_into_the_workers(cluster, rayjob):
    command = shlex.split(rayjob["spec"]["entrypoint"])
    assert command[:4] == ["python", "-m", "rlcourse", "train"]
    args = build_parser().parse_args(command[4:])  # every option exists, with a valid value
    assert args.placement_strategy == "SPREAD" and args.stop_return is not None
    worker = cluster["available_node_types"]["worker"]
    cpus = worker["resources"]["CPU"] * worker["max_workers"]
    assert args.num_env_runners * args.num_cpus_per_env_runner <= cpus
    readme = (DEPLOY / "README.md").read_text()
    assert "--num-env-runners 16 --num-cpus-per-env-runner 1 --placement-strategy SPREAD" in readme
