"""Lesson 10's exercise: a self-play `policy_mapping_fn` for ConnectFour against a league of snapshots.

The learner writes

    self_play_mapping(agent_id, episode, **kwargs) -> module id

for the policies {"main", "main_v0", "main_v1", "main_v2"}: in every episode "main" (the module
being trained) plays exactly one of "player_0" and "player_1", the episode decides which, and the
other player is one of the frozen snapshots. `check_self_play_mapping` asks it about several hundred
MultiAgentEpisodes of its own (both agents; again in the other order; on each episode's next chunk;
as a stand-in process whose str hash() is salted otherwise, and in a real second Python process:
the mapping is cloudpickled, as Ray ships it to a runner, before this process has seen the episodes
asked there) and names the typical mistake it finds. The real process is what catches hash() of a
plain str copy, of bytes, or of a slice, and a random draw cached by the id's text: the stand-in's
salt lives only on its own str subclass, and a cache would be shared by the stand-in. The stub is
reported as not attempted; the lesson goes on with `reference_self_play_mapping`.

Review, what answer would still pass that should not? One keyed on something that is stable for
minutes but not across runs (the wall clock's hour mixed into the id's hash), and one that uses
only part of the id (its first hex digit), which is still a fair, stable choice; and one whose
snapshot depends on main's side (on player_0 main meets only main_v0), since the sides and the
snapshots are each checked alone.
"""

import inspect
import os
import pickle
import subprocess
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed
from rlcourse.env.multi_agent_episode import MultiAgentEpisode

__all__ = ["check_self_play_mapping", "reference_self_play_mapping"]

MAIN = "main"
PLAYERS = ("player_0", "player_1")
OPPONENTS = ("main_v0", "main_v1", "main_v2")
NUM_EPISODES = 400
BALANCE = (0.4, 0.6)  # main's share of player_0; a fair coin over 400 episodes: 0.5 +- 0.025
ELSEWHERE_EPISODES = 100  # asked about in a real second Python process
ELSEWHERE_TIMEOUT_S = 120  # starting Python and importing rlcourse's episode takes about a second
Mapping = Callable[..., Any]


