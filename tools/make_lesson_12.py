"""Writes lessons/12_memory_and_pixels.ipynb (outputs stripped): python tools/make_lesson_12.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "12_memory_and_pixels.ipynb"

CELLS = [
    md(r"""
# Lesson 12 — Memory and pixels: LSTM modules, CNN encoders, frame stacking, APPO

**By the end of this lesson you can**
1. say why a policy without memory cannot act well when the observation hides part of the state
   (partial observability), and show it on CartPole without its velocities;
2. follow an LSTM's state $(h_t, c_t)$ through an episode: how runners store it as `state_in` /
   `state_out`, reset it at episode starts and carry it across `sample()` calls;
3. explain how the learner cuts episodes into zero-padded sequences of `max_seq_len` steps with a
   mask, each starting from its stored state, and write that cut yourself (the exercise);
4. turn on an LSTM (`use_lstm`) or a CNN (`conv_filters`) in `model_config` and see both learn
   within a small budget;
5. say what Atari preprocessing does to a frame, and why runners send single frames while the
   learner rebuilds the stacks (bytes measured);
6. say what APPO adds to IMPALA (a clipped surrogate, a target network, a circular buffer) and run
   both on CartPole with the same budget.

**Time:** about 40 minutes of study (one exercise); the cells ran in under two minutes on 2 cores shared
with other work (measured there).
Terms: see the [glossary](../docs/glossary.md).

The papers behind it are listed at the end.
"""),
    code("""
import pickle
import time

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import psutil
import ray
import torch
from IPython.display import display

from rlcourse import APPOConfig, IMPALAConfig, PPOConfig
from rlcourse.connectors.common.add_time_dim_to_batch_and_zero_pad import add_time_dim, zero_pad
from rlcourse.connectors.env_to_module import FrameStackingEnvToModule, MeanStdFilter
from rlcourse.connectors.learner import FrameStackingLearner
from rlcourse.core import LOSS_MASK, STATE_IN, STATE_OUT
from rlcourse.core.rl_module.cnn_encoder import conv_layers, output_shapes
from rlcourse.course.envs import StatelessCartPole
from rlcourse.course.pixel_grid_world import PixelGridWorld
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack
from rlcourse.utils.postprocessing import flatten_episodes

ray.shutdown()  # a re-run starts from a clean slate; this lesson runs without Ray actors
torch.set_num_threads(1)  # small networks: one torch thread is fastest (Binder has one CPU)
LESSON_START = time.perf_counter()
"""),
    md(r"""
## 1. When the observation hides the state

CartPole's observation is $s_t = (x, \dot x, \theta, \dot\theta)$: the cart's position and
velocity, the pole's angle and angular velocity. **StatelessCartPole** (RLlib's test env, here in
`rlcourse/course/envs.py`) shows only $(x, \theta)$. The task is the same; the policy now sees a
*part* of the state, which makes the problem **partially observable**. An angle of 0.05 rad with the
pole falling right needs a push right; the same angle with the pole swinging back needs none. One
observation, two right answers: a policy $\pi(a_t \mid o_t)$ that sees only the current observation
$o_t$ must give both the same action.

Two fixed rules played on the real CartPole show what the velocity is worth:
"""),
    code("""
def play(rule, seed=0, max_steps=500):
    \"\"\"Steps CartPole-v1 lasts under `rule(state) -> action` (the full state, rules may ignore
    part of it).\"\"\"
    env = gym.make("CartPole-v1")
    state, _ = env.reset(seed=seed)
    for step in range(1, max_steps + 1):
        state, _, terminated, truncated, _ = env.step(rule(state))
        if terminated or truncated:
            break
    env.close()
    return step


rules = {"angle only: push toward the lean (theta > 0)": lambda s: int(s[2] > 0),
         "angle and angular velocity (theta + theta_dot > 0)": lambda s: int(s[2] + s[3] > 0)}
