"""The cluster checkers accept right answers and name the typical mistakes."""

import pytest
from helpers import small_ppo

from rlcourse.course.exercises import (
    ExerciseError,
    check_survivable_placement,
    check_worker_start_command,
    reference_worker_start_command,
)

NODES = {"head": 1, "worker-1": 1}
HEAD = "127.0.0.1:6379"


def runners(n=2, cpus=0.5, strategy="SPREAD", pin=None, env="CartPole-v1", envs=4):
    config = (small_ppo().environment(env)
              .env_runners(num_env_runners=n, num_cpus_per_env_runner=cpus,
                           num_envs_per_env_runner=envs,
                           custom_resources_per_env_runner=pin or {})
              .resources(placement_strategy=strategy))
    return lambda: config


def test_a_spread_placement_that_fits_on_the_head_passes(capsys):
    answer = runners()
    assert check_survivable_placement(answer, NODES, lost_node="worker-1") is answer
    assert "Correct" in capsys.readouterr().out


def with_learners(n, cpus=1.0):  # learner actors need CPUs on the surviving node too
    return lambda: runners()().learners(num_learners=n, num_cpus_per_learner=cpus)


def no_restart_budget():  # restarts switched on, but none allowed
    return runners()().fault_tolerance(max_num_env_runner_restarts=0)


def cpu_as_custom_resource():  # a CPU asked for as a custom resource, not num_cpus_per_env_runner
    return runners(pin={"CPU": 0.5})()


def gpu_runners():  # the nodes have CPUs only
    return runners()().env_runners(num_gpus_per_env_runner=0.5)


def impala_runners():  # the same settings on another algorithm's config
    from rlcourse import IMPALAConfig

    config = runners()()
    return IMPALAConfig().environment(config.env).env_runners(
        num_env_runners=config.num_env_runners, num_envs_per_env_runner=config.num_envs_per_env_runner,
        num_cpus_per_env_runner=config.num_cpus_per_env_runner).resources(
        placement_strategy=config.placement_strategy)


@pytest.mark.parametrize(("answer", "hint"), [
    (runners(1), "at least one runner per node"),
    (runners(strategy=None), "prefers the driver's node"),
    (runners(strategy="PACK"), "packs"),
    (runners(strategy="STRICT_PACK"), "packs"),
    (runners(strategy="STRICT_SPREAD"), "cannot all come back"),
    (runners(pin={"worker-1": 0.5}), "pins every runner to 'worker-1'"),
    (runners(cpus=1), r"1 CPU\(s\) are left for 2 runners x 1 CPU"),
    (runners(4, 0.5), "fraction of a CPU"),
    (runners(4, 0.25), "asks for 2 runners"),
    (runners(envs=1), "num_envs_per_env_runner=4"),
    (runners(env="Pendulum-v1"), "CartPole-v1"),
    (lambda: runners()().fault_tolerance(restart_failed_env_runners=False), "does not restart"),
    (lambda: None, "return a PPOConfig, the config itself"),
    (with_learners(1), r"1 learner\(s\) x 1 CPU.*num_learners=0"),
    (with_learners(2, 0.25), r"2 learner\(s\) x 0.25 CPU"),
    (no_restart_budget, "max_num_env_runner_restarts=0"),
    (cpu_as_custom_resource, "standard resources.*num_cpus_per_env_runner"),
    (gpu_runners, "CPUs only"),
    (lambda: runners()().learners(num_gpus_per_learner=1), "num_gpus_per_learner=1.*CPUs only"),
    (impala_runners, "return a PPOConfig"),
], ids=["one-runner", "no-placement-group", "pack", "strict-pack", "strict-spread", "pinned",
        "whole-cpus", "too-many-runners", "four-small-runners", "one-env-each", "wrong-env",
        "no-restarts", "returns-nothing", "a-learner-actor", "two-small-learners",
        "no-restart-budget", "cpu-as-custom-resource", "gpu-runners", "gpu-for-the-local-learner",
        "an-impala-config"])
