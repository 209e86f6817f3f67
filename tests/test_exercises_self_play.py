"""check_self_play_mapping accepts a self-play mapping decided by the episode, and names each typical
mistake in its hint; the reference it falls back on works in a real MultiAgentEnvRunner."""

import itertools
import random
import zlib

import pytest
from helpers import small_ppo

import rlcourse.course.multi_agent_envs  # noqa: F401  (registers ConnectFour)
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.course.exercises import ExerciseError, check_self_play_mapping
from rlcourse.course.exercises.common import solution_source
from rlcourse.course.exercises.self_play import reference_self_play_mapping
from rlcourse.course.multi_agent_envs import ConnectFour
from rlcourse.env.multi_agent_env_runner import MultiAgentEnvRunner

pytestmark = pytest.mark.timeout(60)

OPPONENTS = ("main_v0", "main_v1", "main_v2")


def learners_mapping(*, side=lambda h: h % 2, opponent=lambda h: OPPONENTS[h // 2 % 3],
                     key=lambda episode: zlib.crc32(episode.id_.encode())):
    """A learner's answer built from parts; each keyword can make it wrong on purpose: `key` turns
    the episode into a number h, `side(h)` is main's player index, `opponent(h)` the other's id."""

    def self_play_mapping(agent_id, episode, **kwargs):
        h = key(episode)
        return "main" if agent_id == f"player_{side(h)}" else opponent(h)

    return self_play_mapping


def test_the_solution_passes_and_is_returned(capsys):
    namespace = {}
    exec(solution_source("self_play_mapping"), namespace)
    fn = namespace["self_play_mapping"]
    assert check_self_play_mapping(fn) is fn
    out = capsys.readouterr().out
    assert "Correct" in out and "main_v2" in out


def test_other_right_answers_pass():
    hexadecimal = learners_mapping(key=lambda episode: int(episode.id_, 16))
    seeded = learners_mapping(key=lambda episode: random.Random(episode.id_).getrandbits(32))
    for fn in (hexadecimal, seeded):
        assert check_self_play_mapping(fn) is fn
    # Another league: the checker's opponents, and the reference built for them.
    two = ("old", "older")
    fn = learners_mapping(opponent=lambda h: two[h // 2 % 2])
    assert check_self_play_mapping(fn, opponents=two) is fn
    reference = reference_self_play_mapping(two)
    assert check_self_play_mapping(reference, opponents=two) is reference


def test_the_stub_is_not_attempted_and_the_lesson_goes_on_with_a_working_mapping(capsys):
    def self_play_mapping(agent_id, episode, **kwargs):
        raise NotImplementedError("TODO: main on one side, a snapshot on the other")

    fallback = check_self_play_mapping(self_play_mapping)
    out = capsys.readouterr().out
    assert "Not attempted yet" in out and "show_solution('self_play_mapping')" in out
    assert "Correct" not in out
    assert check_self_play_mapping(fallback) is fallback
    assert "Correct" in capsys.readouterr().out


def by_call(choices):
    """A mapping that answers from `choices` in turn, whatever the agent and the episode."""
    answers = itertools.cycle(choices)
    return lambda agent_id, episode, **kwargs: next(answers)


def random_side(agent_id, episode, **kwargs):
    return "main" if agent_id == random.choice(["player_0", "player_1"]) else "main_v0"


def no_kwargs(agent_id, episode):
    return learners_mapping()(agent_id, episode)


def needs_worker(agent_id, episode, worker, **kwargs):
    return learners_mapping()(agent_id, episode)


def random_but_remembered():
    """A random draw per episode, cached by the id's text: the same answer every time in this
    process only. (Built in a function so that it is pickled by value, as a notebook's is.)"""
    drawn = {}

    def self_play_mapping(agent_id, episode, **kwargs):
        key = str(episode.id_)
        if key not in drawn:
            drawn[key] = (random.randrange(2), random.choice(OPPONENTS))
        side, opponent = drawn[key]
        return "main" if agent_id == f"player_{side}" else opponent

    return self_play_mapping


@pytest.mark.parametrize(("fn", "words"), [
    (learners_mapping(key=lambda episode: hash(str(episode.id_))), "in a new Python process"),
    (learners_mapping(key=lambda episode: hash(episode.id_.encode())), "in a new Python process"),
    (learners_mapping(key=lambda episode: hash(episode.id_[:8])), "in a new Python process"),
    (random_but_remembered(), "in a new Python process"),
], ids=["hash-of-a-str-copy", "hash-of-bytes", "hash-of-a-slice", "random-but-cached"])
def test_what_only_a_real_second_process_shows_is_rejected(fn, words):
    with pytest.raises(ExerciseError, match=words):
        check_self_play_mapping(fn)


def test_a_mapping_that_prints_passes_in_the_other_process_too():
    right = learners_mapping()

    def chatty(agent_id, episode, **kwargs):
        print("asked about", agent_id)
        return right(agent_id, episode)

    assert check_self_play_mapping(chatty) is chatty


def test_a_mapping_that_cannot_be_pickled_is_rejected():
    import threading

    lock = threading.Lock()

    def locked(agent_id, episode, **kwargs):
        with lock:
            return learners_mapping()(agent_id, episode)

    with pytest.raises(ExerciseError, match="cannot be pickled"):
        check_self_play_mapping(locked)


@pytest.mark.parametrize(("fn", "words"), [
    (learners_mapping(opponent=lambda h: ("main_v1", "main_v2", "main_v3")[h // 2 % 3]),
     "'main_v3', which is not one of the policies"),
    (learners_mapping(opponent=lambda h: "opponent"), "'opponent', which is not one of the"),
    (learners_mapping(opponent=lambda h: h // 2 % 3), "returned \\d \\(of type int\\)"),
    (lambda agent_id, episode, **kwargs: None, "returned None: a branch without `return`"),
    (lambda agent_id, episode, **kwargs: "main", "both players are 'main'"),
    (learners_mapping(opponent=lambda h: OPPONENTS[h % 3] if h % 7 else "main"),
     "both players are 'main'"),
    (learners_mapping(side=lambda h: 2), "neither player is 'main'"),
    (learners_mapping(side=lambda h: 0), "plays player_0 in all 400 episodes and never player_1"),
    (learners_mapping(side=lambda h: 1), "plays player_1 in all 400 episodes and never player_0"),
    (random_side, "Asked twice about the same episode"),
    (by_call(["main", "main_v0", "main", "main_v1"]), "Asked twice about the same episode"),
    (learners_mapping(opponent=lambda h: "main_v0"), "Only 'main_v0' ever plays against main"),
    (learners_mapping(opponent=lambda h: OPPONENTS[h % 2]), "'main_v2' never plays"),
    (learners_mapping(side=lambda h: int(h % 10 == 0)), "plays player_0 in 3.. of 400 episodes"),
    (learners_mapping(side=lambda h: int(h % 3 == 0)), "player_0 in 2.. of 400 episodes \\(6"),
    (learners_mapping(key=id), "depends on the Python object"),
    (learners_mapping(key=lambda episode: hash(episode.id_)), "another Python process's hash"),
    (no_kwargs, "takes no \\*\\*kwargs"),
    (needs_worker, "cannot be called as self_play_mapping\\(agent_id, episode\\)"),
    (lambda agent_id, episode, **kwargs: 1 / 0, "raised ZeroDivisionError"),
], ids=["typo-main_v3", "opponent", "not-a-string", "none", "main-both", "main-both-sometimes",
        "no-main", "always-player_0", "always-player_1", "random-per-call", "counter",
        "one-opponent", "two-of-three", "sides-90-10", "sides-67-33", "object-id", "salted-hash",
        "no-kwargs", "needs-worker", "raises"])
def test_each_mistake_is_rejected_with_its_hint(fn, words):
    with pytest.raises(ExerciseError, match=words):
        check_self_play_mapping(fn)


def test_a_league_without_snapshots_is_a_programming_error():
    with pytest.raises(ValueError, match="frozen snapshots"):
        check_self_play_mapping(learners_mapping(), opponents=("main", "main_v0"))


def test_the_reference_mapping_drives_a_real_runner():
    """In ConnectFour episodes sampled by a MultiAgentEnvRunner, one player is main and the other a
    snapshot, each agent's mapping fixed for its whole episode (chunks included)."""
    env = ConnectFour({"rows": 4, "cols": 4, "connect": 3})
    spaces = (env.get_observation_space("player_0"), env.get_action_space("player_0"))
    policies = {"main": None, **{o: RLModuleSpec(observation_space=spaces[0],
                                                  action_space=spaces[1]) for o in OPPONENTS}}
    config = (small_ppo().environment("ConnectFour", env_config={"rows": 4, "cols": 4, "connect": 3})
              .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=5)
              .rl_module(model_config={"fcnet_hiddens": [8]}).debugging(seed=0)
              .multi_agent(policies=policies, policy_mapping_fn=reference_self_play_mapping(),
                           policies_to_train={"main"}))
    runner = MultiAgentEnvRunner(config)
    try:
        mappings: dict[str, dict] = {}
        for _ in range(40):
            for chunk in runner.sample():
                seen = mappings.setdefault(chunk.id_, {})
                for agent, module in chunk.agent_to_module_mapping.items():
                    assert seen.setdefault(agent, module) == module
    finally:
        runner.stop()
    assert len(mappings) > 50
    for mapping in mappings.values():
        if len(mapping) == 2:
            assert sorted(m == "main" for m in mapping.values()) == [False, True]
    sides = {agent for m in mappings.values() for agent, module in m.items() if module == "main"}
    used = {module for m in mappings.values() for module in m.values()}
    assert sides == {"player_0", "player_1"} and used == {"main", *OPPONENTS}
