"""The cluster checkers accept right answers and name the typical mistakes."""

import pytest

from rlcourse import PPOConfig
from rlcourse.course.exercises import (
    ExerciseError,
    check_survivable_placement,
    check_worker_start_command,
)

NODES = {"head": 1, "worker-1": 1}
HEAD = "127.0.0.1:6379"


def runners(n=2, cpus=0.5, strategy="SPREAD", pin=None):
    return (PPOConfig().env_runners(num_env_runners=n, num_cpus_per_env_runner=cpus,
                                    custom_resources_per_env_runner=pin or {})
            .resources(placement_strategy=strategy))


def test_a_spread_placement_that_fits_on_the_head_passes(capsys):
    check_survivable_placement(runners(), NODES, lost_node="worker-1")
    assert "Correct" in capsys.readouterr().out
    check_survivable_placement(runners(4, 0.25), NODES, lost_node="worker-1")


@pytest.mark.parametrize(("config", "hint"), [
    (runners(1), "at least one runner per node"),
    (runners(strategy=None), "fills the driver's node first"),
    (runners(strategy="PACK"), "packs"),
    (runners(strategy="STRICT_PACK"), "packs"),
    (runners(strategy="STRICT_SPREAD"), "cannot all come back"),
    (runners(pin={"worker-1": 0.5}), "pins every runner to 'worker-1'"),
    (runners(cpus=1), r"1 CPU\(s\) are left for 2 runners x 1 CPU"),
    (runners(4, 0.5), "fraction of a CPU"),
    (runners().fault_tolerance(restart_failed_env_runners=False), "does not restart"),
])
def test_placements_that_do_not_survive_get_a_hint(config, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_survivable_placement(config, NODES, lost_node="worker-1")


@pytest.mark.parametrize("command", [
    f"""ray start --address={HEAD} --num-cpus=8 --resources='{{"big-box": 1}}'""",
    f"""ray start --address {HEAD} --num-cpus 8 --resources '{{"big-box": 2}}' --block""",
    f"""/opt/venv/bin/ray start --num-cpus=8 --resources='{{"big-box": 0.5}}' --address={HEAD}""",
])
def test_a_right_worker_command_passes(command, capsys):
    check_worker_start_command(command, HEAD)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize(("command", "hint"), [
    ("ray up cluster.yaml", "ray start"),
    (f"ray start --head --address={HEAD} --num-cpus=8", "--head starts a new cluster"),
    ("ray start --address=127.0.0.1:8265 --num-cpus=8", "head's address"),
    (f"ray start --address={HEAD}", "--num-cpus=8"),
    (f"ray start --address={HEAD} --num-cpus=8", "custom resource"),
    (f"""ray start --address={HEAD} --num-cpus=8 --resources='{{"other": 1}}'""", "big-box"),
    (f"ray start --address={HEAD} --num-cpus=8 --resources='{{'big-box': 1}}'", "JSON"),
    (f"""ray start --address={HEAD} --num-cpus=8 --resources='{{"big-box": 1}}""", "quotes"),
])
def test_wrong_worker_commands_get_a_hint(command, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_worker_start_command(command, HEAD)