rule_steps = {name: [play(rule, seed) for seed in range(5)] for name, rule in rules.items()}
for name, steps in rule_steps.items():
    print(f"{name:52s} lasts {np.mean(steps):5.1f} steps on average (5 episodes, 500 at most)")
print("StatelessCartPole's observation:", StatelessCartPole().observation_space)
"""),
    md(r"""
The rule that sees only the angle reacts to where the pole is, not to where it is going: it keeps
pushing until the pole has crossed the vertical, and each swing grows.
A network that sees $(x, \theta)$ can do no better than some rule of $(x, \theta)$. It can
*estimate* the velocities, but only from earlier observations: $\dot\theta \approx
(\theta_t - \theta_{t-1}) / \Delta t$. That needs **memory**: a state carried from step to step.

## 2. An LSTM's state, step by step

`rl_module(model_config={"use_lstm": True, ...})` (RLlib's `DefaultModelConfig` names) puts an
LSTM between the MLP encoder and the policy and value heads (`rlcourse/core/rl_module/lstm_module.py`).
At each step it takes the encoder's features and its state $(h_{t-1}, c_{t-1})$, and returns the
heads' input $h_t$ and the new state $(h_t, c_t)$: $h$ the output ("hidden state"), $c$ the cell
that gates decide what to keep in. Each has `lstm_cell_size` numbers. RLlib's default is 256; here 8,
so that the state fits on screen.

A runner keeps one state per sub-env, starts it at zeros when an episode starts, and stores what
the module saw and returned at each step in the episode: `state_in` (RLlib's `STATE_IN`) and
`state_out`. Runners step the LSTM in NumPy (`rlcourse/core/rl_module/numpy_lstm.py`), as they do
the MLP: no torch in their processes. One episode of an untrained module:
"""),
    code("""
MEMORY_MODEL = {"use_lstm": True, "vf_share_layers": True, "lstm_cell_size": 8,
                "fcnet_hiddens": [16], "max_seq_len": 8}
probe = (PPOConfig().environment(StatelessCartPole)
         .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
         .rl_module(model_config=MEMORY_MODEL).debugging(seed=0))
runner = SingleAgentEnvRunner(probe)
chunks = runner.sample(num_episodes=2)
cut_here = runner.sample(num_timesteps=10)[-1]  # an episode cut by the end of a sample() call
goes_on = runner.sample(num_timesteps=10)[0]  # and its next chunk, from the next call
runner.stop()
episode = chunks[0]
states_in = episode.extra_model_outputs[STATE_IN]
states_out = episode.extra_model_outputs[STATE_OUT]
print(f"an episode of {len(episode)} steps: observations {episode.observations.shape}, "
      f"state_in {states_in.shape} = [steps, (h, c), lstm_cell_size]")
print("state_in at the first step is all zeros:", not states_in[0].any())
print("each step's state_in is the step before's state_out:",
      np.array_equal(states_in[1:], states_out[:-1]))
print(f"episode {goes_on.id_[:8]} goes on at step {goes_on.t_started} in the next sample() from the "
      "state it ended with:", np.array_equal(goes_on.extra_model_outputs[STATE_IN][0],
                                             cut_here.extra_model_outputs[STATE_OUT][-1]))
fig, axes = plt.subplots(1, 2, figsize=(11, 2.6), sharey=True)
for ax, index, name in zip(axes, (0, 1), ("h (the LSTM's output)", "c (its cell)"), strict=True):
    image = ax.imshow(states_out[:, index].T, aspect="auto", cmap="coolwarm", vmin=-1, vmax=1)
    ax.set(title=f"state_out: {name}", xlabel="step t of the episode", ylabel="unit")
fig.colorbar(image, ax=axes)
plt.show()
"""),
    md(r"""
Each column is the state after one step: the memory the next step starts from. A new episode
starts from zeros again; an episode cut between two `sample()` calls goes on in the next call from
the state it ended with (the runner keeps it; tests/test_lstm.py checks both, with sub-envs).

## 3. Sequences, padding and a mask

The learner must replay the LSTM over the same steps to compute the loss, but not over a whole
episode at once: episodes differ in length, and backpropagating through hundreds of steps is slow.
RLlib (and rlcourse, `rlcourse/connectors/common/add_time_dim_to_batch_and_zero_pad.py`) cuts each
episode chunk into **sequences** of at most `max_seq_len` steps, pads the last one of each chunk
with zeros to `max_seq_len`, and marks the real steps in a **mask**. Each sequence starts from the
`state_in` the runner stored for its first step, so it sees the same memory the runner had.
Sequences never cross from one chunk (episode) into the next. The real connector on the two
episodes above, `max_seq_len=8`:
"""),
    code("""
flat = flatten_episodes(chunks)
flat["obs"] = flat["all_obs"][flat["obs_index"]]
chunk_lengths = [len(chunk) for chunk in chunks]
sequences = add_time_dim(flat, chunk_lengths, MEMORY_MODEL["max_seq_len"], ("obs", "actions"))
mask = sequences[LOSS_MASK]
print(f"chunks of {chunk_lengths} steps -> {mask.shape[0]} sequences of {mask.shape[1]} steps; "
      f"obs {sequences['obs'].shape}, state_in {sequences[STATE_IN].shape}, "
      f"{int(mask.sum())} real steps and {int((~mask).sum())} padded")
episode_of = np.repeat(np.arange(len(chunks)), chunk_lengths)
step_of = np.concatenate([np.arange(n) for n in chunk_lengths])  # t within its episode
fig, ax = plt.subplots(figsize=(7, 0.35 * len(mask) + 1))
ax.imshow(np.where(mask, 1 + zero_pad(episode_of, mask), 0), cmap="Pastel1_r")
for (row, col), t in zip(np.argwhere(mask), step_of, strict=True):
    ax.text(col, row, t, ha="center", va="center", fontsize=8)
ax.set(title="sequences x time: episode step t in each cell (colour: episode; white: padding)",
       xlabel="position in the sequence", ylabel="sequence")
plt.show()
display(pd.DataFrame({"episode": zero_pad(episode_of, mask)[:, 0],
                      "first step t": zero_pad(step_of, mask)[:, 0], "real steps": mask.sum(1),
                      "state_in h[:3] it starts from": [np.round(s[0, :3], 3).tolist()
                                                         for s in sequences[STATE_IN]]}))
"""),
    md(r"""
The loss averages over masked steps only: the padding's zeros never count, and the LSTM reaches
them only after a sequence's real steps, so they cannot change those steps' outputs (the test
fills the padding with garbage and sees the same loss). Sequences starting mid-episode begin from
a nonzero `state_in`: the memory of the steps before them. (Gradients do not flow back across a
sequence's start: the stored state is a constant, what RLlib calls truncated backpropagation
through time.)

## Exercise: cut chunks into padded sequences

Write `my_add_time_dim(values, chunk_lengths, states_in, max_seq_len)`. `values` [N, ...] and
`states_in` [N, ...] hold the steps of the chunks one after another, `chunk_lengths` of each. Return
`(padded, mask, first_states)`: padded [S, max_seq_len, ...] with the real steps first and zeros
after, mask [S, max_seq_len] (bool, True on real steps), first_states [S, ...] the state stored at
each sequence's first step. A chunk of n steps gives ceil(n / max_seq_len) sequences. The checker
compares with rlcourse's connector on four cases; the stub is reported as not attempted and the
lesson goes on with rlcourse's. `show_solution("zero_padded_sequences")` prints a solution.
"""),
    code("""
from rlcourse.course.exercises import check_add_time_dim, show_solution  # noqa: F401


def my_add_time_dim(values, chunk_lengths, states_in, max_seq_len):
    \"\"\"Cut each chunk into sequences of max_seq_len steps, zero-padded, with a mask and the stored
    state of each sequence's first step.\"\"\"
    raise NotImplementedError("TODO: cut each chunk on its own; pad with zeros after real steps")


cut = check_add_time_dim(my_add_time_dim)
"""),
    code("""
padded, mine_mask, first_states = cut(flat["obs"], chunk_lengths, flat[STATE_IN],
                                      MEMORY_MODEL["max_seq_len"])
same_as_connector = (np.array_equal(padded, sequences["obs"]) and np.array_equal(mine_mask, mask)
                     and np.array_equal(first_states, sequences[STATE_IN]))
print("on the two episodes above, the same as the learner's connector:", same_as_connector)
"""),
    md(r"""
## 4. PPO with an LSTM against PPO without memory

Two PPO runs on StatelessCartPole with the same budget of 40,000 env steps, the same settings
(those of RLlib's StatelessCartPole example, `benchmarks/lstm_stateless_cartpole.py`, on a smaller
network and batch, as in tests/test_lstm.py) and one difference: `use_lstm`. The MLP gets two hidden
layers of 64; the LSTM model one layer of 64 and a cell of 64. `MeanStdFilter` normalizes the
observations (lesson 03). Each run trains in this process (no Ray actors), one torch thread.
"""),
    code("""
BUDGET = 40_000  # env steps per run


def stateless_run(model_config):
    \"\"\"Mean training return after each iteration until BUDGET env steps.\"\"\"
    config = (PPOConfig().environment(StatelessCartPole)
              .env_runners(num_env_runners=0, num_envs_per_env_runner=4,
                           env_to_module_connector=lambda env: MeanStdFilter())
              .training(lr=3e-4, gamma=0.99, num_epochs=6, vf_loss_coeff=0.05, use_kl_loss=True,
                        train_batch_size_per_learner=2000, minibatch_size=128)
              .rl_module(model_config={"vf_share_layers": True, **model_config})
              .debugging(seed=0))
    curve = []
    with config.build_algo() as algo:
        while True:
            result = algo.train()
            curve.append((result["num_env_steps_sampled_lifetime"],
                          result["env_runners"]["episode_return_mean"]))
            if curve[-1][0] >= BUDGET:
                return curve


curves = {}
for name, model_config in {
        "MLP [64, 64], no memory": {"fcnet_hiddens": [64, 64]},
        "LSTM (use_lstm, cell 64)": {"use_lstm": True, "lstm_cell_size": 64,
                                     "fcnet_hiddens": [64]}}.items():
    start = time.perf_counter()
    curves[name] = curve = stateless_run(model_config)
    print(f"{name:26s} return {curve[-1][1]:6.1f} after {curve[-1][0]:,} env steps "
          f"({time.perf_counter() - start:.0f} s here)")
mlp_return, lstm_return = (curve[-1][1] for curve in curves.values())
for name, curve in curves.items():
    plt.plot(*zip(*curve), label=name)
plt.gca().set(xlabel="env steps", ylabel="mean training return",
              title="StatelessCartPole: observation (x, theta) only")
plt.legend()
plt.show()
"""),
    md(r"""
With the same budget the LSTM's return ends far above the MLP's: its state carries what the
observation leaves out. The MLP's limit is what it sees, not only its budget: whatever it learns
maps one $(x, \theta)$ to one action distribution, so it cannot tell a falling pole from a rising
one. RLlib's tuned example asks for 350 within 2 million env steps;
`benchmarks/lstm_stateless_cartpole.py` runs that goal beside RLlib's own.

## 5. Pixels: what an Atari agent sees

Atari games (through `ale-py`, whose wheel ships the game ROMs) give a 210x160 RGB screen per
frame at 60 frames a second. RLlib's preprocessing (`wrap_atari_for_new_api_stack`, here
`rlcourse/env/wrappers/atari_wrappers.py`): random no-op steps at reset (so that episodes do not
all start alike), the same action repeated for 4 frames (**frameskip**) with the max of the last two
frames (Atari sprites flicker), grayscale, resized to 84x84 and scaled to [-1, 1).
"""),
    code("""
pong = wrap_atari_for_new_api_stack(gym.make("ale_py:ALE/Pong-v5", frameskip=1,
                                             obs_type="grayscale"))
frame, _ = pong.reset(seed=0)
for _ in range(20):  # a few steps: the ball comes into play
    frame, *_ = pong.step(0)
screen = pong.unwrapped.ale.getScreenRGB()
pong.close()
fig, axes = plt.subplots(1, 2, figsize=(8, 4))
axes[0].imshow(screen)
axes[0].set_title(f"the emulator's screen {screen.shape}, {screen.dtype}")
axes[1].imshow(frame[..., 0], cmap="gray", vmin=-1, vmax=1)
axes[1].set_title(f"the module's input {frame.shape}, {frame.dtype}")
plt.show()
print(f"{screen.nbytes:,} bytes on screen -> {frame.nbytes:,} bytes per frame "
      f"({frame.min():.2f} to {frame.max():.2f})")
"""),
    md(r"""
One frame shows where the ball is, not where it goes: the same problem as StatelessCartPole.
Atari agents solve it without an LSTM by **frame stacking**: the module sees the last $k$ frames
(4 in RLlib's Atari examples) as $k$ channels. Pong takes hours on 2 CPUs; to see a CNN learn in seconds the
course draws its GridWorld (lesson 09) as a picture: `PixelGridWorld`
(`rlcourse/course/pixel_grid_world.py`), one pixel per cell, channel 0 the agent, 1 the pits, 2 the
goal.

## 6. A CNN encoder: `conv_filters`

`conv_filters` lists the convolution layers as RLlib does, `[out_channels, kernel, stride]` each
(`rlcourse/core/rl_module/cnn_encoder.py`); without it, 84x84 and 42x42 images get RLlib's default
filters. The filters must take the image down to 1x1 (a vector for the MLP above it), and the
module checks that when it is built, naming the layer that does not fit.
"""),
    code("""
PIXEL_ENV = {"size": 5, "pixels_per_cell": 1}
PIXEL_MODEL = {"conv_filters": [[16, 3, 1], [32, 5, 1]], "fcnet_hiddens": [64],
               "fcnet_activation": "tanh", "vf_share_layers": False}
grid = PixelGridWorld(PIXEL_ENV)
image, _ = grid.reset(seed=0)
print("the observation:", image.shape, image.dtype)
print("each layer's output [H, W, C]:", output_shapes(image.shape, conv_layers(image.shape,
                                                                                PIXEL_MODEL)))
plt.figure(figsize=(2.5, 2.5))
plt.imshow(image)
plt.title("red: agent, green: pits, blue: goal")
plt.axis("off")
plt.show()
pixel_config = (PPOConfig().environment(PixelGridWorld, env_config=PIXEL_ENV)
                .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
                .training(lr=2e-3, train_batch_size_per_learner=1000, minibatch_size=250,
                          num_epochs=6, grad_clip=0.5, lambda_=0.95, clip_param=0.2,
                          vf_loss_coeff=0.5, use_kl_loss=False)
                .rl_module(model_config=PIXEL_MODEL).debugging(seed=0))
pixel_curve = []
start = time.perf_counter()
with pixel_config.build_algo() as algo:
    for _ in range(20):  # at most 20,000 env steps
        result = algo.train()
        pixel_curve.append((result["num_env_steps_sampled_lifetime"],
                            result["env_runners"]["episode_return_mean"]))
        if pixel_curve[-1][1] > 0.8:
            break
pixel_return = pixel_curve[-1][1]
print(f"PPO + CNN on PixelGridWorld: return {pixel_return:.2f} after {pixel_curve[-1][0]:,} env "
      f"steps ({time.perf_counter() - start:.0f} s here); the goal pays 1, a pit -1, each step a "
      "small cost")
"""),
    md(r"""
## 7. Frame stacking: where the stacks are built

A runner must act on stacks of $k$ frames, so it keeps the last $k$ frames of each sub-env
(`FrameStackingEnvToModule`, `rlcourse/connectors/env_to_module/frame_stacking.py`). It could send
those stacks to the learner, but consecutive stacks share $k-1$ frames: each frame would cross the
object store $k$ times. So the runner sends single frames (and, for an episode that continues in
the next `sample()`, the $k-1$ frames before the chunk), and the learner rebuilds the same stacks
(`FrameStackingLearner`, `rlcourse/connectors/learner/frame_stacking.py`; tests/test_frame_stacking.py
checks they equal what the runner acted on). The bytes of one 1,000-step batch as Ray would
serialize them (pickle protocol 5), PixelGridWorld drawn at 4 pixels per cell, $k = 4$:
"""),
    code("""
NUM_FRAMES = 4
stacking = (PPOConfig().environment(PixelGridWorld, env_config={"size": 7, "pixels_per_cell": 4})
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4,
                         env_to_module_connector=lambda env: FrameStackingEnvToModule(NUM_FRAMES))
            .rl_module(model_config={"conv_filters": [[8, 4, 2], [16, 4, 2], [32, 7, 1]],
                                     "fcnet_hiddens": [32]}).debugging(seed=0))
runner = SingleAgentEnvRunner(stacking)
batch = runner.sample(num_timesteps=1000)
print("the module acts on", runner.observation_space.shape, "(4 frames as channels); a frame is",
      batch[0].observations.shape[1:])
runner.stop()
single_bytes = len(pickle.dumps(batch, protocol=5))
stacked_bytes = len(pickle.dumps(FrameStackingLearner(NUM_FRAMES)(batch), protocol=5))
display(pd.DataFrame({"runners send": ["single frames (learner stacks)", "stacks (runner stacks)"],
                      "bytes per 1,000-step batch": [single_bytes, stacked_bytes],
                      "x single frames": [1.0, round(stacked_bytes / single_bytes, 2)]}))
"""),
    md(r"""
Stacking on the learner moves about $k$ times fewer bytes through the object store (not exactly
$k$: actions, rewards and each episode's framing are sent either way). For Pong at 84x84 and the
default 4,000-step batch, `benchmarks/frame_stacking_bytes.py` measures the same table, and what
a runner with a torch CNN costs in memory and start-up against the NumPy one.

## 8. APPO against IMPALA

IMPALA (lesson 05) learns from each train batch once, with a plain policy gradient on V-trace
advantages. **APPO** (`APPOConfig`, `rlcourse/algorithms/appo/`; RLlib's APPO, the IMPACT paper)
keeps IMPALA's pipeline, runners sampling while a learner thread learns with V-trace correcting
the policy lag, and changes the learner in three ways:

- **PPO's clipped surrogate on V-trace advantages** (`rlcourse/algorithms/appo/appo_learner.py`):
  the ratio $r_t = \min(\mu / \pi_{old}, \text{target\_worker\_clipping}) \cdot \pi / \mu$ is clipped
  to $[1 - \epsilon, 1 + \epsilon]$ (`clip_param`), so one update cannot move the policy far.
- **A target network** $\pi_{old}$, an older copy of the policy: V-trace's targets and the clipping
  are computed against it, and it follows the policy every `target_network_update_freq` x N x K
  updates (`update_target_network`).
- **A circular buffer** (`rlcourse/algorithms/impala/circular_buffer.py`) in place of IMPALA's
  queue: it holds N train batches (`circular_buffer_num_batches`) and the learner draws each up to K
  times (`circular_buffer_iterations_per_batch`): more updates from the same env steps, which the
  clipping keeps safe.

Both with the course's CartPole settings (tuned_examples/impala/cartpole_impala.py and
tuned_examples/appo/cartpole_appo.py; APPO's lr is its own) and the same budget of env steps, each
with one runner in this process (a learner thread beside it, no Ray actors):
"""),
    code("""
CARTPOLE_BUDGET = 40_000  # env steps per run


def cartpole_run(config):
    \"\"\"(env steps, mean training return) after each iteration until CARTPOLE_BUDGET, the
    learner's updates, and the wall seconds.\"\"\"
    config = (config.environment("CartPole-v1")
              .env_runners(num_env_runners=0, num_envs_per_env_runner=4, rollout_fragment_length=50)
              .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                                       "vf_share_layers": False})
              .debugging(seed=0))
    curve, start = [], time.perf_counter()
    with config.build_algo() as algo:
        while not curve or curve[-1][0] < CARTPOLE_BUDGET:
            result = algo.train()
            curve.append((result["num_env_steps_sampled_lifetime"],
                          result["env_runners"]["episode_return_mean"]))
    updates = result["learners"]["default_policy"]["num_updates_lifetime"]
    return curve, updates, time.perf_counter() - start


impala_config = IMPALAConfig().training(
    lr=1e-3, train_batch_size_per_learner=500, gamma=0.99, grad_clip=40.0, vtrace=True,
    vf_loss_coeff=0.5, entropy_coeff=0.01, learner_queue_size=4)
appo_config = APPOConfig().training(
    lr=2e-3, train_batch_size_per_learner=500, gamma=0.99, grad_clip=40.0, vf_loss_coeff=0.5,
    entropy_coeff=0.01, clip_param=0.4, circular_buffer_num_batches=4,
    circular_buffer_iterations_per_batch=2, target_network_update_freq=2)
async_runs = {name: cartpole_run(config)
              for name, config in {"IMPALA": impala_config, "APPO": appo_config}.items()}
for name, (curve, updates, seconds) in async_runs.items():
    plt.plot(*zip(*curve), label=name)
    print(f"{name:6s} return {curve[-1][1]:6.1f} after {curve[-1][0]:,} env steps, "
          f"{updates} learner updates ({seconds:.0f} s here)")
impala_updates, appo_updates = (updates for _, updates, _ in async_runs.values())
impala_return, appo_return = (curve[-1][1] for curve, _, _ in async_runs.values())
print(f"APPO made {appo_updates / impala_updates:.1f} times as many updates from the same env steps "
      f"(each batch up to circular_buffer_iterations_per_batch times); its return ended "
      f"{abs(appo_return - impala_return):.0f} {'above' if appo_return > impala_return else 'below'}"
      " IMPALA's")
plt.gca().set(xlabel="env steps", ylabel="mean training return",
              title="CartPole-v1: IMPALA and APPO, the same env-step budget")
plt.legend()
plt.show()
"""),
    md(r"""
What differs by construction is the number of updates per env step (printed above): APPO reuses
each batch, and the clipping and the target network keep the reused data from pushing the policy
too far. More updates need not mean more return per env step: the curves show what they bought in
this run, at a budget that is a small part of a run to CartPole's best (500). With one runner in
this process, sampling and learning take turns; the pipeline's gain in wall time needs runners of
their own. `benchmarks/appo_cartpole.py` times both to a return of 450 with 2 runner actors,
beside RLlib's own APPO example.

## Summary

- A policy that sees only part of the state (StatelessCartPole's $(x, \theta)$) cannot tell
  situations apart that need different actions; memory (an LSTM's $(h_t, c_t)$) or a stack of
  recent frames gives it what the observation leaves out.
- Runners store each step's `state_in` / `state_out`, reset the state at episode starts and carry
  it across `sample()` calls; the learner cuts chunks into zero-padded sequences of `max_seq_len`
  with a mask, each starting from its stored state.
- `conv_filters` builds a CNN for [H, W, C] images; Atari frames are preprocessed to 84x84
  grayscale with frameskip 4; stacks are rebuilt on the learner so frames cross the object store
  once.
- APPO is IMPALA with PPO's clipped surrogate on V-trace advantages, a target network and a
  circular buffer that learns from each batch up to K times.

**Concept checks**: the questions at the end of this lesson, each choice with its explanation.

**Read next in the source**
- `rlcourse/connectors/common/add_time_dim_to_batch_and_zero_pad.py`: sequences and masks.
- `rlcourse/core/rl_module/lstm_module.py` (the learner's LSTM) and
  `rlcourse/core/rl_module/numpy_lstm.py` (the runners').
- `rlcourse/algorithms/ppo/ppo_learner.py`: where the sequences meet GAE and the loss.
- `rlcourse/core/rl_module/cnn_encoder.py`: `conv_filters`, checked shapes, NumPy on runners.
- `rlcourse/connectors/env_to_module/frame_stacking.py` and
  `rlcourse/connectors/learner/frame_stacking.py`: stacks on both sides.
- `rlcourse/algorithms/appo/appo_learner.py` (the loss and the target network) and
  `rlcourse/algorithms/impala/circular_buffer.py` (the reuse).
"""),
    md("""
## Papers

- Hochreiter, Schmidhuber, *Long Short-Term Memory*, Neural Computation 9, 1997
  ([doi:10.1162/neco.1997.9.8.1735](https://doi.org/10.1162/neco.1997.9.8.1735)): the LSTM cell.
- Hausknecht, Stone, *Deep Recurrent Q-Learning for Partially Observable MDPs*, 2015
  ([arXiv:1507.06527](https://arxiv.org/abs/1507.06527)): an LSTM in place of frame stacking, on
  Atari with flickering frames.
- Mnih et al., *Human-level control through deep reinforcement learning*, Nature 518, 2015
  ([doi:10.1038/nature14236](https://doi.org/10.1038/nature14236)): the Atari preprocessing
  (84x84 grayscale, frameskip 4, 4 stacked frames) and the CNN RLlib's default filters follow.
- Machado et al., *Revisiting the Arcade Learning Environment*, JAIR 61, 2018
  ([arXiv:1709.06009](https://arxiv.org/abs/1709.06009)): the ALE that `ale-py` packages, and
  how to evaluate on it.
- Luo et al., *IMPACT: Importance Weighted Asynchronous Architectures with Clipped Target Networks*,
  ICLR 2020 ([arXiv:1912.00167](https://arxiv.org/abs/1912.00167)): APPO's clipped surrogate,
  target network and circular buffer.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("12"),
    code("""
# Lesson check: without velocities the memoryless policy failed where the LSTM learned, the angle-only
# rule lasted shorter than the one that sees the angular velocity, the CNN learned the pixel task,
# the learner's stacks cost more bytes than single frames, IMPALA and APPO both learned CartPole
# within the same budget, APPO with more updates, and nothing is left running.
rule_means = [np.mean(steps) for steps in rule_steps.values()]
assert rule_means[0] < rule_means[1], rule_steps
assert lstm_return >= 150 and lstm_return > mlp_return + 50, curves
assert same_as_connector
assert pixel_return > 0.8, pixel_curve
assert stacked_bytes > 2 * single_bytes, (single_bytes, stacked_bytes)
assert impala_return >= 50 and appo_return >= 50, async_runs
assert appo_updates > impala_updates, (appo_updates, impala_updates)
assert not ray.is_initialized() and not psutil.Process().children(recursive=True)
print(f"Lesson 12 complete in {time.perf_counter() - LESSON_START:.0f} s: memory beat no memory "
      f"({lstm_return:.0f} against {mlp_return:.0f}), a CNN learned from pixels, and IMPALA and "
      "APPO learned CartPole.")
"""),
]

if __name__ == "__main__":
    write_lesson(NAME, CELLS)
