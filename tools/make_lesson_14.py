"""Writes lessons/14_external_simulators.ipynb (outputs stripped): python tools/make_lesson_14.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "14_external_simulators.ipynb"

CELLS = [
    md(r"""
# Lesson 14 — External simulators: an env outside Ray connects to the algorithm

**By the end of this lesson you can**
1. say why some envs cannot live in a Ray actor, and where an **external simulator** sits
   instead: its own process, a small message protocol over TCP (**RLlink**), a **server
   EnvRunner**, the learner;
2. read RLlink's messages in a real exchange: the handshake with the shared token, the config,
   the weights, and whole episodes sent in batches with `EPISODES_AND_GET_STATE`;
3. train PPO on CartPole from two simulator **processes** that import neither Ray nor rlcourse
   nor torch, kill one mid-run, and watch training go on and a new simulator connect;
4. measure client-side against server-side inference (the simulator runs the policy, or asks
   the server for each action) and say when each fits;
5. write a simulator's loop that batches whole episodes and picks up new weights (the exercise).

**Time:** about 35 minutes of study (one exercise); the last cell prints how long the cells took
on your machine.
Terms: see the [glossary](../docs/glossary.md).
"""),
    code("""
import os
import secrets
import subprocess
import sys
import threading
import time

import gymnasium as gym
import numpy as np
import pandas as pd
import ray
import torch
from IPython.display import display

from rlcourse import PPOConfig
from rlcourse.course.external_diagrams import external_system, protocol_timeline, training_run
from rlcourse.course.external_simulators import RecordedExchange, time_inference
from rlcourse.env.external import client
from rlcourse.env.external.env_runner_server_for_external_inference import (
    TOKEN_ENV_VAR, EnvRunnerServerForExternalInference)

for old in globals().get("simulators", []):  # a re-run: end the last run's simulators first
    old.kill()
    old.wait()
if "algo" in globals():
    algo.stop()
ray.shutdown()  # a re-run starts from a clean slate
torch.set_num_threads(1)  # small networks: one torch thread is fastest (Binder has one CPU)
lesson_start = time.perf_counter()
MARK, BUDGET = 150, 40_000  # the return PPO must reach within this many env steps
"""),
    md("""
## 1. Why some envs cannot live in a Ray actor

Until now every env was a Python object that a runner actor built from `config.environment(...)`
and stepped itself. Many envs worth learning from are not like that: a game engine that runs on
its own clock in another language, a robot whose controller is a separate process on the robot,
a production system that must not be restarted by Ray, a simulator licensed to one machine. Ray
cannot import them; they must **call in**.

RLlib's answer (and rlcourse's, with RLlib's names): a **server EnvRunner**,
`EnvRunnerServerForExternalInference`, listens on a TCP port instead of building an env. Each
simulator connects with a small client, receives the config and the policy's weights, runs the
policy **itself** (client-side inference: no network round trip per step), and sends back whole
episodes. To the algorithm the server runner is a runner like any other: `sample()` returns
episodes, so PPO trains unchanged.
"""),
    code("""
external_system()
"""),
    md("""
The config names the spaces (there is no env to ask) and the runner class. The shared **token**
a simulator must show before anything else is a secret, so it is *not* a setting: settings are
saved in checkpoints and in Ray Tune's results. The driver keeps it in the environment variable
`RLCOURSE_EXTERNAL_TOKEN`, runner actors get it through their Ray runtime env (as Ray's own token
authentication keeps its token out of code), and the simulators started below inherit it.

Everything else is the course's CartPole settings, as in `tuned_examples/ppo/cartpole_ppo.py`.
One runner actor serves both simulators (`max_clients` allows 8); `port` 0 takes a free port.
"""),
    code("""
os.environ[TOKEN_ENV_VAR] = secrets.token_hex(16)  # a fresh secret per run

config = (
    PPOConfig()
    .environment(observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
                 action_space=gym.spaces.Discrete(2), env_config={"port": 0})
    .env_runners(env_runner_cls=EnvRunnerServerForExternalInference, num_env_runners=1,
                 num_cpus_per_env_runner=0.5)
    .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
              gamma=0.99, lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
              use_kl_loss=False, grad_clip=0.5)
    .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                             "vf_share_layers": False})
    .debugging(seed=0))
algo = config.build_algo()
[(host, port)] = algo.env_runner_group.foreach_env_runner(lambda runner: runner.address)
print(f"the server runner listens on {host}:{port}; the token is in no setting:",
      os.environ[TOKEN_ENV_VAR] not in repr(config.to_dict()))
"""),
    md("""
## 2. The protocol, message by message