def reference_self_play_mapping(opponents: Sequence[str] = OPPONENTS) -> Mapping:
    """The answer for the league `opponents`: a CRC-32 of the episode's id (the same number in every
    process) picks main's side with its lowest bit and the opponent with the rest."""
    league = tuple(opponents)

    def self_play_mapping(agent_id, episode, **kwargs):
        h = zlib.crc32(episode.id_.encode())
        return MAIN if agent_id == PLAYERS[h % 2] else league[h // 2 % len(league)]

    return self_play_mapping


class _ProcessId(str):
    """An episode id as Python process `process` sees it: the same text, but its hash() salted per
    process (as PYTHONHASHSEED does), so that one process can stand in for two."""

    def __new__(cls, text: str, process: int) -> "_ProcessId":
        self = super().__new__(cls, text)
        self.process = process
        return self

    def __hash__(self) -> int:
        return hash((self.process, str(self)))


def _episodes(process: int | None, seed: int = 10, n: int = NUM_EPISODES
              ) -> list[MultiAgentEpisode]:
    """`n` episodes with random 32-hex-digit ids (as the runner's), the same ids in every process;
    `process` salts their hash() as that stand-in process would (None: plain str ids)."""
    rng = np.random.default_rng(seed)
    ids = [rng.bytes(16).hex() for _ in range(n)]
    return [MultiAgentEpisode(id_ if process is None else _ProcessId(id_, process),
                              env_name="ConnectFour") for id_ in ids]


# Run in a fresh Python process: read (fn, episodes) pickled, answer for both agents of each episode.
_ELSEWHERE = """
import pickle, sys
out, sys.stdout = sys.stdout.buffer, sys.stderr  # the learner's prints must not mix with the answer
fn, episodes = pickle.load(sys.stdin.buffer)
try:
    result = ("ok", [{agent: fn(agent, episode) for agent in ("player_0", "player_1")}
                     for episode in episodes])
except Exception as e:
    result = ("error", f"{type(e).__name__}: {e}")
out.write(pickle.dumps(result))
"""


def _ask_elsewhere(fn: Mapping, episodes: list[MultiAgentEpisode]) -> list[dict[str, Any]]:
    """{agent: fn's answer} for each episode, asked in a new Python process with another hash()
    salt, as a runner actor would be: Ray pickles the mapping (cloudpickle) and ships it there."""
    import cloudpickle

    try:
        payload = cloudpickle.dumps((fn, episodes))
    except Exception as e:
        raise ExerciseError(
            f"self_play_mapping cannot be pickled ({type(e).__name__}: {e}). Ray ships it to every "
            "runner, a process of its own, by pickling it: keep locks, open files and the like "
            "out of it.") from None
    seed = "1" if os.environ.get("PYTHONHASHSEED") == "0" else "0"  # a salt unlike this process's
    env = {**os.environ, "PYTHONHASHSEED": seed,
           "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
    done = subprocess.run([sys.executable, "-c", _ELSEWHERE], input=payload, env=env,
                          capture_output=True, timeout=ELSEWHERE_TIMEOUT_S, check=False)
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["(no output)"])[-1]
        raise ExerciseError(f"self_play_mapping could not run in another Python process (as on a "
                            f"runner): {last}")
    status, answers = pickle.loads(done.stdout)
    if status != "ok":
        raise ExerciseError(f"self_play_mapping raised {answers} in another Python process (as on "
                            "a runner), though not in this one: does it rely on something only "
                            "this process has?")
    return answers


def _check_signature(fn: Mapping) -> None:
    """The runner calls fn(agent_id, episode); RLlib's contract adds **kwargs."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (some builtins): the calls will tell
        return
    try:
        signature.bind("player_0", None)
    except TypeError as e:
        raise ExerciseError(
            f"self_play_mapping cannot be called as self_play_mapping(agent_id, episode) ({e}): "
            "that is how the runner calls it (RLlib's new API stack too). Give any extra "
            "parameter a default, or take extras through **kwargs.") from None
    if not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        raise ExerciseError(
            "self_play_mapping takes no **kwargs. rlcourse's runner passes (agent_id, episode) "
            "only, but RLlib's contract is policy_mapping_fn(agent_id, episode, **kwargs) (its "
            "older stack also passes worker=...): write def self_play_mapping(agent_id, episode, "
            "**kwargs) so it works wherever it is called.")


def _ask(fn: Mapping, episodes: list[MultiAgentEpisode], order: Sequence[str] = PLAYERS,
         **kwargs: Any) -> list[dict[str, Any]]:
    """{agent: fn's answer} for each episode, asking the agents in `order`."""
    return [{agent: call(fn, agent, episode, where=f"agent {agent!r}, episode {episode.id_[:8]}",
                         **kwargs) for agent in order} for episode in episodes]


def _check_answers(answers: list[dict[str, Any]], policies: list[str]) -> None:
    """Every answer is the id (a str) of one of the policies."""
    for i, answer in enumerate(answers):
        for agent, module_id in answer.items():
            if not isinstance(module_id, str):
                what = ("None: a branch without `return`?" if module_id is None
                        else f"{module_id!r} (of type {type(module_id).__name__})")
                raise ExerciseError(
                    f"self_play_mapping({agent!r}, episode) returned {what} (episode {i}). It "
                    f"returns a module id, a string: one of {policies}.")
            if module_id not in policies:
                raise ExerciseError(
                    f"self_play_mapping({agent!r}, episode) returned {module_id!r}, which is not "
                    f"one of the policies {policies} (episode {i}); the runner would stop with "
                    "'policy_mapping_fn mapped agent ... to policy ..., which is not one of the "
                    "policies'. Return 'main' or one of the snapshots, spelt exactly so (they are "
                    "numbered from 0).")


def _first_difference(a: list[dict], b: list[dict]) -> tuple[int, str] | None:
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        for agent in PLAYERS:
            if x[agent] != y[agent]:
                return i, agent
    return None


def _check_consistency(first: list[dict], again: list[dict], chunks: list[dict]) -> None:
    """The same episode and agent get the same answer: asked again, and on the next chunk."""
    found = _first_difference(first, again)
    if found:
        i, agent = found
        raise ExerciseError(
            f"Asked twice about the same episode (number {i}), {agent!r} got {first[i][agent]!r} "
            f"and then {again[i][agent]!r}: a random choice per call, or a counter, gives each "
            "call its own answer. The episode must decide: compute the answer from episode.id_ "
            "(the same every time you are asked), not from random or from how often you were "
            "called.")
    found = _first_difference(first, chunks)
    if found:
        i, agent = found
        raise ExerciseError(
            f"The next chunk of episode {i} (the same episode after a cut(), same episode.id_) got "
            f"{chunks[i][agent]!r} for {agent!r} instead of {first[i][agent]!r}: your answer "
            "depends on the Python object (id(episode), hash(episode), ...), not on the episode. "
            "Compute it from episode.id_.")


def _check_league(first: list[dict], opponents: Sequence[str]) -> tuple[int, Counter]:
    """One main per episode, on both sides about equally often, every snapshot used. Returns how
    often main played player_0 and how often each opponent played."""
    n = len(first)
    mains = [sum(a == MAIN for a in answer.values()) for answer in first]
    for count, words in ((2, "both players are 'main': main would play against itself, not "
                             "against the league, and no snapshot would ever play"),
                         (0, "neither player is 'main': nothing in those episodes trains main "
                             "(policies_to_train={'main'})")):
        if count in mains:
            raise ExerciseError(
                f"In {mains.count(count)} of {n} episodes {words}. In every episode exactly one "
                "player is 'main' and the other one of the snapshots.")
    on_0 = sum(answer[PLAYERS[0]] == MAIN for answer in first)
    if on_0 in (0, n):
        side, other = (PLAYERS[0], PLAYERS[1]) if on_0 else (PLAYERS[1], PLAYERS[0])
        raise ExerciseError(
            f"'main' plays {side} in all {n} episodes and never {other}. Self-play trains main "
            "on both sides: in most games the sides differ (who moves first, which pieces, where "
            "one starts) and a main that only plays one learns half the game. Let the episode "
            "pick main's side, e.g. from int(episode.id_, 16) % 2.")
    if not BALANCE[0] <= on_0 / n <= BALANCE[1]:
        raise ExerciseError(
            f"'main' plays player_0 in {on_0} of {n} episodes ({on_0 / n:.0%}) and player_1 in "
            f"{n - on_0}: the sides should be about equally likely (40-60% each). Pick the side "
            "with a fair coin from the episode, e.g. int(episode.id_, 16) % 2.")
    played = Counter(a for answer in first for a in answer.values() if a != MAIN)
    unused = [o for o in opponents if o not in played]
    if unused and len(played) == 1:
        raise ExerciseError(
            f"Only {next(iter(played))!r} ever plays against main (in all {n} episodes); the "
            f"league is {list(opponents)}. Playing one old snapshot, main learns to beat that one "
            "and can forget the rest: draw the opponent from all of them, e.g. "
            "OPPONENTS[int(episode.id_, 16) // 2 % len(OPPONENTS)].")
    if unused:
        raise ExerciseError(
            f"{unused[0]!r} never plays in {n} episodes (the opponents were "
            f"{dict(sorted(played.items()))}). Every snapshot in the league {list(opponents)} "
            "should get games: pick the opponent from all of them.")
    return on_0, played


def _check_stable(first: list[dict], elsewhere: list[dict], real: bool = False) -> None:
    """The same episode id gives the same answers in another process (a stand-in for one, with
    another hash() salt, or with `real` a new Python process)."""
    found = _first_difference(first, elsewhere)
    if found:
        i, agent = found
        differ = sum(_first_difference([x], [y]) is not None
                     for x, y in zip(first, elsewhere, strict=True))
        where = ("in a new Python process (as a runner is)" if real
                 else "with another Python process's hash() salt")
        raise ExerciseError(
            f"The same episode id gave other answers {where} "
            f"({differ} of {len(first)} episodes, e.g. {agent!r}: {first[i][agent]!r} here, "
            f"{elsewhere[i][agent]!r} there). hash() of a str is salted per process "
            "(PYTHONHASHSEED), and a random draw or a cache lives in one process only: the episode "
            "alone should decide, in whichever process asks (runners are processes of their own, "
            "and so is a rerun). Derive the answer from the id's text: int(episode.id_, "
            "16) or zlib.crc32(episode.id_.encode()) are the same everywhere.")


@exercise("self_play_mapping", stub="self_play_mapping",
          fallback="rlcourse's reference_self_play_mapping",
          reference=lambda fn, opponents=OPPONENTS: reference_self_play_mapping(opponents))
def check_self_play_mapping(fn: Mapping, opponents: Sequence[str] = OPPONENTS) -> Mapping:
    """Check the learner's self-play mapping against the league `opponents` on episodes of its own;
    raise ExerciseError with a hint if it is wrong. Returns `fn` when it is right."""
    if not opponents or MAIN in opponents:
        raise ValueError(f"opponents must name the frozen snapshots (not {MAIN!r}); got "
                         f"{list(opponents)}.")
    _check_signature(fn)
    policies = [MAIN, *opponents]
    episodes = _episodes(process=1)
    first = _ask(fn, episodes)
    _check_answers(first, policies)
    again = _ask(fn, episodes, order=PLAYERS[::-1], worker=None)
    _check_consistency(first, again, _ask(fn, [episode.cut() for episode in episodes]))
    on_0, played = _check_league(first, opponents)
    _check_stable(first, _ask(fn, _episodes(process=2)))
    # A real second process: fn is pickled before this process sees these episodes, so that
    # neither a cache nor a str subclass's hash() can make the two processes agree by accident.
    fresh = _episodes(process=None, seed=11, n=ELSEWHERE_EPISODES)
    elsewhere = _ask_elsewhere(fn, fresh)
    here = _ask(fn, fresh)
    _check_answers(elsewhere, policies)
    _check_stable(here, elsewhere, real=True)
    n = len(first)
    passed(f"in each of {n} episodes one player is main and the other a snapshot; main played "
           f"player_0 in {on_0} and player_1 in {n - on_0}, against "
           f"{', '.join(f'{o} {played[o]}x' for o in opponents)}; every answer was the same when "
           "asked again, on the episode's next chunk and in another Python process.")
    return fn
