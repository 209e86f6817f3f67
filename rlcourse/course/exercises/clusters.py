"""Exercises of lesson 06 (Ray clusters): a placement that survives losing a node, and the command
that makes a new machine join a cluster.

Both answers are functions: the command is built for several heads, CPU counts and resource names
(so an address typed from the printout fails), and the config is checked field by field: runners,
evaluation runners and learner actors must fit into the CPUs left after the loss, the restart budget
must allow a restart, no GPU and no custom resource may be asked for (a CPU given as one is named as
such). Both checkers return the learner's function. Stubs (NotImplementedError) are reported as not
attempted; the lesson goes on with the references.

Review, what answer would still pass that should not? The config is read, not placed: memory, an
env that cannot be made on the head, and num_cpus_for_main_process (the driver is outside the
placement group here) are not checked. A worker command with extra flags (--block) or a resource
amount other than 1 passes: any positive amount lets actors ask for the resource.
"""

import json
import math
import shlex
from collections.abc import Callable, Mapping

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed

__all__ = ["check_survivable_placement", "check_worker_start_command", "reference_placement_config",
           "reference_worker_start_command"]

# What the exercise asks for: two runners with four CartPoles each.
ENV, NUM_RUNNERS, NUM_ENVS = "CartPole-v1", 2, 4


def reference_placement_config():
    """rlcourse's answer: two half-CPU runners, spread over the nodes by a SPREAD placement group."""
    from rlcourse import PPOConfig

    return (PPOConfig()
            .environment(ENV)
            .env_runners(num_env_runners=NUM_RUNNERS, num_envs_per_env_runner=NUM_ENVS,
                         num_cpus_per_env_runner=0.5)
            .resources(placement_strategy="SPREAD")
            .debugging(seed=0))


def reference_worker_start_command(head_address: str, num_cpus: int, resource: str) -> str:
    """rlcourse's answer: `ray start` joining `head_address` with `num_cpus` and one `resource`."""
    resources = json.dumps({resource: 1})
    return f"ray start --address={head_address} --num-cpus={num_cpus} --resources='{resources}'"


@exercise("survivable_placement", stub="placement_config",
          fallback="rlcourse's reference_placement_config()",
          reference=lambda fn, node_cpus, lost_node: reference_placement_config)
def check_survivable_placement(placement_config: Callable, node_cpus: Mapping[str, float],
                               lost_node: str) -> Callable:
    """`placement_config()` must return a config of two runners with four CartPoles each that start
    on every node of `node_cpus` (node name -> CPUs) and can all run again on the other nodes once
    `lost_node` is gone. Returns `placement_config` when it is right."""
    from rlcourse import PPOConfig

    config = call(placement_config)
    if not isinstance(config, PPOConfig):
        raise ExerciseError(f"placement_config() returned {config!r:.80}; return a PPOConfig, the "
                            "config itself (PPOConfig().environment(...).env_runners(...)...).")
    try:
        config.validate()
    except ValueError as e:
        raise ExerciseError(f"The config does not validate, so no Algorithm could be built from "
                            f"it: {e}") from None
    if config.env != ENV:
        raise ExerciseError(f"The runners should step {ENV}: .environment({ENV!r}) "
                            f"(the config's env is {config.env!r}).")
    if config.num_envs_per_env_runner != NUM_ENVS:
        raise ExerciseError(f"Each runner should step {NUM_ENVS} CartPoles: "
                            f"env_runners(num_envs_per_env_runner={NUM_ENVS}) (you have "
                            f"{config.num_envs_per_env_runner}).")
    runners, cpus = config.num_env_runners, config.num_cpus_per_env_runner
    if runners < len(node_cpus):
        raise ExerciseError(f"{runners} runner(s) cannot run on all {len(node_cpus)} nodes: ask for "
                            "at least one runner per node (env_runners(num_env_runners=...)).")
    strategy = config.placement_strategy
    if strategy is None:
        raise ExerciseError("Without a placement group, Ray's default (hybrid) scheduler prefers "
                            "the driver's node until about half of its CPUs are reserved, and "
                            "only then spreads: nothing makes sure that every node gets a runner. "
                            "Which resources(placement_strategy=...) spreads them?")
    if strategy in ("PACK", "STRICT_PACK"):
        raise ExerciseError(f"{strategy} packs the runners' bundles onto as few nodes as possible: "
                            "they would not use every node.")
    if strategy == "STRICT_SPREAD":
        raise ExerciseError(f"STRICT_SPREAD needs a different node for every bundle, also when Ray "
                            f"re-places the bundles of {lost_node!r}: with fewer nodes than runners "
                            "they cannot all come back. Is there a strategy that spreads when it can?")
    custom = dict(config.custom_resources_per_env_runner)
    standard = [name for name in custom if name.upper() in ("CPU", "GPU")]
    if standard:
        raise ExerciseError(f"custom_resources_per_env_runner={custom} gives {standard[0]!r} as a "
                            "custom resource; CPUs and GPUs are Ray's standard resources, set with "
                            "env_runners(num_cpus_per_env_runner=..., num_gpus_per_env_runner=...). "
                            "Leave custom_resources_per_env_runner empty.")
    pinned = [name for name in custom if name in node_cpus]
    if pinned:
        raise ExerciseError(f"custom_resources_per_env_runner pins every runner to {pinned[0]!r}: "
                            "a pinned runner can never move to another node. Leave it empty.")
    if custom:  # a node offers only its own name
        raise ExerciseError(f"custom_resources_per_env_runner asks for {next(iter(custom))!r}, "
                            f"which none of the nodes {sorted(node_cpus)} offers: the runners "
                            "could not start anywhere. Leave it empty.")
    gpus = [(setting, getattr(config, setting)) for setting in ("num_gpus_per_env_runner",
                                                                "num_gpus_per_learner")
            if getattr(config, setting) > 0]
    if gpus:  # (a learner in the driver's process, num_learners=0, would find no GPU either)
        raise ExerciseError(f"{gpus[0][0]}={gpus[0][1]:g}, but these nodes have CPUs only: nothing "
                            "could use a GPU here. Leave it at 0.")
    if not config.restart_failed_env_runners:
        raise ExerciseError("With fault_tolerance(restart_failed_env_runners=False) Ray does not "
                            "restart the runners of a lost node.")
    if config.max_num_env_runner_restarts < 1:
        raise ExerciseError("fault_tolerance(max_num_env_runner_restarts=0) leaves the runners no "
                            "restart: the one on the lost node would stay dead. Keep the default "
                            "(1000), or at least one restart per runner that can be lost.")
    left = sum(n for name, n in node_cpus.items() if name != lost_node)
    actors = runners + config.evaluation_num_env_runners  # evaluation runners need CPUs too
    learners = config.num_learners * config.num_cpus_per_learner  # learner actors (0: the driver's)
    if actors * cpus + learners > left + 1e-9:
        also = (f" + {config.num_learners} learner(s) x {config.num_cpus_per_learner:g} CPU"
                if config.num_learners else "")
        raise ExerciseError(f"After losing {lost_node!r}, {left:g} CPU(s) are left for {actors} "
                            f"runners x {cpus:g} CPU{also} = {actors * cpus + learners:g}: use "
                            "fewer runners or a fraction of a CPU each "
                            "(env_runners(num_cpus_per_env_runner=...))"
                            + (", and learn in the driver (learners(num_learners=0))"
                               if config.num_learners else "") + ".")
    if runners != NUM_RUNNERS:
        raise ExerciseError(f"The exercise asks for {NUM_RUNNERS} runners "
                            f"(env_runners(num_env_runners={NUM_RUNNERS})), not {runners}.")
    passed(f"{runners} runners x {cpus:g} CPU, spread over {len(node_cpus)} nodes by SPREAD; "
           f"without {lost_node!r} they still fit into the {left:g} CPU(s) left.")
    return placement_config


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