RLlink's messages are JSON objects behind a 4-byte length; arrays travel as dtype, shape and
base64 bytes. Never pickle: a message is data, it cannot make the other side run code
(`rlcourse/env/external/rllink.py`). A simulator sends `PING` with the token and the protocol
version first, asks for the config (`GET_CONFIG`, answered by `SET_CONFIG`: the spaces, the
network's shape, the action head) and the weights (`GET_STATE` -> `SET_STATE`), then loops:
sample whole episodes with its copy of the policy, send a batch with `EPISODES_AND_GET_STATE`,
and act with the weights of the answer. The server answers when the learner has new weights, or
at once when `sample()` is waiting for episodes: so simulators sample with the newest policy
(on-policy) and rest while the learner trains.

Below, `RecordedExchange` runs the real client (`client.run` from
`rlcourse/env/external/client.py`) in a thread of this notebook with a connection that notes each
message, while the driver runs two PPO iterations (red: the learner's new weights).
"""),
    code("""
exchange = RecordedExchange(port, steps_per_batch=500)
for _ in range(2):
    algo.train()
    exchange.note("learner", "new weights sent")
exchange.stop()
protocol_timeline(exchange.log)
timeline = pd.DataFrame(exchange.log, columns=["seconds", "sender", "type", "bytes"])
handshake = timeline.iloc[5].seconds - timeline.iloc[0].seconds
answers = timeline[timeline.type == "SET_STATE"].seconds.to_numpy()[1:]
asked = timeline[timeline.type == "EPISODES_AND_GET_STATE"].seconds.to_numpy()[:len(answers)]
print(f"handshake, config and weights: {handshake * 1000:.1f} ms; the longest the server held a "
      f"SET_STATE answer: {(answers - asked).max():.2f} s (while the learner trained); "
      f"bytes of one batch: {timeline[timeline.type == 'EPISODES_AND_GET_STATE'].bytes.max():,}")
"""),
    md("""
## 3. Two simulator processes

Now the real thing: two processes running `client.py`, the one file a simulator copies. It needs
only Python's standard library and NumPy (its copy of the runners' forward pass is checked
against theirs by `tests/test_external_client.py`); gymnasium here only provides the CartPole
they simulate. They inherit the token from this process's environment, so it never shows on a
command line. Each sends its episodes every 250 env steps.
"""),
    code("""
def start_simulator(seed):
    command = [sys.executable, client.__file__, "--port", str(port), "--seed", str(seed),
               "--steps-per-batch", "250"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_clients(n, timeout_s=60):
    \"\"\"Until n simulators are connected to the runner (a process takes a moment to start).\"\"\"
    deadline = time.monotonic() + timeout_s
    while algo.env_runner_group.foreach_env_runner(lambda runner: runner.num_clients)[0] < n:
        assert time.monotonic() < deadline, "the simulators did not connect"
        time.sleep(0.1)


simulators = [start_simulator(seed) for seed in (1, 2)]
wait_for_clients(2)
print(" ".join(["python", os.path.basename(client.__file__), "--port", str(port), "..."]),
      "x", len(simulators), "connected, pids", [s.pid for s in simulators])
rows = []


def train_once():
    result = algo.train()
    runners = result["env_runners"]
    rows.append({"env_steps": result["num_env_steps_sampled_lifetime"],
                 "episode_return_mean": runners["episode_return_mean"],
                 "clients": runners["num_external_clients_per_runner"],
                 "connected": runners["num_external_clients_connected_lifetime"],
                 "episodes": runners["num_external_episodes_received"],
                 "refused": runners["num_external_messages_refused_lifetime"]})
    print(f"{rows[-1]['env_steps']:>6} env steps  return {rows[-1]['episode_return_mean']:6.1f}  "
          f"clients {rows[-1]['clients']:.1f}  episodes received {rows[-1]['episodes']:.0f}")


while rows == [] or (rows[-1]["episode_return_mean"] < MARK and rows[-1]["env_steps"] < BUDGET):
    train_once()
"""),
    md("""
The server runner counts what it sees, and `train()` reports it under `env_runners` with
RLlib-style names: `num_external_clients_connected` (simulators that passed the handshake),
`num_external_episodes_received`, `num_external_messages_refused` and
`num_external_episodes_refused` (bad input: each refused message gets an `ERROR` back and its
connection closes), `num_external_env_steps_dropped` (a full queue), each also `*_lifetime`, and
`num_external_clients_per_runner`.

## 4. A simulator dies; training goes on

A simulator that crashes takes with it the episode it was in: the server only ever sees whole
episodes, so nothing partial reaches the learner. Here one process is killed (`SIGKILL`, no
goodbye). The runner notices the closed connection, and the other simulator keeps PPO fed. Then
a new process starts, as a supervisor would restart a crashed game, and connects.
"""),
    code("""
simulators[1].kill()
simulators[1].wait()
killed_at = rows[-1]["env_steps"]
for _ in range(2):
    train_once()
simulators.append(start_simulator(seed=3))
wait_for_clients(2)
restarted_at = rows[-1]["env_steps"]
for _ in range(2):
    train_once()
training_run(rows, {"killed": killed_at, "new simulator": restarted_at})
display(pd.DataFrame(rows).tail(6).set_index("env_steps"))
"""),
    md("""
## 5. Client-side against server-side inference

So far each simulator ran the policy itself: the server ships the weights with each answer, and
every action is a forward pass in the simulator's own process. Some simulators cannot do that: a
controller written in another language, a device too small for the network, a policy whose
weights must not leave the server. Such a client sends each observation and waits for the action
instead (`client.py --inference server`: `GET_ACTION` -> `ACTION`, and `END_EPISODE` at the end);
the runner acts with its copy of the network and records the episode exactly as a client would
have sent it (`rlcourse/env/external/server_side_inference.py`). RLlib's new stack does not have
this mode yet.

Below, `time_inference` starts one simulator process each way against a server runner in this
notebook that holds the weights PPO has learned so far. The simulator times every observation ->
action (client-side: the local forward pass; server-side: the round trip over TCP, the server's
forward pass included) and its whole loop's env steps per second; the runner counts the bytes
both ways.
"""),
    code("""
weights = algo.learner_group.get_weights(inference_only=True)
timing = pd.DataFrame([time_inference(config, weights, inference, env_steps=2000)
                       for inference in ("client", "server")]).set_index("inference")
display(timing.round(1))
local, remote = timing.median_us
speed = timing.env_steps_per_s
print(f"asking the server took {remote - local:.0f} us more per env step (median) than acting "
      f"locally, {remote / local:.1f}x the local forward pass, on loopback, where packets travel "
      f"no distance. The simulator's whole loop: {speed['client-side']:,.0f} env steps/s "
      f"client-side, {speed['server-side']:,.0f} server-side. The weights a client-side simulator "
      f"receives with each answer: {timeline[timeline.type == 'SET_STATE'].bytes.max():,} bytes.")
"""),
    md("""
Read the measurement as a floor. On loopback a round trip is only the operating system's and
Python's work of passing two small messages; the table shows what that costs next to this small
network's forward pass. Between machines each server-side step also waits for the network's round trip, so
a simulator that asks for every action can never step faster than one step per round trip;
a client-side simulator waits for the network once per batch. (A whole loop's env steps/s also
depend on how often each process gets a core: on a busy machine a run can show less difference.)
The bytes matter less than the waits: client-side ships the weights with each answer and the
episodes in batches, server-side a message each way per step.

- **Client-side** (RLlib's choice, and the default here) fits fast simulators, many of them, and
  real networks, as long as the policy can run where the simulator runs (here: NumPy and the
  weights, which then leave the server).
- **Server-side** fits a simulator that cannot run the policy (another language, a small device,
  a network that needs the server's GPU, weights that must stay on the server), or one whose steps
  are slow anyway (a robot acting a few times a second, where a round trip is a small part of each
  step). The runner then does every simulator's inference: its CPU, not theirs, bounds the total.
"""),
    md("""
## 6. Exercise: a simulator's loop

Write the heart of `client.py` yourself: `simulate(connection, policy, env, steps_per_batch,
max_env_steps)`.

- An episode runs from `env.reset()` until `terminated` or `truncated`; act with
  `action, logp = policy.act(obs)`; keep the observations (reset's first, then one per step), the
  actions, rewards and log-probabilities, and build the message's entry with
  `episode_entry(observations, actions, rewards, logps, terminated)`.
- Gather whole episodes into a batch until it holds at least `steps_per_batch` env steps, then
  `state = connection.request({"type": "EPISODES_AND_GET_STATE", "episodes": batch}, "SET_STATE")`
  and `policy.set_state(state)`, so the next episodes use the new weights.
- The batch that reaches `max_env_steps` goes by `connection.send({"type": "EPISODES", ...})`
  (no answer to wait for); return the env steps sent.

The checker runs your loop on stand-ins that record everything: an env whose observations say
which episode and step they belong to, a policy that notes which weights acted at each step, a
connection that answers with ever newer weights. Stuck? `show_solution("simulator_loop")`.
"""),
    code("""
from rlcourse.course.exercises import check_simulator_loop, show_solution  # noqa: F401 (when stuck)
from rlcourse.env.external.client import episode_entry


def simulate(connection, policy, env, steps_per_batch, max_env_steps):
    \"\"\"Send whole episodes in batches of >= steps_per_batch env steps, taking new weights from
    each answer, until max_env_steps are sent; return the env steps sent.\"\"\"
    # TODO: a loop over batches; in it, a loop over whole episodes (see the list above)
    raise NotImplementedError("TODO: write the simulator's loop")


simulate = check_simulator_loop(simulate)
"""),
    md("""
Your loop (or, until it is written, the course's) now joins the two processes as a third
simulator, in a thread of this notebook, against the real server: it sends 1,000 env steps.
"""),
    code("""
connection = client.Connection("127.0.0.1", port, os.environ[TOKEN_ENV_VAR])
policy = client.Policy(connection.request({"type": "GET_CONFIG"}, "SET_CONFIG"), seed=0)
policy.set_state(connection.request({"type": "GET_STATE"}, "SET_STATE"))
sent = []
yours = threading.Thread(target=lambda: sent.append(
    simulate(connection, policy, gym.make("CartPole-v1"), 250, 1000)), daemon=True)
yours.start()
while yours.is_alive() and len(rows) < 40:
    train_once()
connection.close()
print(f"your loop sent {sent[0] if sent else 'nothing'} env steps; messages refused so far: "
      f"{rows[-1]['refused']:.0f}; simulators that connected: {rows[-1]['connected']:.0f}")
"""),
    md("""
## Summary

- An env that Ray cannot import calls in: a server EnvRunner listens on a port, simulators run
  the policy themselves and send whole episodes; the algorithm does not change.
- RLlink is a handful of JSON messages behind a length: `PING` with a token first, then
  `GET_CONFIG`, `GET_STATE`, and batches of episodes that fetch new weights on the way back.
- The token lives in the driver's environment, never in the config a checkpoint saves.
- A dead simulator loses only its unfinished episode; a new one connects to the same port.
- Client-side inference ships weights now and then and acts locally; server-side inference costs a
  round trip per env step (measured above on loopback; a real network adds its own), and fits
  simulators that cannot run the policy or step slowly anyway.

**Concept checks**: the questions at the end of this lesson, each choice with its explanation.

**Read next in the source**
- `rlcourse/env/external/client.py`: the whole simulator side (`run`, `run_episode`, `Policy`).
- `rlcourse/env/external/env_runner_server_for_external_inference.py`: `sample()` from a queue,
  `state_message` (when an answer waits for weights), the counters.
- `rlcourse/env/external/client_session.py` and `rlcourse/env/external/episode_checks.py`: one
  client's thread, and every check an episode passes before it reaches a learner.
- `rlcourse/env/external/rllink.py`: the framing.
- `rlcourse/env/external/server_side_inference.py`: the runner's side of `GET_ACTION`; the timed
  simulator of section 5 is `rlcourse/course/timed_simulator.py`.

RLlib's counterpart: `rllib/env/external/` (`env_runner_server_for_external_inference.py`,
`rllink.py`) and the example `env_connecting_to_rllib_w_tcp_client.py`.
"""),
    concept_checks_cell("14"),
    code("""
# Lesson check: PPO learned from the external simulators within the budget, the dead simulator
# was replaced and training went on, a simulator of each kind of inference sent its steps, every
# message was accepted, and nothing is left running.
for simulator in simulators:
    simulator.terminate()
    simulator.wait(timeout=10)
algo.stop()
ray.shutdown()
best = max(row["episode_return_mean"] for row in rows if row["env_steps"] <= BUDGET)
print(f"best smoothed return {best:.0f} (mark {MARK}) within {BUDGET:,} env steps; the lesson "
      f"took {time.perf_counter() - lesson_start:.0f} s")
assert best >= MARK, rows
assert rows[-1]["env_steps"] > restarted_at and rows[-1]["connected"] >= 4, rows
assert min(row["clients"] for row in rows if killed_at < row["env_steps"] <= restarted_at) < 2
assert rows[-1]["refused"] == 0 and sent and sent[0] >= 1000, (rows[-1], sent)
assert list(timing.index) == ["client-side", "server-side"] and (timing.env_steps >= 2000).all()
assert all(simulator.poll() is not None for simulator in simulators)
assert not yours.is_alive() and not exchange.thread.is_alive() and not ray.is_initialized()
print("Lesson 14 complete: PPO trained from simulators outside Ray, through a simulator's death.")
"""),
]

if __name__ == "__main__":
    write_lesson(NAME, CELLS)
