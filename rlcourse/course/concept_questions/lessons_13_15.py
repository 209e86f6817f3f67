"""Concept checks of lessons 13-15: offline RL, external simulators, graduating to RLlib."""

from rlcourse.course.concept_question import Question as Q

QUESTIONS = {"13": [
    Q("BC's loss uses no rewards. Why can it still learn CartPole from the expert's data?", 1, (
        ("It reads the rewards from the episode lengths", "BC's loss is the log-likelihood of the "
         "recorded actions; no return enters it."),
        ("The expert's actions already encode good behaviour: copying them is a good policy where "
         "the data covers the states it visits", "It fails where the data is poor or "
         "does not cover those states."),
        ("CartPole gives the same reward every step, so rewards carry no information", "They do "
         "carry it through episode length; BC simply does not use them.")),
      ),
    Q("What would MARWIL with a very large beta do on data of mixed quality?", 2, (
        ("Behave like BC", "That is beta = 0, where every action gets the same weight."),
        ("Ignore the data and act at random", "It still imitates, just very selectively."),
        ("Imitate almost only the few actions with the largest advantages: exp(beta * A / c) "
         "swamps the rest, so the loss rests on little data", "Dividing A by its scale c "
         "makes one beta mean the same on any reward scale.")),
      ),
    Q("The importance-sampling estimate for a policy far from the recorded one falls short of its "
      "true return. Why?", 0, (
        ("Few recorded episodes take the actions it prefers, so a handful of episodes carry the "
         "weight", "More data from a behaviour policy closer to it (coverage) makes the "
         "estimate accurate."),
        ("Weighted importance sampling is always biased low", "Its bias shrinks with data; the "
         "shortfall here comes from poor coverage."),
        ("The recorded rewards were discounted", "The estimate and the true return use the same "
         "rewards.")),
      ),
    Q("Why does the estimate of the recorded policy mu itself equal the recorded mean return "
      "exactly?", 1, (
        ("By chance on this data", "It holds on any data."),
        ("Every ratio pi/mu is 1, so the weighted average is the plain average", "A check "
         "that the estimator is wired correctly."),
        ("The estimator skips mu", "It treats mu like any other policy.")),
      ),
    Q("Why does rlcourse refuse a pickled column instead of unpickling it?", 2, (
        ("Pickle is slower than Parquet", "Speed is not the reason; safety is."),
        ("Pickle cannot hold arrays", "It can hold anything, including code to run."),
        ("Unpickling runs whatever code the file says: a data file must not be able to run code",
         "Recorded data is read as data only.")),
      ),
], "14": [
    Q("Why does the simulator's client run the policy itself instead of asking the server for each "
      "action?", 0, (
        ("One network round trip per action would make every step wait on latency; weights arrive "
         "now and then and acting stays local", "The simulator steps at its own speed."),
        ("The server has no copy of the policy", "It has the learner's weights; the point is where "
         "acting is cheap."),
        ("Torch cannot run on the server", "Torch is not the point: the server runner and the "
         "client both act with the same NumPy network.")),
      ),
    Q("Why must a simulator send whole episodes only?", 2, (
        ("The protocol cannot split messages", "Messages carry any batch; the rule is about the "
         "data's meaning."),
        ("To save bytes", "A partial episode sends fewer bytes, not more."),
        ("The server could not tell a cut from an end: GAE would treat the cut as terminal or "
         "bootstrap from a state it never got", "Whole episodes make every ending "
         "known.")),
      ),
    Q("An `EPISODES_AND_GET_STATE` arrives while the learner trains. What does the server do, and "
      "why?", 1, (
        ("Answers at once with the old weights, to keep the simulator busy", "Then the next "
         "episodes would come from an outdated policy: off-policy data for PPO."),
        ("Keeps the episodes and answers when the learner has new weights, so the next episodes "
         "come from the newest policy", "The simulator rests while the learner trains."),
        ("Drops the episodes", "They are whole and valid; the server keeps them.")),
      ),
    Q("Lesson 14 timed both kinds of inference on one machine. Which simulator is better served "
      "by server-side inference (GET_ACTION for every step)?", 1, (
        ("A fast game engine running thousands of steps a second over the internet", "Every step "
         "would wait for a round trip: it could step no faster than one step per round trip. "
         "Client-side inference waits once per batch."),
        ("A robot controller that acts a few times a second and cannot run the network itself",
         "Its steps are slow anyway, so a round trip is a small part of each, and it needs no "
         "copy of the weights."),
        ("Any simulator with a small policy network", "A small network is cheap to ship and to "
         "run locally: that favours client-side inference."),
        ("A simulator that must explore", "Both explore alike: the server samples from the same "
         "action distribution a client would.")),
      ),
    Q("Why is the shared token an environment variable and not `env_config[\"token\"]`?", 0, (
        ("The config is recorded: checkpoints and Tune results save it, so a secret in it ends up "
         "in files", "Secrets stay out of anything that is recorded."),
        ("env_config cannot hold strings", "It holds any value, strings included."),
        ("Environment variables are encrypted", "They are not; they are simply not recorded with "
         "the run.")),
      ),
], "15": [
    Q("rlcourse takes RLlib's defaults. Why does the lesson still write out the PPO settings for "
      "CartPole in both libraries?", 2, (
        ("The two libraries' defaults differ", "They are the same, RLlib's in both; the reason is "
         "what they were chosen for."),
        ("RLlib rejects a config that relies on defaults", "It accepts it; it just runs another "
         "experiment than the one meant."),
        ("The defaults suit large runs on many machines (a small lr, big batches): on CartPole and "
         "a laptop they learn slowly", "Written out, the settings fit the task, and both "
         "libraries run the same experiment.")),
      ),
    Q("The two libraries' learning curves overlap against env steps but not against wall time. "
      "What does that say?", 0, (
        ("The same algorithm learns as much per sample; one costs more time per step",
         "Sample efficiency is the algorithm's, time per step the framework's and the machine's."),
        ("One library's algorithm is better", "Then the curves would differ per env step too."),
        ("The experiment is broken", "It shows exactly what each axis measures.")),
      ),
    Q("The lesson measured a wall-time ratio between the libraries on this machine. Is it a "
      "constant you can quote?", 1, (
        ("Yes, it is a property of the libraries", "It depends on cores, load and versions too."),
        ("No: it depends on the machine, its load and the versions, so it is stated as measured "
         "here", "Measure it again where it matters to you."),
        ("Yes, if the run was long enough", "A longer run lowers noise, not the dependence on the "
         "machine.")),
      ),
]}
