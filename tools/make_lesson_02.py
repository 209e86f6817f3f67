"""Writes lessons/02_anatomy_of_an_algorithm.ipynb from the cells below (outputs stripped)."""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "02_anatomy_of_an_algorithm.ipynb"

CELLS = [
    md("""# Lesson 02 — Anatomy of an Algorithm: runners, episodes, modules, learners

In lesson 01, `algo.train()` was a black box. Here we take it apart: we build each piece by hand,
look at what it hands to the next one, and then find the very same pieces inside an `Algorithm`.

**By the end of this lesson you can**
1. build EnvRunner actors yourself, give them a Learner's weights and let them sample;
2. read a `SingleAgentEpisode`: n+1 observations, actions, rewards, `action_logp`, and how it ended
   (terminated, truncated, or continued in the next chunk);
3. say what an RLModule's `forward_train`, `forward_exploration` and `forward_inference` return,
   and what the action distribution is;
4. derive the policy gradient (REINFORCE), say why a baseline keeps it unbiased, and measure how
   much it lowers the gradient's variance;
5. say what an advantage is, compute GAE advantages by hand, and write PPO's clipped surrogate
   loss (the two exercises), then run a Learner update on your episodes;
6. follow the data walk through the source: config → `Algorithm.setup` → `EnvRunnerGroup.sample` →
   `EnvRunner.sample` → episodes → `LearnerGroup.update` → `Learner.update` → weights →
   `EnvRunnerGroup.sync_weights`.

**Time:** about 70 minutes of study (two exercises); the cells run in about a minute on 2 idle
cores (measured there; longer on a busy or 1-CPU machine). Terms and
notation ($s_t, a_t, r_t, \\gamma, \\lambda, V(s_t), A_t, \\pi_\\theta$) are as in lesson 01 and the
[glossary](../docs/glossary.md)."""),
    md("""## 1. The map

One training iteration of PPO is one turn around this loop. Every box is a function in a file you
can open; every arrow is data handed over: episodes from the runners to the learner, weights back
from the learner to the runners. `Algorithm.setup` builds the loop once, from the config."""),
    code("""import time

import matplotlib.pyplot as plt
import numpy as np
import ray
from IPython.display import display

from rlcourse.course.diagrams import clipped_objective, data_walk, episode_chunk, gradient_variance
from rlcourse.utils.resources import init_ray

init_ray(num_cpus=2)
data_walk()"""),
    md("""## 2. One config, one Learner, and the weights it hands out

Every piece is built from the same `AlgorithmConfig`. The env's spaces come from one env built here
(`probe_spaces`, which is how `Algorithm.setup` learns them). The **Learner** owns the torch
`RLModule` and its optimizer. Here it is PPOConfig's default model, RLlib's: two networks of two
256-unit layers each, the policy `pi` and the value function `vf` (`vf_share_layers=False`, as in
RLlib's PPO; lesson 01 made them 64 units wide). RLlib's `DefaultModelConfig`, and IMPALA, share
one `encoder` between a policy head and a value head instead (`vf_share_layers=True`): fewer weights,
but the value loss then shapes the policy's features too. Runners get the module's weights as NumPy
arrays, and only the part they need: `inference_only=True` leaves out the value function (`vf.*`),
which only the learner uses. The
`.training(...)` settings are the course's CartPole settings, from
`tuned_examples/ppo/cartpole_ppo.py` (PPOConfig's defaults are RLlib's, which suit large problems);
its `model_config` is left at PPOConfig's default, unlike the tuned example's [64, 64], to show
RLlib's network."""),
    code("""from rlcourse import PPOConfig
from rlcourse.algorithms.ppo.ppo_learner import PPOLearner
from rlcourse.env.registry import probe_spaces

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=2, num_cpus_per_env_runner=0.5)
    .training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
              lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
              use_kl_loss=False, grad_clip=0.5)
    .debugging(seed=0)
)
env_creator = config.get_env_creator()
observation_space, action_space = probe_spaces(env_creator, config.env_config)
learner = PPOLearner(config, observation_space, action_space)
weights = learner.get_weights(inference_only=True)
print(observation_space, action_space)
for name, array in weights.items():
    print(f"{name:16s} {array.dtype} {array.shape}")"""),
    md("""## 3. EnvRunner actors, built by hand

An `EnvRunner` (here RLlib's `SingleAgentEnvRunner`) is a gymnasium vector env (here 2 CartPoles)
plus an inference-only copy of the policy. `ray.remote(SingleAgentEnvRunner)` makes it an actor class;
half a CPU each lets two share one core. A runner refuses to sample before it has weights, so we put
the weights into Ray's object store **once** and hand the same reference to both runners
(`EnvRunnerGroup.sync_weights` does the same, as we will see)."""),
    code("""from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

RemoteEnvRunner = ray.remote(SingleAgentEnvRunner).options(num_cpus=0.5)
runners = [RemoteEnvRunner.remote(config, env_creator, worker_index=i + 1) for i in range(2)]
weights_ref = ray.put(weights)
ray.get([runner.set_weights.remote(weights_ref) for runner in runners])

# Both runners sample at the same time; each returns a list of episode chunks.
episodes = [ep for chunks in ray.get([r.sample.remote(num_timesteps=1000) for r in runners])
            for ep in chunks]
print(f"{len(episodes)} chunks, {sum(len(ep) for ep in episodes)} steps in all:",
      sum(ep.is_terminated for ep in episodes), "terminated,",
      sum(ep.is_truncated for ep in episodes), "truncated,",
      sum(not ep.is_done for ep in episodes), "still running")
for ep in episodes[:4]:
    print(ep)"""),
    md("""## 4. Inside a SingleAgentEpisode

A chunk of **n steps** holds **n+1 observations**: `observations[t]` is what the agent saw before
`actions[t]`, and `observations[n]` is where the chunk stops. Rewards and `extra_model_outputs`
(here `action_logp`, the log-probability of each action under the policy that chose it) have one
entry per step. Everything is a NumPy array."""),
    code("""episode_chunk(n=4, ending="cut")"""),
    code("""ep = episodes[0]
print(ep)
print("observations       ", ep.observations.shape, ep.observations.dtype)
print("actions            ", ep.actions.shape, ep.actions[:10])
print("rewards            ", ep.rewards.shape, ep.rewards[:10])
print("action_logp        ", ep.extra_model_outputs["action_logp"].shape,
      ep.extra_model_outputs["action_logp"][:4].round(3))
print("terminated/truncated", ep.is_terminated, ep.is_truncated)
print("t_started, t        ", ep.t_started, ep.t, "| return", ep.get_return())"""),
    md("""CartPole **terminates** when the pole falls (no future: nothing to bootstrap from) and is
**truncated** at 500 steps (a time limit: the agent could have gone on). A third case matters just as
much: a chunk that is simply **cut** because `sample()` had collected enough steps. Its episode goes
on, and the runner's next `sample()` call continues it with the **same `id_`**, starting at the
observation where the previous chunk stopped."""),
    code("""first = ray.get(runners[0].sample.remote(num_timesteps=60))
second = ray.get(runners[0].sample.remote(num_timesteps=60))
cut_chunk = next(ep for ep in first if not ep.is_done)
continued = next(ep for ep in second if ep.id_ == cut_chunk.id_)
print("first call: ", cut_chunk)
print("second call:", continued)
print("starts where the first stopped:",
      continued.t_started == cut_chunk.t,
      np.array_equal(continued.observations[0], cut_chunk.observations[-1]))
print("joined:     ", cut_chunk.concat_episode(continued))"""),
    md("""## 5. The RLModule: three forward passes and a distribution

The learner's `RLModule` (`rlcourse/core/rl_module/rl_module.py`) has three forward methods, named as in RLlib:
- `forward_train`: what the **Learner** calls, with gradients;
- `forward_exploration`: what a runner calls to **sample** actions while training;
- `forward_inference`: what a runner calls to act **greedily** (evaluation, deployment).

All three return `action_dist_inputs`: for a Discrete action space, one logit per action. The
module turns them into an action **distribution** with `get_action_dist` (a Categorical here, a
Gaussian for continuous actions). `compute_values(batch)` gives the value estimates. With
`vf_share_layers=True`, `forward_train` also returns the shared encoder's output, `embeddings`, and
`compute_values(batch, embeddings)` reuses it instead of running the encoder again (RLlib's
signature); here the value function is a network of its own, so there are no embeddings."""),
    code("""import torch

module = learner.module
batch = {"obs": torch.tensor(ep.observations[:4])}  # a copy: arrays that Ray returns are read-only
train_out = module.forward_train(batch)
logits = train_out["action_dist_inputs"]
print("forward_train       ", {k: tuple(v.shape) for k, v in train_out.items()},
      "| requires_grad:", logits.requires_grad)
print("forward_exploration ", module.forward_exploration(batch)["action_dist_inputs"].requires_grad,
      "| forward_inference:", module.forward_inference(batch)["action_dist_inputs"].requires_grad)
dist = module.get_action_dist(logits.detach())
actions = dist.sample()
print("distribution        ", type(dist).__name__, "probs of the first two:", *dist.probs.numpy()[:2].round(3))
print("sampled actions     ", actions.tolist(), "log_prob:", dist.log_prob(actions).numpy().round(3))
print("greedy actions      ", module.greedy_actions(logits).tolist(),
      "| entropy:", dist.entropy().numpy().round(3))
print("values V(obs)       ", module.compute_values(batch, train_out.get("embeddings")).detach().numpy().round(3))"""),
    md("""The runners did not use this torch module: they ran the same network **in NumPy**
(`rlcourse/core/rl_module/numpy_mlp.py`), so runner processes never import torch. PPO relies on the two agreeing:
its probability ratio compares the learner's `log_prob` with the `action_logp` the runner recorded,
and before the first update that ratio must be exactly 1. Let us check it on every step we sampled."""),
    code("""obs = torch.as_tensor(np.concatenate([e.observations[:-1] for e in episodes]))
taken = torch.as_tensor(np.concatenate([e.actions for e in episodes]))
recorded = np.concatenate([e.extra_model_outputs["action_logp"] for e in episodes])
with torch.no_grad():
    learner_logp = module.get_action_dist(module.forward_train({"obs": obs})["action_dist_inputs"])\\
        .log_prob(taken).numpy()
logp_gap = float(np.abs(learner_logp - recorded).max())
print(f"{len(recorded)} steps: largest |learner log_prob - runner action_logp| = {logp_gap:.2e}")"""),
    md("""## 6. The policy gradient, derived and measured

What should the Learner do with these episodes? Make the expected return larger. Write
$\\tau = (s_0, a_0, r_0, s_1, a_1, r_1, \\dots)$ for one episode and $R(\\tau) = \\sum_t \\gamma^t r_t$
for its return. The objective is the return expected under the policy,

$$J(\\theta) = \\mathbb{E}_{\\tau \\sim \\pi_\\theta}\\left[R(\\tau)\\right] = \\sum_\\tau p_\\theta(\\tau)\\, R(\\tau).$$

Its gradient needs one trick, the **log-derivative trick**
$\\nabla_\\theta p_\\theta = p_\\theta \\nabla_\\theta \\log p_\\theta$, which turns the gradient of a sum
over episodes back into an expectation, something we can estimate from sampled episodes:

$$\\nabla_\\theta J(\\theta) = \\sum_\\tau p_\\theta(\\tau)\\, \\nabla_\\theta \\log p_\\theta(\\tau)\\, R(\\tau)
= \\mathbb{E}_{\\tau \\sim \\pi_\\theta}\\left[\\nabla_\\theta \\log p_\\theta(\\tau)\\, R(\\tau)\\right].$$

An episode's probability is a product of the env's moves, which do not depend on $\\theta$, and the
policy's choices: $p_\\theta(\\tau) = p(s_0) \\prod_t \\pi_\\theta(a_t \\mid s_t)\\, p(s_{t+1} \\mid s_t, a_t)$.
Its log is a sum, and the env's terms drop out of the gradient, so **no model of the env is
needed**: $\\nabla_\\theta \\log p_\\theta(\\tau) = \\sum_t \\nabla_\\theta \\log \\pi_\\theta(a_t \\mid s_t)$.
Last, an action cannot change the rewards that came before it, so each term only needs the rewards
from $t$ on: the return $G_t$. That is **REINFORCE** (Williams, 1992), one episode's estimate of the
gradient:

$$\\hat g = \\sum_t \\nabla_\\theta \\log \\pi_\\theta(a_t \\mid s_t)\\, G_t$$

(strictly, the discounted objective weights step $t$ by one more $\\gamma^t$; like most
implementations, rlcourse's PPO included, we drop it). Averaged over episodes, $\\hat g$ points uphill.

**A baseline.** Subtract from $G_t$ any $b(s_t)$ that does not depend on the action $a_t$:
$\\hat g_b = \\sum_t \\nabla_\\theta \\log \\pi_\\theta(a_t \\mid s_t)\\, \\big(G_t - b(s_t)\\big)$. The
mean does not change, because in every state the term we added has mean zero:

$$\\mathbb{E}_{a \\sim \\pi_\\theta}\\left[\\nabla_\\theta \\log \\pi_\\theta(a \\mid s)\\right] b(s)
= b(s) \\sum_a \\pi_\\theta(a \\mid s)\\, \\frac{\\nabla_\\theta \\pi_\\theta(a \\mid s)}{\\pi_\\theta(a \\mid s)}
= b(s)\\, \\nabla_\\theta \\sum_a \\pi_\\theta(a \\mid s) = b(s)\\, \\nabla_\\theta 1 = 0.$$

The spread does change. CartPole pays +1 a step, so every $G_t$ is positive: without a baseline
every action taken is pushed up, only by different amounts, and each estimate swings with the size
of $G_t$. With $b$ near the typical return, the actions of better-than-usual moments are pushed up
and the others down. Let us measure it: whole episodes from our two runners, one REINFORCE
estimate per episode for every weight of the policy network, with $G_t$ and with $G_t - b$. Here
$b$ is the simplest baseline, one number: the average $G_t$ over the steps of the *other* half of
the episodes (so that no episode's baseline saw its own actions)."""),
    code("""torch.set_num_threads(1)  # many small backward passes: one thread is faster on a shared machine
pg_episodes = [ep for chunks in ray.get([r.sample.remote(num_timesteps=2000) for r in runners])
               for ep in chunks if ep.is_terminated and ep.t_started == 0]  # whole episodes only
policy_weights = [w for name, w in module.named_parameters() if name.startswith("pi.")]


def returns_to_go(rewards, gamma):
    \"\"\"G_t = r_t + gamma * G_{t+1}, backwards from the end of a terminated episode.\"\"\"
    returns, g = np.zeros(len(rewards), np.float32), 0.0
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * g
        returns[t] = g
    return returns


def reinforce_estimate(episode, psi):
    \"\"\"One episode's sum_t grad log pi_theta(a_t | s_t) * psi_t, flattened to one vector.\"\"\"
    logits = module.forward_train({"obs": torch.tensor(episode.observations[:-1])})["action_dist_inputs"]
    logp = module.get_action_dist(logits).log_prob(torch.as_tensor(episode.actions))
    grads = torch.autograd.grad((logp * torch.as_tensor(psi)).sum(), policy_weights)
    return torch.cat([g.flatten() for g in grads]).numpy()


returns = [returns_to_go(ep.rewards, config.gamma) for ep in pg_episodes]
half = len(pg_episodes) // 2
baselines = [float(np.concatenate(returns[half:] if i < half else returns[:half]).mean())
             for i in range(len(pg_episodes))]
estimates = {"$G_t$": np.array([reinforce_estimate(ep, G) for ep, G in zip(pg_episodes, returns)]),
             "$G_t - b$": np.array([reinforce_estimate(ep, G - b) for ep, G, b
                                    in zip(pg_episodes, returns, baselines)])}
variance = {name: float(e.var(axis=0).sum()) for name, e in estimates.items()}
print(f"{len(pg_episodes)} whole episodes, {sum(map(len, pg_episodes))} steps, "
      f"{estimates['$G_t$'].shape[1]:,} policy weights; b = {baselines[0]:.2f} and {baselines[-1]:.2f}")
print(f"variance of one episode's estimate, summed over the weights: with G_t {variance['$G_t$']:,.0f}, "
      f"with G_t - b {variance['$G_t - b$']:,.0f} ({variance['$G_t$'] / variance['$G_t - b$']:.1f}x lower)")
gradient_variance(estimates)"""),
    md("""The left panel is the measurement. The right one shows the estimates along the direction of
their mean: the baseline narrows the spread, while the means (dashed) stay close, up to sampling
noise. That they agree exactly in expectation is the identity above, and we can check it on the
network itself: averaged over all the states we sampled, $\\sum_a \\pi_\\theta(a \\mid s)\\, \\nabla_\\theta
\\log \\pi_\\theta(a \\mid s)$ should be zero up to float rounding."""),
    code("""obs_all = torch.as_tensor(np.concatenate([ep.observations[:-1] for ep in pg_episodes]))
logp_all = torch.log_softmax(module.forward_train({"obs": obs_all})["action_dist_inputs"], dim=-1)
expected_score = (logp_all.exp().detach() * logp_all).sum() / len(obs_all)  # its gradient: the mean
score_means = torch.autograd.grad(expected_score, policy_weights)
score_gap = max(float(g.abs().max()) for g in score_means)
print(f"{len(obs_all)} states: largest entry of mean_s sum_a pi(a|s) grad log pi(a|s) = {score_gap:.1e}; "
      f"largest entry of a mean REINFORCE estimate: {np.abs(estimates['$G_t$'].mean(axis=0)).max():.2f}")"""),
    md("""A constant is the simplest baseline. What real algorithms use is the value network,
$b(s_t) = V(s_t)$, learned along with the policy: then $G_t - V(s_t)$ says how much better things
went from $s_t$ than expected, which is exactly the **advantage** of the next section. PPO's loss
is this estimator, with the advantage $A_t$ in place of $G_t - b(s_t)$, and a clip on top."""),
    md("""## 7. The Learner: from episodes to a training batch

`PPOLearner.build_batch` (`rlcourse/algorithms/ppo/ppo_learner.py`) flattens the chunks into arrays
(`flatten_episodes`), computes the value of **every** observation (including each chunk's last one,
to bootstrap from), and then the **advantages** with Generalized Advantage Estimation
(`compute_gae` in `rlcourse/utils/postprocessing.py`):

$$\\delta_t = r_t + \\gamma\\, V(s_{t+1})\\,(1 - \\text{terminated}_t) - V(s_t), \\qquad
A_t = \\delta_t + \\gamma\\lambda\\, A_{t+1}$$

computed backwards from the end of each chunk. $\\gamma$ (`config.gamma`, 0.99) is the discount
factor of lesson 01; $\\lambda$ (`config.lambda_`, 0.95) trades bias for variance: $\\lambda = 0$
uses only the one-step error $\\delta_t$ (low variance, but it trusts $V$), $\\lambda = 1$ the
whole observed return minus $V(s_t)$ (no trust in $V$, noisier).

The **advantage** $A_t$ says how much better action $a_t$ turned out than the value function
expected from $s_t$: positive, the action was better than usual for that state, so make it more
likely; negative, less likely. `value_targets = advantages + values` are what the value function
learns to predict."""),
    code("""train_batch = learner.build_batch(episodes)
for key, tensor in train_batch.items():
    print(f"{key:14s} {tuple(tensor.shape)} {tensor.dtype}")
print("advantages are standardized: mean", round(float(train_batch["advantages"].mean()), 4),
      "std", round(float(train_batch["advantages"].std()), 4))"""),
    md("""### Exercise: GAE for one chunk, by hand

Write `my_gae(episode, values, gamma, lambda_)`. `values` holds V of the chunk's **n+1
observations** (`values[n]` is the value of the last one); return **n advantages**, one per action.
Read `episode.rewards`, `episode.is_terminated` and `episode.is_truncated`.

Think about the last step:
- after a **termination** there is no future: nothing to bootstrap, V counts as 0;
- after a **truncation** (a time limit) the agent *could* have gone on: bootstrap from `values[n]`;
- a chunk that is **cut** but still running also bootstraps from `values[n]`.

`check_gae` compares your function with `rlcourse.utils.postprocessing.compute_gae` on chunks ending in
each of these ways (with read-only inputs) and names the case if one is wrong. Until you write it,
it is reported as not attempted and the lesson uses rlcourse's GAE. Stuck? `show_solution("gae")`."""),
    code("""from rlcourse.course.exercises import check_gae, show_solution


def my_gae(episode, values, gamma, lambda_):
    \"\"\"GAE advantages A_0 ... A_{n-1} for one chunk; `values` are V(s_0) ... V(s_n).

    Hints: loop t from n-1 down to 0; delta_t = r_t + gamma * V(s_{t+1}) - V(s_t), where
    V(s_n) counts as 0 only if the chunk is terminated; A_t = delta_t + gamma * lambda_ * A_{t+1}.
    Do not change `episode` or `values` (they are read-only here).
    \"\"\"
    # TODO: about 8 lines, then delete the raise.
    raise NotImplementedError("TODO: compute the advantages")


my_gae = check_gae(my_gae)  # yours if right, rlcourse's while not attempted"""),
    md("""## 8. PPO's clipped objective

Section 6's gradient, with the advantage $A_t$ of section 7 as the weight of each step:

$$\\nabla_\\theta J(\\theta) = \\mathbb{E}_t\\left[\\nabla_\\theta \\log \\pi_\\theta(a_t \\mid s_t)\\, A_t\\right]$$

Push up the log-probability of actions with a positive advantage, push down those with a negative
one. Its estimate is only good for the policy that collected the data, so plain policy gradient
takes one step per batch. PPO reuses a batch for several epochs, and keeps each update small by
watching the **probability ratio** between the policy being trained and the one that acted (whose
log-probabilities the runners recorded as `action_logp`):

$$r_t(\\theta) = \\frac{\\pi_\\theta(a_t \\mid s_t)}{\\pi_{\\theta_{old}}(a_t \\mid s_t)}, \\qquad
L^{CLIP}(\\theta) = \\mathbb{E}_t\\left[\\min\\big(r_t(\\theta) A_t,\\ \\mathrm{clip}(r_t(\\theta), 1-\\epsilon_{\\text{clip}}, 1+\\epsilon_{\\text{clip}})\\, A_t\\big)\\right]$$

with $\\epsilon_{\\text{clip}}$ = `config.clip_param` (0.2). The ratio is written $r_t(\\theta)$, as in the
PPO paper; with its $(\\theta)$ it is not the reward $r_t$. The picture shows what the min and the
clip do: once a good action ($A_t > 0$) has become $1+\\epsilon_{\\text{clip}}$ times likelier, or a
bad one ($A_t < 0$) $1-\\epsilon_{\\text{clip}}$ times as likely, the objective is flat and gives no more gradient. In the other direction, nothing
is clipped: an update that made a bad action likelier is always pulled back."""),
    code("""clipped_objective(clip_param=config.clip_param)"""),
    md("""### Exercise: the clipped surrogate loss

Write `clipped_surrogate_loss(logp, old_logp, advantages, clip_param)` with torch: `logp` are
$\\log \\pi_\\theta(a_t \\mid s_t)$ (with gradient), `old_logp` the runners' `action_logp`. Return
the **loss**, the number the optimizer minimizes: $-L^{CLIP}$, averaged over the batch.
`check_clipped_surrogate` compares its value and its gradient with the `policy_loss` of
`PPOLearner.compute_loss` (`rlcourse/algorithms/ppo/ppo_learner.py`) on batches where the clip is
active for $A_t > 0$ and for $A_t < 0$. Stuck? `show_solution("clipped_surrogate")`."""),
    code("""from rlcourse.course.exercises import check_clipped_surrogate


def clipped_surrogate_loss(logp, old_logp, advantages, clip_param):
    \"\"\"PPO's policy loss: -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)).

    Hints: ratio = exp(logp - old_logp); torch.clamp, torch.min and .mean() do the rest.
    Stay in torch (no .item() or numpy), so that the loss has a gradient.
    \"\"\"
    # TODO: about 3 lines, then delete the raise.
    raise NotImplementedError("TODO: the clipped surrogate loss")


clipped_surrogate_loss = check_clipped_surrogate(clipped_surrogate_loss)"""),
    md("""## 9. One update

`learner.update(episodes)` builds that batch and runs `num_epochs` passes of minibatch SGD on
`compute_loss`: the clipped policy loss (your exercise), the value loss
$(V(s_t) - \\text{value target}_t)^2$ and an entropy bonus. It returns the mean of each,
the same numbers you find in `result["learners"]["default_policy"]` after `algo.train()`."""),
    code("""before = {k: v.copy() for k, v in learner.get_weights().items()}
update_stats = learner.update(episodes)
for name, value in update_stats.items():
    print(f"{name:24s} {value:.4f}")
changed = [k for k, v in learner.get_weights().items() if not np.allclose(v, before[k])]
print("weights changed:", len(changed), "of", len(before), "tensors")"""),
    md("""## 10. Close the loop by hand

Now the runners need the new weights, and we go round again: sync weights → sample → update. This
is all `Algorithm.training_step` does for PPO. Each runner also counts the episodes that finished
(`get_metrics()`), so we can watch the return grow."""),
    code("""progress = display("starting...", display_id=True)
hand_returns = []
for iteration in range(8):
    weights_ref = ray.put(learner.get_weights(inference_only=True))          # sync_weights
    ray.get([r.set_weights.remote(weights_ref) for r in runners])
    episodes = [ep for chunks in ray.get([r.sample.remote(num_timesteps=1000) for r in runners])
                for ep in chunks]                                            # sample
    finished = [ret for m in ray.get([r.get_metrics.remote() for r in runners])
                for ret in m["episode_returns"]]
    update_stats = learner.update(episodes)                                  # update
    hand_returns.append(float(np.mean(finished)))
    progress.update(f"iteration {iteration + 1}: mean return {hand_returns[-1]:6.1f} over "
                    f"{len(finished)} episodes | vf_loss {update_stats['vf_loss']:.3f}")"""),
    md("""Here is one terminated episode and one cut chunk from the last batch, as the learner sees them:
the rewards, the values V(s_t), and your advantages. After only 8 batches the value function
still underestimates how long the pole now stays up, so most advantages are positive: the actions did
better than V expected. The difference is at the end. The terminated episode has no future: its last
deltas are 1 - V(s_t), and the last actions, which let the pole fall, get large negative advantages.
The cut chunk bootstraps from V of its last observation (the dot), so its last actions are not blamed
for an ending that never happened."""),
    code("""from rlcourse.course.diagrams import chunk_advantages

terminated_ep = max((e for e in episodes if e.is_terminated), key=len)
cut_ep = max((e for e in episodes if not e.is_done), key=len)
chunks = []
for title, e in [("terminated (the pole fell)", terminated_ep),
                 ("cut by sample() (the episode goes on)", cut_ep)]:
    with torch.no_grad():
        v = module.compute_values({"obs": torch.tensor(e.observations)}).numpy()
    chunks.append((title, e, v, my_gae(e, v, config.gamma, config.lambda_)))
chunk_advantages(chunks)"""),
    md("""## 11. The same pieces inside `Algorithm.train()`

Our hand-built runners have done their job; we stop them and let an `Algorithm` build everything from
the same config. Its `env_runner_group` holds EnvRunner actors like ours, and its `learner_group`
holds a `PPOLearner` like ours (in this process, since `num_learners=0`)."""),
    code("""from rlcourse.env.env_runner_group import EnvRunnerGroup
from rlcourse.core.learner.learner_group import LearnerGroup

for runner in runners:
    ray.kill(runner)
algo = config.build_algo()
group, learners = algo.env_runner_group, algo.learner_group
print(type(group).__name__, "with", group.num_remote_env_runners, "actors of class",
      group.foreach_env_runner(lambda runner: type(runner).__name__))
print("each actor's worker_index and sub-envs:",
      group.foreach_env_runner(lambda runner: (runner.worker_index, runner.num_envs)))
print(type(learners).__name__, "holding a", type(learners.local_learner).__name__)
same_classes = (isinstance(group, EnvRunnerGroup) and isinstance(learners, LearnerGroup)
                and type(learners.local_learner) is PPOLearner
                and set(group.foreach_env_runner(lambda runner: type(runner).__name__)) == {"SingleAgentEnvRunner"})"""),
    md("""Two iterations. The result's timers are our hand loop's three steps plus the whole iteration,
and the learner's numbers have the same names as `update_stats` above. `sync_weights` numbers each weights version (0 is the
initial weights from `setup`), **puts** it into the object store once, and sends that one reference
to every runner with a `set_weights` call it does not wait for: Ray runs an actor's calls in the
order they were sent, so the runner's next sample uses the new weights. After two iterations the
group has sent version 2, and every runner holds version 2."""),
    code("""for _ in range(2):
    result = algo.train()
print("timers (s):", {k: round(v, 3) for k, v in result["timers"].items()})
print("learner keys match our update:",
      set(result["learners"]["default_policy"]) == set(update_stats))
print("weights version sent by the group:", group.weights_seq_no,
      "| held by each runner:", group.foreach_env_runner(lambda runner: runner.weights_seq_no))
print("return:", round(result["env_runners"]["episode_return_mean"], 1))"""),
    md("""And here is PPO's whole training step (`rlcourse/algorithms/ppo/ppo.py`), the loop you just
wrote by hand:"""),
    code("""import inspect

from rlcourse import PPO

print(inspect.getsource(PPO.training_step))"""),
    md("""### The data walk, file by file

| step | where | what it does |
|---|---|---|
| config | `rlcourse/algorithms/algorithm_config.py`, `AlgorithmConfig` | every setting; `build_algo()` validates and builds |
| setup | `rlcourse/algorithms/algorithm.py`, `Algorithm.setup` | probes the env's spaces, builds the EnvRunnerGroup and LearnerGroup, syncs the first weights |
| sample | `rlcourse/env/env_runner_group.py`, `EnvRunnerGroup.sample` | asks every runner actor for its share of the batch, at the same time |
| sample | `rlcourse/env/env_runner.py`, `EnvRunner.sample`; `single_agent_env_runner.py`, `_sample_steps` | steps the vector env with the NumPy policy; slices the steps into chunks |
| episodes | `rlcourse/env/single_agent_episode.py`, `SingleAgentEpisode` | n+1 observations, n actions, rewards, `action_logp` |
| update | `rlcourse/core/learner/learner_group.py`, `LearnerGroup.update` | one local Learner, or shards for N Learner actors |
| update | `rlcourse/core/learner/learner.py`, `Learner.update`; `rlcourse/algorithms/ppo/ppo_learner.py` | `build_batch` (GAE), minibatch SGD on `compute_loss` |
| weights | `rlcourse/core/rl_module/rl_module.py`, `DefaultActorCriticModule.get_state` | NumPy arrays; `inference_only` leaves out the value function |
| sync | `rlcourse/algorithms/algorithm.py`, `Algorithm.sync_env_runner_weights`; `rlcourse/env/env_runner_group.py`, `EnvRunnerGroup.sync_weights` | the one way weights reach runners: one `ray.put`, one `set_weights` call per runner |"""),
    md("""## Summary

- An **EnvRunner** is a vector env plus an inference-only policy; as a Ray actor it samples in
  parallel with others. It needs weights before it samples, and returns **episode chunks**.
- A **SingleAgentEpisode** chunk has n+1 observations for n steps. It is terminated (no future),
  truncated (a time limit: bootstrap), or cut and continued by the next `sample()` with the same `id_`.
- The **RLModule**'s forward passes return `action_dist_inputs`; `get_action_dist` makes the
  distribution that actions are sampled from and that the loss takes log-probabilities of.
- The **policy gradient** comes from the log-derivative trick, needs no model of the env, and is
  estimated by **REINFORCE**, $\\sum_t \\nabla_\\theta \\log \\pi_\\theta(a_t \\mid s_t) G_t$; subtracting a
  **baseline** $b(s_t)$ keeps its mean (the score has mean zero in every state) and, as measured
  here, lowers its variance.
- An **advantage** $A_t$ says how much better $a_t$ did than $V(s_t)$ expected; GAE mixes one-step
  errors with $\\gamma\\lambda$, and bootstraps from $V(s_n)$ unless the chunk terminated.
- PPO's policy gradient raises $\\log \\pi_\\theta(a_t \\mid s_t)$ in proportion to $A_t$; its
  **clipped surrogate** stops rewarding a change once the ratio leaves $[1-\\epsilon_{\\text{clip}}, 1+\\epsilon_{\\text{clip}}]$ in
  the direction the advantage favours.
- The **Learner** turns chunks into a batch with GAE advantages and updates the weights, which go
  back to the runners. `Algorithm.train()` is that loop, with the pieces you built by hand.

**Read next in the source**
- `rlcourse/env/single_agent_env_runner.py`, `_sample_steps` and `_to_episodes`: how steps become chunks.
- `rlcourse/utils/postprocessing.py`, `flatten_episodes` and `compute_gae`: the Learner's version of your exercise.
- `rlcourse/algorithms/ppo/ppo_learner.py`, `build_batch` and `compute_loss`.
- `rlcourse/algorithms/algorithm.py`, `Algorithm.setup`; `rlcourse/algorithms/ppo/ppo.py`, `PPO.training_step`."""),
    md("""## Papers

- Williams, *Simple statistical gradient-following algorithms for connectionist reinforcement
  learning*, Machine Learning 8, 1992 ([doi:10.1007/BF00992696](https://doi.org/10.1007/BF00992696)):
  REINFORCE and the baseline of section 6.
- Schulman, Moritz, Levine, Jordan, Abbeel, *High-Dimensional Continuous Control Using Generalized
  Advantage Estimation*, ICLR 2016 ([arXiv:1506.02438](https://arxiv.org/abs/1506.02438)): GAE,
  section 7 and your first exercise.
- Schulman, Wolski, Dhariwal, Radford, Klimov, *Proximal Policy Optimization Algorithms*, 2017
  ([arXiv:1707.06347](https://arxiv.org/abs/1707.06347)): the clipped surrogate of section 8 and
  your second exercise.
- Liang et al., *RLlib: Abstractions for Distributed Reinforcement Learning*, ICML 2018
  ([arXiv:1712.09381](https://arxiv.org/abs/1712.09381)): the split into sampling workers and a
  learner that this lesson takes apart (RLlib's new API stack renamed the pieces EnvRunner and
  Learner).

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md)."""),
    concept_checks_cell("02"),
    code("""# Lesson check: the pieces fit together, the baseline lowered the gradient's variance without
# moving its mean, the hand-written loop learned, and the Algorithm is made of them.
assert logp_gap < 1e-4, logp_gap
assert variance["$G_t - b$"] < variance["$G_t$"] and score_gap < 1e-5, (variance, score_gap)
assert hand_returns[-1] > 1.5 * hand_returns[0], hand_returns
assert same_classes
assert set(result["learners"]["default_policy"]) == set(update_stats)
assert group.weights_seq_no == 2
assert group.foreach_env_runner(lambda runner: runner.weights_seq_no) == [2, 2]
algo.stop()
ray.shutdown()
print("Lesson 02 complete.")"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