# (head address, CPUs, resource) the command is built for, beside the lesson's own head.
OTHER_MACHINES = [("10.0.0.5:6379", 16, "gpu-box"), ("192.168.1.20:6380", 4, "big-box")]


@exercise("worker_start_command", stub="worker_start_command",
          fallback="rlcourse's reference_worker_start_command",
          reference=lambda fn, head_address, num_cpus=8, resource="big-box":
          reference_worker_start_command)
def check_worker_start_command(worker_start_command: Callable[[str, int, str], str],
                               head_address: str, num_cpus: int = 8,
                               resource: str = "big-box") -> Callable[[str, int, str], str]:
    """`worker_start_command(head_address, num_cpus, resource)` must return the shell command that
    makes a machine with `num_cpus` CPUs join the cluster whose head is at `head_address`, offering
    one unit of the custom resource `resource`. Checked for the lesson's head and two other
    machines; returns the function when it is right."""
    for machine in [(head_address, num_cpus, resource), *OTHER_MACHINES]:
        command = call(worker_start_command, *machine, where=f"for {machine}")
        if not isinstance(command, str):
            raise ExerciseError(f"Return the command as one string, got {type(command).__name__}.")
        _check_command(command, *machine)
    passed(f"for example {worker_start_command(head_address, num_cpus, resource)!r}: the machine "
           f"joins {head_address} with {num_cpus} CPUs and one {resource!r}; actors that ask for "
           f"{resource!r} run only there.")
    return worker_start_command


def _check_command(command: str, head_address: str, num_cpus: int, resource: str) -> None:
    where = f"(head {head_address}, {num_cpus} CPUs, resource {resource!r}; your command: {command})"
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
                            f"(you gave {options.get('--address')!r}) {where}. Build it from the "
                            "head_address argument.")
    try:
        resources = json.loads(options.get("--resources", "{}"))
    except json.JSONDecodeError:
        raise ExerciseError("--resources takes a JSON object in single quotes, e.g. "
                            "--resources='{\"name\": 1}' (JSON strings use double quotes).") from None
    if isinstance(resources, dict) and {"CPU", "GPU"} & {str(k).upper() for k in resources}:
        raise ExerciseError("--resources is for custom resources only: `ray start` refuses 'CPU' or "
                            "'GPU' in it. Give CPUs with --num-cpus (and GPUs with --num-gpus).")
    if options.get("--num-cpus") != str(num_cpus):
        raise ExerciseError(f"Tell Ray how many CPUs the machine offers: --num-cpus={num_cpus} "
                            f"{where}.")
    amount = resources.get(resource) if isinstance(resources, dict) else None
    if not isinstance(amount, int | float) or not math.isfinite(amount) or amount <= 0:
        raise ExerciseError(f"Offer the custom resource with --resources='{{\"{resource}\": 1}}', "
                            f"so that actors can ask for {resource!r} {where}.")
