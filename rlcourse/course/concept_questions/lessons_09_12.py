"""Concept checks of lessons 09-12: off-policy RL, multi-agent RL, diagnosing a run, memory and
pixels."""

from rlcourse.course.concept_question import Question as Q

QUESTIONS = {"09": [
    Q("Why can DQN learn from transitions an old epsilon-greedy policy collected, while PPO cannot "
      "reuse old episodes?", 0, (
        ("Q-learning's target takes the max over next actions, whatever policy chose them; PPO's "
         "gradient is an average under the current policy", "The Bellman optimality target "
         "does not depend on who collected (s, a, r, s')."),
        ("DQN's network is smaller", "Size has nothing to do with which data a loss may use."),
        ("PPO throws episodes away only to save memory", "Old episodes would give a biased gradient; "
         "memory is not the reason.")),
      ),
    Q("What goes wrong if DQN's target uses the online network itself, updated every step?", 1, (
        ("Nothing, it only costs more compute", "It costs less compute; the trouble is stability."),
        ("Every update moves the target it chases, which can make Q oscillate or diverge",
         "The target network holds the target still between syncs."),
        ("The replay buffer overflows", "The buffer's size does not depend on the target.")),
      ),
    Q("Double Q-learning lets the online network pick the next action and the target network value "
      "it. What does that fix?", 2, (
        ("Slow exploration", "Exploration is epsilon's job; the target does not act."),
        ("The buffer's memory use", "The target's form does not touch the buffer."),
        ("Overestimation: the max over noisy estimates is biased upward", "With two networks "
         "an action picked for its noise is valued without that noise.")),
      ),
    Q("Prioritized replay samples high-error transitions more often. What do its importance weights "
      "undo?", 0, (
        ("The bias: the update would otherwise be an average under the priority distribution, not "
         "the buffer's", "Each sample is weighted by (1 / (N * P(i)))^beta."),
        ("The priorities themselves, so sampling becomes uniform again", "Sampling stays "
         "prioritized; only each sample's weight in the loss changes."),
        ("Overestimation", "That is double Q's job.")),
      ),
    Q("With n = 3, an episode terminates one step after step t. What is step t's n-step target?", 1, (
        ("r_t + gamma * r_t+1 + gamma^2 * max Q(s_t+2)", "There is no s_t+2: the episode ended, and "
         "a terminal state has no value."),
        ("r_t + gamma * r_t+1, with no bootstrap", "The row ends at the episode's end and the "
         "terminal's value is 0."),
        ("r_t + gamma * max Q(s_t+1)", "That is the 1-step target; the second reward is known and "
         "counts.")),
      ),
], "10": [
    Q("In a turn-based game, the observation dict after a step holds only agent 2. What does that "
      "mean?", 0, (
        ("Only agent 2 acts next: an agent acts when it gets an observation", "Agents that "
         "take turns appear in the dicts on their turns."),
        ("Agent 1 has left the episode", "Its episode ends with its own done flag (or `__all__`), "
         "not by missing one observation."),
        ("The env has a bug", "Agents missing from a step's dict is the normal multi-agent API.")),
      ),
    Q("Two agents have symmetric roles. Why can one shared policy learn faster than two separate "
      "ones?", 1, (
        ("A shared policy has more parameters", "It has half as many as two policies."),
        ("Both agents' experience trains the same module: twice the data per update", "If "
         "the best actions are the same for both, sharing halves the samples needed."),
        ("Shared policies explore less", "Exploration is the same per agent.")),
      ),
    Q("In self-play, why do the opponents come from frozen snapshots instead of the learning policy "
      "itself?", 2, (
        ("Frozen policies act faster", "They run the same network; speed is not the point."),
        ("Frozen snapshots always lose, which speeds learning", "They do not always lose; they "
         "are past selves."),
        ("A league of fixed past selves gives a stable set to beat, and keeps the player from "
         "forgetting how to beat old strategies", "Against only its current self a player can "
         "chase its own tail.")),
      ),
    Q("Why measure the self-play player against a fixed heuristic opponent?", 0, (
        ("Against its own snapshots its win rate stays near 50% as both improve: a fixed opponent is "
         "a yardstick", "Progress shows only against something that does not move."),
        ("The heuristic is the strongest player", "It need not be; it need only stay the same."),
        ("Self-play has no win rate", "It has one, but it measures the gap to itself, not skill.")),
      ),
], "11": [
    Q("Why does `policy_loss` stay near 0 even in a run that learns well?", 1, (
        ("The policy has stopped learning", "A healthy run shows it too; the loss's value is not "
         "progress."),
        ("Advantages are normalized to mean 0 and the ratio starts at 1, so the surrogate averages "
         "near 0: its gradient matters, not its value", "Read entropy, KL and the return "
         "instead."),
        ("The loss is clipped to 0", "Clipping limits the ratio, not the loss's value.")),
      ),
    Q("A run's `vf_loss` is exactly 10.0 at every iteration. What do you look at first?", 2, (
        ("The learning rate", "A bad lr makes the value loss move, not sit on one round number."),
        ("`entropy_coeff`", "It touches the policy loss, not the value loss."),
        ("`vf_clip_param` (10.0): the loss is clipped there; a `vf_explained_var` that does not "
         "rise confirms the critic is stuck", "The returns are larger than the clip allows, "
         "often a reward scale to fix.")),
      ),
    Q("Why is a missing bootstrap at truncation invisible on an env whose episodes never reach the "
      "time limit?", 0, (
        ("Every episode ends terminated, so the bootstrap at truncation is never used", "The "
         "bug shows only once good policies hit the limit."),
        ("The critic learns to make up for it", "It cannot: the targets themselves are wrong when "
         "truncation happens."),
        ("PPO never bootstraps", "GAE bootstraps at every chunk cut and truncation.")),
      ),
    Q("Early in a run the training return lags the evaluation return. Why?", 2, (
        ("Evaluation uses more episodes", "More episodes lower the noise, not the level."),
        ("The evaluation env is easier", "It is the same env, built from the same config."),
        ("Training samples actions (exploration), and its mean is smoothed over episodes from older "
         "policies", "Both pull the training return below the greedy evaluation of the "
         "current weights.")),
      ),
    Q("Why can PPO still learn when the critic learns nothing?", 1, (
        ("It cannot: the advantages are then 0", "They are not 0: they become the returns minus "
         "a fixed baseline."),
        ("The advantages become returns minus a constant: still an unbiased policy gradient, just "
         "noisier", "That is REINFORCE with a poor baseline."),
        ("The value loss is added to the policy loss", "Adding it does not make the critic useful.")),
      ),
], "12": [
    Q("Why can no MLP on (x, theta) match the rule that also sees the angular velocity, however long "
      "it trains?", 0, (
        ("The same (x, theta) occurs with different velocities that need different actions, and a "
         "memoryless policy must act the same on the same input", "The velocity is not a "
         "function of the current observation."),
        ("The MLP is too small", "No size helps: the information is not in its input."),
        ("PPO cannot train on two numbers", "It trains on any observation; the missing velocity is "
         "the limit.")),
      ),
    Q("A sequence starts at step 16 of an episode. Which state does the learner start it from?", 2, (
        ("Zeros, as at an episode's start", "Then the learner evaluates a different memory than the "
         "runner acted with: wrong probabilities, and nothing from steps before 16."),
        ("The state after the previous sequence's last training pass", "Training passes change the "
         "weights; the state the runner had is what reproduces the acting."),
        ("The runner's stored `state_in` at step 16", "The sequence resumes the memory the "
         "policy had when it acted.")),
      ),
    Q("Why must a sequence not run from the end of one episode into the next?", 1, (
        ("Padding would be impossible", "Padding is what lets sequences stop at the episode's end."),
        ("The memory would carry the old episode into the new one, a state the runner never had: "
         "runners reset it at episode starts", "The learner must see what the runner saw."),
        ("It would make sequences too long", "Sequences are at most `max_seq_len` either way.")),
      ),
    Q("Frame stacking gives the module the last 4 frames. What can it still not know that an LSTM "
      "could?", 0, (
        ("Anything seen more than 4 frames ago", "The stack is a fixed window; an LSTM's "
         "state can carry information further."),
        ("The velocity of a moving object", "Two stacked frames already show motion."),
        ("Nothing: 4 frames are the full state", "Only when nothing older matters, as on many but "
         "not all Atari games.")),
      ),
    Q("APPO's circular buffer hands each train batch to the learner up to K times. What keeps those "
      "repeated updates from pushing the policy too far from the one that sampled the data?", 1, (
        ("V-trace alone", "V-trace corrects the value targets for the policy lag; it does not limit "
         "how far an update moves the policy, which IMPALA's plain gradient may do."),
        ("The clipped surrogate, whose ratio is clipped around the target network's policy",
         "Past 1 +/- clip_param the ratio gives no more gradient, so reusing a batch cannot move "
         "the policy far from the older copy."),
        ("Dropping each batch after its first use", "That is IMPALA's queue; APPO's buffer keeps it "
         "for up to K uses.")),
      ),
]}