def test_survivable_placement_rejects_each_mistake_with_its_hint(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_survivable_placement(answer, NODES, lost_node="worker-1")


def command(template):
    return lambda head_address, num_cpus, resource: template.format(
        head=head_address, cpus=num_cpus, resource=resource)


@pytest.mark.parametrize("answer", [
    reference_worker_start_command,
    command("ray start --address {head} --num-cpus {cpus} --resources "
            """'{{"{resource}": 2}}' --block"""),
    command("/opt/venv/bin/ray start --num-cpus={cpus} "
            """--resources='{{"{resource}": 0.5}}' --address={head}"""),
])
def test_a_right_worker_command_passes(answer, capsys):
    assert check_worker_start_command(answer, HEAD) is answer
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize(("answer", "hint"), [
    (command("ray up cluster.yaml"), "ray start"),
    (command("ray start --head --address={head} --num-cpus={cpus}"), "--head starts a new cluster"),
    (command("ray start --address=127.0.0.1:8265 --num-cpus={cpus}"), "head's address"),
    (command(f"""ray start --address={HEAD} --num-cpus=8 --resources='{{{{"big-box": 1}}}}'"""),
     "Build it from the head_address argument"),
    (command("ray start --address={head}"), "--num-cpus=8"),
    (command("ray start --address={head} --num-cpus={cpus}"), "custom resource"),
    (command("""ray start --address={head} --num-cpus={cpus} --resources='{{"other": 1}}'"""),
     "big-box"),
    (command("ray start --address={head} --num-cpus={cpus} --resources='{{'{resource}': 1}}'"),
     "JSON"),
    (command("""ray start --address={head} --num-cpus={cpus} --resources='{{"{resource}": 1}}"""),
     "quotes"),
    (lambda head_address, num_cpus, resource: ["ray", "start"], "one string"),
    (command("""ray start --address={head} --resources='{{"CPU": {cpus}, "{resource}": 1}}'"""),
     "refuses 'CPU'.*--num-cpus"),
    (lambda head_address, num_cpus, resource: reference_worker_start_command(HEAD, num_cpus,
                                                                             resource),
     "Build it from the head_address argument"),
    (lambda head_address, num_cpus, resource: reference_worker_start_command(head_address, 8,
                                                                             resource),
     "--num-cpus=16"),
    (lambda head_address, num_cpus, resource: reference_worker_start_command(head_address,
                                                                             num_cpus, "big-box"),
     "'gpu-box'"),
], ids=["ray-up", "head", "dashboard-port", "typed-address", "no-cpus", "no-resource",
        "other-resource", "single-quoted-json", "unclosed-quote", "a-list",
        "cpu-as-custom-resource", "lessons-head", "lessons-cpus", "lessons-resource"])
def test_worker_start_command_rejects_each_mistake_with_its_hint(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_worker_start_command(answer, HEAD)


def test_the_cluster_stubs_are_not_attempted(capsys):
    def placement_config():
        raise NotImplementedError("TODO")

    def worker_start_command(head_address, num_cpus, resource):
        raise NotImplementedError("TODO")

    reference = check_survivable_placement(placement_config, NODES, lost_node="worker-1")
    assert reference().num_env_runners == 2
    assert check_worker_start_command(worker_start_command, HEAD) is reference_worker_start_command
    assert capsys.readouterr().out.count("Not attempted yet") == 2


@pytest.mark.parametrize(("answer", "hint"), [
    (runners(strategy="spread"), "use one of"),
    (runners(strategy="SPREADS"), "use one of"),
    (runners(cpus=0), "needs each runner to reserve something"),
    (runners(cpus=-0.5), "num_cpus_per_env_runner=-0.5"),
], ids=["lowercase-strategy", "misspelt-strategy", "zero-cpus", "negative-cpus"])
def test_survivable_placement_rejects_a_config_that_does_not_validate(answer, hint):
    with pytest.raises(ExerciseError, match=f"does not validate.*{hint}"):
        check_survivable_placement(answer, NODES, lost_node="worker-1")


def test_survivable_placement_rejects_a_custom_resource_no_node_offers():
    with pytest.raises(ExerciseError, match="asks for 'big-box', which none of the nodes"):
        check_survivable_placement(runners(pin={"big-box": 0.5}), NODES, lost_node="worker-1")


def test_survivable_placement_rejects_evaluation_runners_that_do_not_fit():
    answer = lambda: runners()().evaluation(evaluation_num_env_runners=2)  # noqa: E731
    with pytest.raises(ExerciseError, match=r"1 CPU\(s\) are left for 4 runners x 0.5 CPU"):
        check_survivable_placement(answer, NODES, lost_node="worker-1")


def test_worker_start_command_rejects_cpus_in_the_custom_resources():
    answer = command("""ray start --address={head} --num-cpus={cpus} """
                     """--resources='{{"{resource}": 1, "CPU": {cpus}}}'""")
    with pytest.raises(ExerciseError, match="refuses 'CPU' or 'GPU'.*--num-cpus"):
        check_worker_start_command(answer, HEAD)
