"""Exercises of lesson 06 (Ray clusters): a placement that survives losing a node, and the command
that makes a new machine join a cluster."""

import json
import math
import shlex
from collections.abc import Mapping

from rlcourse.course.exercises.common import ExerciseError, passed

__all__ = ["check_survivable_placement", "check_worker_start_command"]


def check_survivable_placement(config, node_cpus: Mapping[str, float], lost_node: str) -> None:
    """`config` must start its runners on every node of `node_cpus` (node name -> CPUs) and let all
    of them run again on the other nodes once `lost_node` is gone."""
    runners, cpus = config.num_env_runners, config.num_cpus_per_env_runner
    if runners < len(node_cpus):
        raise ExerciseError(f"{runners} runner(s) cannot run on all {len(node_cpus)} nodes: ask for "
                            "at least one runner per node (env_runners(num_env_runners=...)).")
    strategy = config.placement_strategy
    if strategy is None:
        raise ExerciseError("Without a placement group Ray fills the driver's node first, so the "
                            "runners may all land on the head. Which resources(placement_strategy=...) "
                            "spreads them?")
    if strategy in ("PACK", "STRICT_PACK"):
        raise ExerciseError(f"{strategy} packs the runners' bundles onto as few nodes as possible: "
                            "they would not use every node.")
    if strategy == "STRICT_SPREAD":
        raise ExerciseError(f"STRICT_SPREAD needs a different node for every bundle, also when Ray "
                            f"re-places the bundles of {lost_node!r}: with fewer nodes than runners "
                            "they cannot all come back. Is there a strategy that spreads when it can?")
    pinned = [name for name in config.custom_resources_per_env_runner if name in node_cpus]
    if pinned:
        raise ExerciseError(f"custom_resources_per_env_runner pins every runner to {pinned[0]!r}: "
                            "a pinned runner can never move to another node. Leave it empty.")
    if not config.restart_failed_env_runners:
        raise ExerciseError("With fault_tolerance(restart_failed_env_runners=False) Ray does not "
                            "restart the runners of a lost node.")
    left = sum(n for name, n in node_cpus.items() if name != lost_node)
    if runners * cpus > left + 1e-9:
        raise ExerciseError(f"After losing {lost_node!r}, {left:g} CPU(s) are left for {runners} "
                            f"runners x {cpus:g} CPU = {runners * cpus:g}: use fewer runners or a "
                            "fraction of a CPU each (env_runners(num_cpus_per_env_runner=...)).")
    passed(f"{runners} runners x {cpus:g} CPU, spread over {len(node_cpus)} nodes by SPREAD; "
           f"without {lost_node!r} they still fit into the {left:g} CPU(s) left.")


def _options(tokens: list[str]) -> dict[str, str]:
    """--name=value and --name value pairs (a flag alone gets "")."""
    options, i = {}, 0
    while i < len(tokens):
        name, equals, value = tokens[i].partition("=")
        if name.startswith("--"):
            if not equals and i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                value, i = tokens[i + 1], i + 1
            options[name] = value
        i += 1
    return options


def check_worker_start_command(command: str, head_address: str, num_cpus: int = 8,
                               resource: str = "big-box") -> None:
    """`command`: the shell command that makes a machine with `num_cpus` CPUs join the cluster whose
    head is at `head_address`, offering one unit of the custom resource `resource`."""
    try:
        tokens = shlex.split(command)
    except ValueError as e:
        raise ExerciseError(f"The shell cannot split this command ({e}): check the quotes.") from None
    if len(tokens) < 2 or not tokens[0].endswith("ray") or tokens[1] != "start":
        raise ExerciseError("A machine joins a cluster with `ray start ...`.")
    options = _options(tokens[2:])
    if "--head" in options:
        raise ExerciseError("--head starts a new cluster; a machine joins one with --address.")
    if options.get("--address") != head_address:
        raise ExerciseError(f"Give the head's address: --address={head_address} "
                            f"(you gave {options.get('--address')!r}).")
    if options.get("--num-cpus") != str(num_cpus):
        raise ExerciseError(f"Tell Ray how many CPUs the machine offers: --num-cpus={num_cpus}.")
    try:
        resources = json.loads(options.get("--resources", "{}"))
    except json.JSONDecodeError:
        raise ExerciseError("--resources takes a JSON object in single quotes, e.g. "
                            "--resources='{\"name\": 1}' (JSON strings use double quotes).") from None
    amount = resources.get(resource) if isinstance(resources, dict) else None
    if not isinstance(amount, int | float) or not math.isfinite(amount) or amount <= 0:
        raise ExerciseError(f"Offer the custom resource with --resources='{{\"{resource}\": 1}}', "
                            f"so that actors can ask for {resource!r}.")
    passed(f"the machine joins {head_address} with {num_cpus} CPUs and {{{resource!r}: {amount:g}}}; "
           f"actors that ask for {resource!r} run only there.")
