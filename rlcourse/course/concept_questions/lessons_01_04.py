"""Concept checks of lessons 01-04: Ray and RL basics, an algorithm's anatomy, custom envs, scaling."""

from rlcourse.course.concept_question import NumberQuestion as N
from rlcourse.course.concept_question import Question as Q

QUESTIONS = {"01": [
    N("An episode gives rewards 1, 1, 1 and ends. With the discount factor gamma = 0.9, what is the "
      "return from its first step?", 2.71, 0.011,  # 2.7 too: the lesson prints returns to one decimal
      "1 + 0.9 * 1 + 0.81 * 1: each reward is discounted once per step it lies in the future, and the "
      "first one not at all.", (
        (3.0, "That is the undiscounted sum: the second reward is worth gamma times its value from the "
              "first step, the third gamma squared."),
        (2.439, "This discounts the first reward too (0.9 + 0.81 + 0.729): the reward of the step "
                "itself counts in full."),
        (0.81, "Only the last reward, discounted: the return sums every reward from the step on.")),
      ),
    Q("A loop calls `ray.get(square.remote(i))` for i in range(8), one call per iteration. How many "
      "tasks run at the same time?", 0, (
        ("One: each `ray.get` waits for its task before the next one is submitted", "To run "
         "them in parallel, submit all eight first and `ray.get` the list of references once."),
        ("Eight: `.remote()` always runs in parallel", "`.remote()` returns at once, but `ray.get` "
         "inside the loop blocks before the next `.remote()` call is made."),
        ("As many as the machine has cores", "That holds when all eight are submitted before any "
         "`ray.get`; here each waits for the previous one.")),
      ),
    Q("Why is an EnvRunner a Ray actor rather than a task?", 2, (
        ("Actors start faster than tasks", "An actor costs more to start (its own process and state); "
         "it pays because it lives across many calls."),
        ("Tasks cannot return NumPy arrays", "Tasks return any object, arrays through the object "
         "store."),
        ("It keeps state between calls: its env, the episode in progress, the weights", "A "
         "task starts from nothing every call, so it would rebuild the env and lose the episode.")),
      ),
    Q("The trained PPO policy scores higher in greedy evaluation than its training return. Why?", 1, (
        ("Evaluation uses a newer policy than any training episode", "Evaluation after the last "
         "iteration does see the last weights, but the gap stays even with the same weights."),
        ("Training samples actions from the policy's distribution, unlikely ones included; greedy "
         "play always takes the most likely action", "Exploration costs return while "
         "training; evaluation turns it off."),
        ("Evaluation episodes are shorter", "CartPole's evaluation episodes run to the same limit; "
         "greedy play usually makes them longer, not shorter.")),
      ),
], "02": [
    N("An episode of 5 steps that terminated: how many observations does its SingleAgentEpisode "
      "hold?", 6, 0,
      "n + 1: the first observation from `reset` and one after every step; the last one is what a "
      "truncated episode would bootstrap from.", (
        (5, "One per action, but one is missing: the observation the last step arrived in."),
        (4, "Every step starts from an observation, so there are at least 5."),
        (7, "Only one observation comes from `reset`; each of the 5 steps adds one.")),
      ),
    Q("A runner's episode is cut at step 200 by `sample()` and goes on in the next chunk. What value "
      "does GAE bootstrap from at the cut?", 1, (
        ("0: the chunk ended there", "0 is right only for a terminated episode, whose last state has "
         "no future; this one goes on."),
        ("The critic's value of the 201st observation, V(s_200)", "The future exists but is "
         "not in this chunk, so the critic's estimate stands in for it."),
        ("The rewards of the next chunk", "They have not been sampled yet when the learner computes "
         "this chunk's advantages."),
        ("The mean episode return", "That is a statistic over many episodes, not an estimate of what "
         "follows this state.")),
      ),
    Q("Why does subtracting a baseline b(s) from the return keep the policy gradient unbiased?", 0, (
        ("The expected score, the sum over actions of pi(a|s) * grad log pi(a|s), is grad of 1 = 0",
         "B(s) does not depend on the action, so its term has expectation 0 and only the "
         "variance changes."),
        ("Because the baseline is small next to the returns", "A large baseline is just as unbiased; "
         "size has nothing to do with it."),
        ("Because the advantages are normalized afterwards", "Normalizing is a separate step and "
         "changes the scale, not the bias argument."),
        ("Because the critic is trained with its own loss", "How b is learned does not matter; any "
         "function of the state alone leaves the gradient unbiased.")),
      ),
    Q("In PPO's clipped loss (clip 0.2), a sample has advantage > 0 and probability ratio 1.5. What "
      "does its gradient do?", 2, (
        ("Pushes the ratio higher still", "That is the unclipped surrogate; the min picks the clipped "
         "term here."),
        ("Pulls the ratio back to 1.2", "Clipping does not pull back; it only stops pushing."),
        ("Nothing: the clipped term 1.2 * A is constant in the weights", "Once the ratio is "
         "past 1 + clip with A > 0, the sample adds no gradient, which keeps the update small.")),
      ),
], "03": [
    Q("The default network refuses a Discrete observation (a cell number) instead of taking it as one "
      "float. Why?", 1, (
        ("A float would overflow for large grids", "Cell numbers are small; the problem is what they "
         "mean, not their size."),
        ("A cell number is a label: cell 7 is not between cells 6 and 8 in any way the network "
         "could use", "One float makes near numbers look alike; `FlattenObservations` gives "
         "each cell its own input (one-hot)."),
        ("Gymnasium forbids it", "Gymnasium allows any space; the refusal is rlcourse's, so the "
         "mistake shows at once rather than as a run that learns badly.")),
      ),
    Q("Two runners each saw 1,000 observations. How many does the merged MeanStdFilter count?", 2, (
        ("1,000: the runners' counts are averaged", "Averaging would weigh a runner that saw little "
         "like one that saw much; counts add."),
        ("1,000 on each runner, kept apart", "Then the runners would normalize the same observation "
         "differently and the learner would mix two scales."),
        ("2,000, and every runner normalizes with the merged statistics", "One scale for all "
         "the data the learner sees, estimated from all of it.")),
      ),
    Q("Shaping adds +0.1 for every step that gets closer to the goal, and nothing for stepping away. "
      "What can an agent learn that potential-based shaping rules out?", 0, (
        ("To walk back and forth near the start, collecting +0.1 every cycle, instead of reaching "
         "the goal", "With F = gamma * Phi(s') - Phi(s) a loop sums to about 0, so the "
         "optimal policy is the unshaped task's."),
        ("To reach the goal faster", "That is what shaping hopes for, and potential-based shaping "
         "allows it."),
        ("Nothing: any bonus toward the goal leaves the best policy unchanged", "Only potential-"
         "based bonuses guarantee that; this one pays for cycles.")),
      ),
    Q("A shaped run shows a higher `episode_return_mean` than an unshaped one. What does that tell "
      "you?", 2, (
        ("The shaped run learned the task better", "Its return includes the bonus, so the numbers "
         "measure different things."),
        ("The shaped run learned it worse", "Nothing says so either; the two numbers cannot be "
         "compared."),
        ("Nothing yet: compare both on the unshaped reward, as evaluation in the original env does",
         "Judge every variant by the task's own reward.")),
      ),
    Q("A GridWorld episode stops at step 100 because of a time limit, far from the goal. Which flag "
      "should the env set, and why does it matter?", 1, (
        ("`terminated`, since the episode is over", "That tells the learner the last state is worth "
         "0, as if nothing could follow it, which is false."),
        ("`truncated`: the state still has a future, so the learner bootstraps from its value",
         "A time limit cuts the episode without ending the task."),
        ("Both, to be safe", "Terminated wins in the learner, so this is the wrong bootstrap again.")),
      ),
], "04": [
    Q("A CPU-bound env on a 2-core machine: sampling with 8 runners instead of 2 gives roughly what "
      "throughput?", 2, (
        ("4x", "Four times the runners only helps with four times the cores."),
        ("2x", "No extra core appears; the 8 runners take turns on the same 2."),
        ("About the same, or a little less", "The cores are the limit, and more processes "
         "add switching and memory.")),
      ),
    Q("An env that spends most of each step waiting (a remote simulator, I/O): why does it keep "
      "gaining with more runners than cores?", 0, (
        ("A waiting runner uses no CPU, so others run meanwhile", "The limit is how many can "
         "wait at once, not the cores."),
        ("Ray gives each runner its own core anyway", "Ray schedules by declared resources; the "
         "cores are shared."),
        ("Waiting envs use the GPU", "There is no GPU involved; the gain comes from overlapping the "
         "waits.")),
      ),
    Q("Why does one runner with 8 sub-envs sample faster than one with 1 sub-env, on one core?", 1, (
        ("Each sub-env gets its own core", "SYNC sub-envs step one after another in the runner's "
         "process."),
        ("One forward pass computes the actions of all 8 sub-envs, so the per-call cost is shared",
         "Batched inference amortizes the network call and Python overhead."),
        ("The sub-envs share one episode", "Each sub-env has its own episode.")),
      ),
    Q("With `num_learners=2`, what does the all-reduce do at every update?", 0, (
        ("Averages the two learners' gradients, so both apply the same step and stay identical",
         "Data parallelism: each learner computes on half the batch."),
        ("Averages the weights after each learner trains for a whole epoch alone", "That is "
         "federated averaging; the learners here never drift apart."),
        ("Sends each learner the other's batch", "Only gradients travel; batches stay where they "
         "are."),
        ("Sums the two losses into one learner", "Both learners compute; neither hands its work "
         "over.")),
      ),
]}
