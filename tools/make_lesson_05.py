"""Writes lessons/05_impala.ipynb (outputs stripped): python tools/make_lesson_05.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "05_impala.ipynb"

CELLS = [
    md("""
# Lesson 05 — IMPALA: acting and learning at the same time

**By the end of this lesson you can**
1. show, with measured timers, where PPO's runners and learner wait for each other;
2. explain how IMPALA removes that waiting: requests in flight, a learner thread, a bounded queue;
3. read *policy lag* in IMPALA's results and say where it comes from;
4. read V-trace's value targets (stated here, as in the IMPALA paper, not derived) and compute them
   for a small fragment (the exercise);
5. compare IMPALA and PPO on this machine: env steps per second and learning curves.

**Time:** about 50 minutes of study (the exercise included); the cells run in under two minutes on 2 idle
cores (measured there; longer on a busy or 1-CPU machine).
Notation as in lessons 01-02 ($s_t, a_t, r_t, \\gamma, V(s_t), \\pi_\\theta$; here $\\mu$ is the
behaviour policy); see the [glossary](../docs/glossary.md).
"""),
    code("""
import time

import matplotlib.pyplot as plt
import numpy as np
import ray
from IPython.display import display

from rlcourse import IMPALAConfig, PPOConfig
from rlcourse.utils.resources import init_ray

init_ray(num_cpus=2)

def layout(config):
    \"\"\"The same two runner actors, and the same small networks, for every algorithm here.\"\"\"
    return (config.environment("CartPole-v1").debugging(seed=0)
            .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
            .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False}))
"""),
    md("""
## 1. Where PPO waits

One PPO iteration is three phases, one after the other: the runners **sample** a batch with the
current weights, the learner runs several epochs of **updates** on it, and the new **weights** go
back to the runners. While the learner updates, the runners have nothing to do; while they sample,
the learner waits. The result dict times each phase; below PPO's measured iteration is IMPALA's
schedule (section 2), where nobody waits. PPO gets the course's CartPole settings,
those of `tuned_examples/ppo/cartpole_ppo.py` (PPOConfig's defaults are RLlib's, which suit large
problems).
"""),
    code("""
from rlcourse.course.scaling_diagrams import ppo_vs_impala

ppo_config = layout(PPOConfig()).training(
    lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6, lambda_=0.95,
    clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5, use_kl_loss=False, grad_clip=0.5)
with ppo_config.build_algo() as ppo:
    for _ in range(3):
        timers = ppo.train()["timers"]
phases = [("sample", timers["env_runner_sampling_timer"]), ("update", timers["learner_update_timer"]),
          ("sync weights", timers["synch_weights"])]
ppo_vs_impala(phases)
busy = timers["env_runner_sampling_timer"] / timers["training_iteration"]
print(f"The runners were busy for {busy:.0%} of the iteration.")
"""),
    md("""
## 2. IMPALA: runners and learner never wait for each other

IMPALA (Espeholt et al., 2018) keeps the runners sampling all the time and learns concurrently:

* every runner has up to `max_requests_in_flight_per_env_runner` `sample()` requests running; the
  driver collects **whichever are done** with `ray.wait` and sends a new request at once;
* finished batches of `train_batch_size_per_learner` steps go into a **bounded queue**
  (`learner_queue_size`); a **learner thread** in the driver takes them out and updates; when
  learning falls behind, the oldest batch is dropped. The runners sample in processes of their
  own, so they never wait for the learner. Inside the driver, the learner thread and the main loop
  (which collects samples and sends requests) share Python's interpreter lock (the GIL): only one
  runs Python at a time, but torch releases the lock inside its numeric kernels, so the main loop
  gets turns during every update;
* every `broadcast_interval` updates the new weights are put into Ray's object store once and sent
  to every runner, which takes them after the requests it is already working on.
"""),
    code("""
from rlcourse.course.scaling_diagrams import impala_pipeline

impala_pipeline()
"""),
    code("""
# The course's CartPole settings (tuned_examples/impala/cartpole_impala.py). IMPALAConfig's
# defaults are RLlib's (lr=5e-4, 1 request in flight, a queue of 3), which suit large problems.
impala_config = (layout(IMPALAConfig()).env_runners(max_requests_in_flight_per_env_runner=2)
                 .training(lr=1e-3, learner_queue_size=4, broadcast_interval=1))
with impala_config.build_algo() as impala:
    for _ in range(5):
        result = impala.train()
learner = result["learners"]["default_policy"]
print(f"sampled {result['env_runners']['num_env_steps_sampled']:,} env steps and made "
      f"{learner['num_updates']} updates in {result['timers']['training_iteration']:.2f} s")
print("queue:", result["learner_queue"], "| mean policy lag:", round(learner["policy_lag"], 2))
"""),
    md("""
## 3. Policy lag

A runner acts with the weights it last received. By the time its fragment is trained on, the
learner may have made more updates: the **policy lag** of a batch is how many updates separate the
weights that sampled it from the weights being trained. Sending weights less often
(`broadcast_interval`) makes the lag grow:
"""),
    code("""
