"""Concept checks of lessons 05-08: IMPALA, Ray clusters, Ray Tune, callbacks and serving."""

from rlcourse.course.concept_question import Question as Q

QUESTIONS = {"05": [
    Q("In PPO's synchronous loop, what do the runners do while the learner updates?", 1, (
        ("They sample the next batch with the old weights", "That is IMPALA's way; PPO waits so that "
         "every batch comes from the current policy."),
        ("They wait: sampling resumes when the new weights arrive", "Runners and learner take "
         "turns, and each side's waiting is the time IMPALA wins back."),
        ("They help the learner compute gradients", "Runners only sample; the learner alone "
         "updates.")),
      ),
    Q("IMPALA broadcasts weights to the runners less often (a larger broadcast interval). What "
      "happens to the policy lag?", 0, (
        ("It grows: batches come from weights more updates old", "Lag counts the updates "
         "between the weights that sampled a batch and the ones that learn from it."),
        ("It shrinks, since runners are interrupted less", "Fewer broadcasts leave the runners "
         "acting with older weights, not newer ones."),
        ("Nothing: the queue decides the lag", "The queue adds lag too, but the broadcast interval "
         "sets how old the runners' weights are.")),
      ),
    Q("When the runners' policy mu equals the learner's pi (no lag), V-trace's targets are what?",
      2, (
        ("0 for every step", "The ratios pi/mu are 1, not 0; nothing is cancelled."),
        ("One-step TD targets r + gamma * V(s')", "V-trace still sums the fragment's rewards; the "
         "ratios of 1 keep every term."),
        ("The on-policy n-step returns, bootstrapped at the fragment's end", "With all ratios "
         "1 the corrections vanish and V-trace is the ordinary n-step target.")),
      ),
    Q("Why does V-trace clip the importance ratio pi/mu at rho-bar = 1?", 1, (
        ("To keep the targets unbiased", "Clipping adds a bias (toward mu's values); it is the price "
         "paid for the next answer."),
        ("To bound the variance: a product of large ratios over a fragment can explode",
         "One unlikely action under mu would otherwise dominate the target."),
        ("Because ratios above 1 are impossible", "pi can give an action more probability than mu "
         "did; then the ratio exceeds 1.")),
      ),
], "06": [
    Q("What runs only on the head node of a Ray cluster?", 2, (
        ("All the actors", "Actors go wherever their resources fit, on any node."),
        ("The object store", "Every node has its own object store; objects move between them."),
        ("The global control store (GCS): the cluster's table of nodes, actors and jobs",
         "That is why losing the head loses the cluster, while losing a worker does not.")),
      ),
    Q("A worker node dies during training. What brings its runner back on the head node?", 0, (
        ("Ray restarts the actor (`max_restarts`) where resources are free, and the algorithm "
         "pushes the current weights into it", "The restart is Ray's; the current weights come "
         "with the restarted runner's next sample request."),
        ("The worker node restarts itself", "A lost node stays lost until someone starts it; the "
         "runner moves instead."),
        ("The learner re-samples the lost episodes", "Lost in-flight samples are simply not used; "
         "nothing is replayed.")),
      ),
    Q("Why submit training as a Ray Job rather than run the script on your laptop against the "
      "cluster?", 1, (
        ("Jobs train faster", "The same code runs the same way; speed does not change."),
        ("The driver runs on the cluster, so closing the laptop does not stop the run, and its logs "
         "are kept", "The laptop only submits and follows."),
        ("Only jobs can use worker nodes", "A script connected to the cluster uses every node too.")),
      ),
    Q("To move a run from a laptop to a 10-node cluster, what changes?", 2, (
        ("The algorithm's code, to make it distributed", "It already is: runners and learners are "
         "actors wherever they run."),
        ("Nothing at all", "Then it would still use a laptop's worth of runners."),
        ("The settings (runners, resources) and the address Ray connects to", "The same "
         "config with bigger numbers.")),
      ),
], "07": [
    Q("Two learning rates were tried with one seed each, and lr=3e-4 ended higher. What can you "
      "conclude?", 1, (
        ("lr=3e-4 is better", "Seeds alone move the return of one config more than that; one run "
         "each cannot separate them."),
        ("Little, until each lr has several seeds and their spread is compared", "Compare "
         "means over seeds, with their spread."),
        ("lr=3e-4 is better if the gap is over 10%", "No fixed gap is safe: the seed-to-seed spread "
         "decides, and it must be measured.")),
      ),
    Q("What does ASHA risk when it stops the trials that trail at a rung?", 0, (
        ("Stopping a config that starts slowly but would have ended best", "It judges "
         "configs by early results, for the compute saved."),
        ("Running out of memory", "Stopped trials free their resources; ASHA lowers the load."),
        ("Picking a config that never ran to the end", "The survivors run to the end; only stopped "
         "trials end early.")),
      ),
    Q("Why can you not report a single lr as the best trial's under Population Based Training?", 2, (
        ("PBT does not record hyperparameters", "It does: each trial's config and every change."),
        ("PBT only changes the seed", "It perturbs hyperparameters such as lr."),
        ("The trial copied other trials' weights and perturbed lr along the way: its lr is a "
         "schedule", "The result belongs to that history, not to one value.")),
      ),
    Q("Why pick the config with the best mean over seeds rather than the best single trial?", 1, (
        ("The best single trial is always a failed one", "Not failed, just lucky, which is the "
         "problem."),
        ("The maximum of noisy results favours luck: that trial's seed, not its config, may explain "
         "it", "The mean over seeds estimates what the config does on the next run."),
        ("Means are cheaper to compute", "Both need the same trials.")),
      ),
], "08": [
    Q("Why is a custom episode metric computed in a callback on the runners, not on the driver?", 0, (
        ("The episodes live on the runners; only the logged numbers travel to the driver",
         "Shipping every step to the driver to compute one number would cost far more."),
        ("The driver cannot run Python callbacks", "The driver runs Python too; it just does not "
         "have the steps."),
        ("Metrics computed on the driver are not reduced", "Where a value is reduced does not "
         "change its meaning; where the data is does.")),
      ),
    Q("A run resumed from a checkpoint that holds the weights only continues differently from the "
      "uninterrupted run. What is missing?", 2, (
        ("Nothing: weights are the whole state", "The optimizer, filters, counters and random "
         "generators are state too."),
        ("The replay of the last iteration's episodes", "PPO keeps no episodes between iterations."),
        ("The optimizer's moments, the connector statistics, the counters and the random generators' "
         "states", "All of them decide the next update, so an exact resume restores them "
         "all.")),
      ),
    Q("Why keep the best checkpoint beside the latest one?", 1, (
        ("The latest is often corrupt", "Writes are atomic; both are whole."),
        ("Resume from the latest to continue exactly; deploy the best, since the return can fall "
         "later in a run", "The two answer different questions."),
        ("The best one loads faster", "They are the same size and format.")),
      ),
    Q("Why export the policy to one file that runs with torch alone?", 2, (
        ("Torch alone acts faster than `forward_inference`", "It runs the same network; the gain is "
         "in what must be installed and loaded."),
        ("Ray Serve cannot load checkpoints", "It can: the lesson's deployment loads the "
         "checkpoint's module. The export is for places without Ray or rlcourse."),
        ("Acting needs only the network: a program outside Ray (a game, a robot, another server) "
         "runs it with torch alone, no learner, optimizer, Ray or rlcourse",
         "A small file with one job, loaded in a moment.")),
      ),
]}