lags = {}
for interval in (1, 4):
    with impala_config.copy().training(broadcast_interval=interval).build_algo() as impala:
        lags[interval] = [impala.train()["learners"]["default_policy"]["policy_lag"]
                          for _ in range(8)]
fig, ax = plt.subplots(figsize=(6, 3))
for interval, values in lags.items():
    ax.plot(range(1, len(values) + 1), values, marker="o", label=f"broadcast_interval={interval}")
ax.set_xlabel("training iteration")
ax.set_ylabel("mean policy lag (updates)")
ax.legend()
plt.show()
"""),
    md(r"""
## 4. V-trace: learning from slightly old data

The data was sampled by the **behaviour policy** $\mu$ (the runner's old weights) but the learner
improves the **target policy** $\pi$. V-trace (Espeholt et al., 2018) corrects the value targets with importance ratios
$\pi(a_t|s_t)/\mu(a_t|s_t)$, **truncated** so that one unlikely action cannot blow the update up:

$$\rho_t = \min\left(\bar\rho, \frac{\pi(a_t|s_t)}{\mu(a_t|s_t)}\right), \qquad
  c_t = \min\left(\bar c, \frac{\pi(a_t|s_t)}{\mu(a_t|s_t)}\right)$$

$$\delta_t = \rho_t \left(r_t + \gamma V(s_{t+1}) - V(s_t)\right), \qquad
  v_t = V(s_t) + \delta_t + \gamma c_t \left(v_{t+1} - V(s_{t+1})\right)$$

We state these targets as the paper gives them, without deriving them (the paper proves what they
converge to). They are computed backwards from the end of the fragment, where $v_T - V(s_T) = 0$ and $V(s_T)$ is the
bootstrap value (the value of the fragment's last observation). After a **termination** there is no
future: the discount of that step is 0. The policy gradient uses
$\rho^{pg}_t (r_t + \gamma v_{t+1} - V(s_t))$ with its own clip ($\bar\rho^{pg}$).

When $\pi = \mu$ every ratio is 1, and $v_t$ is the ordinary **n-step return** bootstrapped from
$V(s_T)$: V-trace generalizes what on-policy methods already do. A four-step example:
"""),
    code("""
from rlcourse.algorithms.impala.vtrace import vtrace

rewards = np.array([1.0, 1.0, 1.0, 1.0])
values = np.array([3.0, 2.5, 2.0, 1.5])
bootstrap, gamma = 1.0, 0.9
next_values = np.append(values[1:], bootstrap)
ends = np.array([False, False, False, True])    # the fragment ends at step 3 (not terminated)
behaviour_logp = np.log([0.5, 0.5, 0.5, 0.5])

def targets(target_probs):
    vs, _ = vtrace(behaviour_logp, np.log(target_probs), rewards, values, next_values,
                   np.zeros(4, bool), ends, gamma)
    return vs

n_step = [sum(gamma**k * rewards[s + k] for k in range(4 - s)) + gamma ** (4 - s) * bootstrap
          for s in range(4)]
print("on-policy V-trace:", targets([0.5] * 4).round(3))
print("n-step returns:   ", np.round(n_step, 3))
print("pi likes a_1 less:", targets([0.5, 0.1, 0.5, 0.5]).round(3), "(ratio 0.2: step 1's correction, and all that flows back through it, shrinks)")
print("pi likes a_1 more:", targets([0.5, 0.9, 0.5, 0.5]).round(3), "(ratio 1.8, clipped to 1)")
"""),
    md("""
### Exercise: write V-trace

Complete `my_vtrace` for one fragment of `T` steps: arrays of length `T`, `bootstrap_value` is
$V(s_T)$, and `terminated` says whether the fragment's last step ended the episode. Loop backwards
over the steps. The checker compares your targets with those of rlcourse's `vtrace` on on-policy,
off-policy, clipped and terminated fragments (with read-only inputs), and says which case fails.
Until you write it, it is reported as not attempted. Stuck? `show_solution("vtrace")`.
"""),
    code("""
from rlcourse.course.exercises import check_vtrace, show_solution

def my_vtrace(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
              rho_bar=1.0, c_bar=1.0):
    \"\"\"V-trace targets v_s, one per step of the fragment.

    Hints: ratios = exp(target_logp - behaviour_logp); rho_t = min(rho_bar, ratio_t),
    c_t = min(c_bar, ratio_t); delta_t = rho_t (r_t + gamma V(s_{t+1}) - V(s_t)) with V(s_T) =
    bootstrap_value (and no future after a termination);
    v_t - V(s_t) = delta_t + gamma c_t (v_{t+1} - V(s_{t+1})).
    \"\"\"
    # TODO: about 10 lines, then delete the raise.
    raise NotImplementedError("TODO: V-trace targets")

my_vtrace = check_vtrace(my_vtrace)  # yours if right, rlcourse's while not attempted
"""),
    md("""
## 5. IMPALA against PPO, side by side

Both algorithms get the same two runners and networks and the settings of sections 1 and 2, and
train until the mean return of the last 100 episodes reaches 450, or for 40 seconds and at least
30,000 env steps (a busy machine samples them more slowly, and the lesson's check needs some
learning to look at). We record the return and the env steps sampled against wall time.
"""),
    code("""
def race(config, budget_s=40.0, min_env_steps=30_000, target=450.0):
    \"\"\"Train until `target`, or `budget_s` seconds and `min_env_steps` env steps have passed;
    return (seconds, return, env steps) per iteration.\"\"\"
    curve, line = [], display("building...", display_id=True)
    with config.build_algo() as algo:
        start, steps = time.perf_counter(), 0
        while time.perf_counter() - start < budget_s or steps < min_env_steps:
            result = algo.train()
            ret = result["env_runners"]["episode_return_mean"]
            steps = result["num_env_steps_sampled_lifetime"]
            curve.append((time.perf_counter() - start, ret, steps))
            line.update(f"{type(algo).__name__}: {curve[-1][0]:5.1f} s | return {ret:6.1f} | "
                        f"{curve[-1][2]:8,d} env steps")
            if ret >= target:
                break
    return np.array(curve)

curves = {"PPO": race(ppo_config), "IMPALA": race(impala_config)}
"""),
    code("""
rates = {name: c[-1, 2] / c[-1, 0] for name, c in curves.items()}
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
for name, c in curves.items():
    left.plot(c[:, 0], c[:, 1], label=name)
left.set_xlabel("seconds of training")
left.set_ylabel("mean return (last 100 episodes)")
left.set_title("learning curves")
left.legend()
right.bar(list(rates), list(rates.values()), color=["tab:blue", "tab:orange"])
right.set_ylabel("env steps sampled per second")
right.set_title(f"throughput: IMPALA {rates['IMPALA'] / rates['PPO']:.1f}x PPO")
plt.show()
"""),
    md("""
The chart's title gives the throughput factor measured on this machine just now. IMPALA's runners
never wait for the learner, so with a core for each of them it samples more env steps per second
than PPO; on a busy machine or a single CPU the runners wait for a core instead, and the gap
shrinks. IMPALA also needs
more of them to learn, because each batch gets one gradient step (PPO makes several epochs over
every batch) and because its data is slightly off-policy. Which one wins the race depends on what
is expensive: when env steps are cheap and plentiful (a fast simulator, many machines), IMPALA's
throughput wins; when every env step is precious, PPO's sample efficiency does.

IMPALA also has no brake like PPO's clipped ratio: a step too large can push the policy to always
pick one action. Its entropy falls to 0, the return to about 9, and a policy that never tries the
other action can never learn it again. When the settings of section 2 were chosen (on a 2-core
machine, training 60 s per seed; `tuned_examples/impala/cartpole_impala.py` records the runs), 8 of
25 runs with `lr=2e-3` collapsed this way, and none of 12 with `lr=1e-3` and IMPALAConfig's
`entropy_coeff=0.01`.
Watch `learners/default_policy/entropy` in the results when you try larger learning rates.

## Summary

- PPO alternates sampling and learning; each side waits for the other.
- IMPALA keeps requests in flight on every runner, learns in a thread fed by a bounded queue, and
  sends weights every `broadcast_interval` updates: nobody waits, at the price of **policy lag**.
- V-trace (stated, not derived here) corrects the value targets for that lag with truncated importance ratios; on-policy it is
  the n-step return.

**Read next in the source**
- `rlcourse/algorithms/impala/impala.py`, `IMPALA.training_step`: the asynchronous loop.
- `rlcourse/env/env_runner_group.py`, `fetch_ready_async_samples`, and `async_sampling.py`: requests in
  flight and `ray.wait`.
- `rlcourse/algorithms/impala/learner_thread.py`: the bounded queue, dropped batches and policy lag.
- `rlcourse/algorithms/impala/vtrace.py` and `rlcourse/algorithms/impala/impala_learner.py`: V-trace and the loss.
"""),
    md("""
## Papers

- Espeholt et al., *IMPALA: Scalable Distributed Deep-RL with Importance Weighted Actor-Learner
  Architectures*, ICML 2018 ([arXiv:1802.01561](https://arxiv.org/abs/1802.01561)): the
  decoupled actors and learner, policy lag and V-trace, sections 2-4 and the exercise.
- Schulman, Wolski, Dhariwal, Radford, Klimov, *Proximal Policy Optimization Algorithms*, 2017
  ([arXiv:1707.06347](https://arxiv.org/abs/1707.06347)): the synchronous baseline of sections 1 and 5.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("05"),
    code("""
# Lesson check: both learned, and IMPALA's policy lag grows with the broadcast interval (how much
# faster it sampled depends on the machine: the chart's title says what this one did).
assert rates["IMPALA"] > 0 and rates["PPO"] > 0, rates
assert curves["IMPALA"][:, 1].max() >= 150, curves["IMPALA"][-1]
assert curves["PPO"][:, 1].max() >= 150, curves["PPO"][-1]
assert np.mean(lags[4]) > 0 and min(min(v) for v in lags.values()) >= 0, lags  # no speed ratio
ray.shutdown()
print("Lesson 05 complete.")
"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
