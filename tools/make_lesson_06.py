"""Writes lessons/06_ray_clusters.ipynb (outputs stripped): python tools/make_lesson_06.py"""

from lesson_cells import code, concept_checks_cell, md, write_lesson

NAME = "06_ray_clusters.ipynb"

CELLS = [
    md("""
# Lesson 06 — Ray clusters: from one machine to many

**By the end of this lesson you can**
1. say what a head node and a worker node run, and start a two-node cluster with `ray start`;
2. place runners on both nodes and show which node each runner runs on;
3. lose a node in the middle of training and watch its runner come back on the other node;
4. submit the same training as a **Ray Job** and follow its logs;
5. read a `ray up` cluster file and a KubeRay `RayJob`, and scale a config from laptop to cluster.

The cluster of this lesson is real: two Ray nodes, each started by its own `ray start` command, as on
two machines. They share this machine, listen on 127.0.0.1 only, and are all stopped at the end.

**Time:** about 45 minutes of study (two exercises); the cells run in about a minute on 2 idle
cores (measured there; longer on a busy or 1-CPU machine). Terms: see the [glossary](../docs/glossary.md).
"""),
    md("""
## 1. Head and worker nodes

A Ray cluster is a set of **nodes**, usually one per machine. Every node runs a **raylet**, which
starts worker processes for tasks and actors and schedules them onto the node's CPUs, and an
**object store** for the objects they share. One node is the **head**: it also runs the **GCS**
(the cluster's directory of nodes, actors, placement groups and jobs) and the **dashboard**, whose
HTTP API takes Ray Jobs. Your program is the **driver**; it can run anywhere that reaches the head.

```
                  head node ("head", 1 CPU)                  worker node ("worker-1", 1 CPU)
 driver      ┌───────────────────────────────────┐       ┌───────────────────────────────────┐
 (this   ───►│ GCS: nodes, actors, jobs          │◄─────►│ raylet   object store             │
 notebook)   │ dashboard: HTTP API, Ray Jobs     │       │ EnvRunner actor (0.5 CPU)         │
             │ raylet   object store             │       └───────────────────────────────────┘
             │ EnvRunner actor (0.5 CPU)         │
             └───────────────────────────────────┘
```

On real machines you run `ray start --head` on one and `ray start --address=<head>:6379` on the
others. `LocalCluster` (in `rlcourse/course/cluster.py`) runs exactly these commands here, each node with
its own CPUs, its own temp dir and ports, and a custom resource named after it. Starting two nodes
takes some seconds (the cell prints how many, on this machine):
"""),
    code("""
import time
from pathlib import Path

import ray
from IPython.display import display

import rlcourse
from rlcourse import PPOConfig
from rlcourse.course.cluster import LocalCluster
from rlcourse.course.scaling_diagrams import runners_on_nodes

cluster = LocalCluster(num_workers=1, head_cpus=1, worker_cpus=1, object_store_mb=150)
cluster.connect()  # this notebook becomes the cluster's driver
print("GCS:", cluster.address, "| dashboard:", cluster.dashboard_url)
"""),
    md("""
What the head knows about its nodes, and what each node is on this machine: its `ray start`
process and the processes it started (raylet, agents, actors; the head also the GCS and dashboard).
"""),
    code("""
for node in ray.nodes():
    name = node["NodeName"]
    processes = cluster.processes(name)
    megabytes = sum(p.memory_full_info().uss for p in processes) / 2**20  # memory of their own
    print(f"{name:9s} alive={node['Alive']} | {node['Resources']['CPU']:g} CPU | "
          f"resource {{'{name}': {node['Resources'][name]:g}}} | address {node['NodeManagerAddress']} | "
          f"{len(processes)} processes, {megabytes:.0f} MB")

print("\\nworker-1 was started with:\\n ", " ".join(cluster.nodes["worker-1"].command))
"""),
    md("""
### Exercise 1: a new machine joins

A teammate's machine has 8 CPUs. It should join this cluster and offer one unit of a custom
resource `big-box`, so that actors can ask to run there (`resources={"big-box": 0.5}`). Write
`worker_start_command(head_address, num_cpus, resource)`, which returns the command they run on
their machine; the checker builds it for this cluster's head and for other machines.
(`--resources` takes a JSON object, in single quotes for the shell.) Stuck?
`show_solution("worker_start_command")`.
"""),
    code("""
from rlcourse.course.exercises import check_worker_start_command, show_solution


def worker_start_command(head_address, num_cpus, resource):
    \"\"\"The shell command that makes a machine with `num_cpus` CPUs join the cluster whose head
    is at `head_address`, offering one unit of the custom resource `resource`.\"\"\"
    # TODO: return an f-string "ray start ...", then delete the raise.
    raise NotImplementedError("TODO: the ray start command")


worker_start_command = check_worker_start_command(worker_start_command, head_address=cluster.address)
print(worker_start_command(cluster.address, 8, "big-box"))
"""),
    md("""
## 2. Runners on both nodes

Where do the runner actors go? Ray's default scheduler is a hybrid: it prefers the node where the
request comes from (here the driver's, the head) until about half of that node's resources are
reserved, then places on the least-used nodes. So two half-CPU runners *may* land on one node, and
nothing guarantees they spread. A **placement group**
reserves one *bundle* of resources per runner (`.resources(placement_strategy=...)`) and places
the bundles by a strategy:

| strategy | bundles go | if a node is lost |
|---|---|---|
| `PACK` | onto as few nodes as possible | its bundles move to nodes with room |
| `SPREAD` | onto as many nodes as possible | its bundles move to nodes with room |
| `STRICT_PACK` | all onto one node | the group is placed again on one node, if one has room for all |
| `STRICT_SPREAD` | each onto a different node | its bundles wait for a node without a bundle |

A **custom resource** pins actors instead: `custom_resources_per_env_runner={"worker-1": 0.5}` puts
every runner on the node that has `worker-1`, and nowhere else, ever.

### Exercise 2: a placement that survives losing a node

Write `placement_config()`, returning a `PPOConfig` of two runners (4 CartPoles each) that run on
**both** nodes and can **all** run on the head alone once `worker-1` is gone. Each node has 1 CPU.
The checker reads every field the exercise asks for. Stuck? `show_solution("survivable_placement")`.
"""),
    code("""
from rlcourse.course.exercises import check_survivable_placement


def placement_config():
    \"\"\"A PPOConfig: CartPole-v1, 2 runners x 4 sub-envs, placed to survive losing worker-1.

    Hints: .env_runners(num_env_runners=..., num_envs_per_env_runner=...,
    num_cpus_per_env_runner=...) and .resources(placement_strategy=...); see the table above.
    \"\"\"
    # TODO: return PPOConfig().environment(...)..., then delete the raise.
    raise NotImplementedError("TODO: the placement config")


node_cpus = {name: node.num_cpus for name, node in cluster.nodes.items()}
placement_config = check_survivable_placement(placement_config, node_cpus, lost_node="worker-1")
config = placement_config()
"""),
    md("""
The exercise placed the runners; what PPO learns with is set next. `PPOConfig`'s defaults are RLlib's,
made for large problems (4,000-step batches, 30 epochs of 128-row minibatches, [256, 256] networks):
on these 1-CPU nodes an iteration would take many seconds. The course's CartPole settings, those of
`tuned_examples/ppo/cartpole_ppo.py` (which says how they were found), are 1,000-step batches, 6
epochs, an unclipped value loss and two small networks.

Then build it and ask every runner where it runs. `EnvRunnerGroup.get_node_names()` (in
`rlcourse/env/env_runner_group.py`) maps the Ray node id that each runner reports to the node's name.
"""),
    code("""
config.training(lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6,
                lambda_=0.95, clip_param=0.2, vf_clip_param=1000.0, vf_loss_coeff=0.5,
                use_kl_loss=False, grad_clip=0.5)
config.rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
algo = config.build_algo()
before = algo.env_runner_group.get_node_names()
print("runner -> node:", dict(enumerate(before, start=1)))
for _ in range(3):
    result = algo.train()
print(f"iteration {result['training_iteration']}: return {result['env_runners']['episode_return_mean']:.1f}")
"""),
    md("""
## 3. Losing a node in the middle of training

Now `worker-1` goes away while PPO trains. `cluster.stop_node("worker-1")` does what `ray stop`
does on that machine, and nothing to the head: it sends SIGTERM to the node's `ray start`, which
stops its raylet and processes, and the raylet tells the GCS that the node leaves. Then:

1. the runner on `worker-1` dies with its node; its pending sample request fails;
2. the GCS moves the runner's bundle to the head (SPREAD allows it, and the head has room), and Ray
   restarts the actor there (runner actors have `max_restarts`, `config.fault_tolerance()`);
3. `EnvRunnerGroup` probes the runner until it answers, sees a new process id (a restart), and the
   runner's next sample request brings it the current weights.

Training does not stop; one iteration is slower.
"""),
    code("""
STOP_AFTER = 2  # iterations before worker-1 is stopped
history = []
progress = display("training...", display_id=True)
for iteration in range(1, 11):
    if iteration == STOP_AFTER + 1:
        cluster.stop_node("worker-1")
    result = algo.train()
    runners, faults = result["env_runners"], result["fault_tolerance"]
    history.append({"nodes": algo.env_runner_group.get_node_names(), "seconds": result["timers"]["training_iteration"],
                    "return": runners["episode_return_mean"], "restarts": faults["num_remote_worker_restarts"]})
    progress.update(f"iteration {iteration:2d} | runners on {history[-1]['nodes']} | "
                    f"healthy {faults['num_healthy_workers']} | restarts {faults['num_remote_worker_restarts']} | "
                    f"return {runners['episode_return_mean']:6.1f}")
print("alive nodes:", cluster.alive_nodes(), "| processes left of worker-1:", cluster.processes("worker-1"))
"""),
    code("""
runners_on_nodes(history, lost_after=STOP_AFTER)
after = history[-1]["nodes"]
algo.stop()
"""),
    md("""
## 4. The same training as a Ray Job

So far the driver was this notebook: close it and training stops. A **Ray Job** runs the driver on
the cluster itself. You send a shell command (the *entrypoint*) to the dashboard's HTTP API; the
head runs it, with `RAY_ADDRESS` set so that `ray.init()` joins the cluster, and keeps its logs.
`JobSubmissionClient` is that API in Python; on a terminal it is
`ray job submit --address http://127.0.0.1:<port> -- python -m rlcourse train ...`.

The entrypoint is the course's command-line trainer (`rlcourse/course/train_job.py`): the same PPO
(`--set` gives it the settings above, as `rllib train --config` does), one printed line per iteration. Since worker-1 left, the cluster is its head alone: its 1 CPU holds the
job's runner (8 CartPoles), and the driver itself reserves none. On a real cluster the
autoscaler would add a machine, and `cluster.add_worker()` does it here (`tests/test_cluster.py`
runs this job on a new node); this lesson does not, because a third node's Ray processes (about
280 MB on a 2-core Linux machine; section 1 printed this machine's worker-1) next to the job's
driver and this notebook would take the lesson past Binder's 2 GiB.
"""),
    code("""
from ray.job_submission import JobSubmissionClient

client = JobSubmissionClient(cluster.dashboard_url)
entrypoint = ("python -m rlcourse train --algo ppo --env CartPole-v1 --num-env-runners 1 "
              "--num-envs-per-env-runner 8 --num-cpus-per-env-runner 1 "
              "--stop-return 200 --max-iterations 60 --seed 0 "
              # The same training settings as above (without --set: RLlib's PPO defaults).
              "--set lr=3e-3 train_batch_size_per_learner=1000 minibatch_size=250 num_epochs=6 "
              "lambda_=0.95 clip_param=0.2 vf_clip_param=1000.0 vf_loss_coeff=0.5 use_kl_loss=false "
              "grad_clip=0.5 "
              "'model_config={fcnet_hiddens: [64, 64], vf_share_layers: false}'")
job_id = client.submit_job(entrypoint=entrypoint)
print("submitted", job_id, "| status:", client.get_job_status(job_id))
"""),
    md("""
Follow its logs as they are written (what `ray job logs --follow` prints), until the job ends:
"""),
    code("""
async for lines in client.tail_job_logs(job_id):
    print(lines, end="")
job_status = client.get_job_status(job_id)
job_logs = client.get_job_logs(job_id)
print("job status:", job_status)
"""),
    md("""
**Who may submit a job?** Whoever reaches the dashboard's port could run any command on the head,
so the course's clusters keep Ray's **token authentication** on: every node, driver and client
must present the token in `~/.ray/auth_token` (readable by you only; `RAY_AUTH_TOKEN` or
`RAY_AUTH_TOKEN_PATH` point elsewhere). `JobSubmissionClient` above sent it for you. A request
without it, as a stranger's would be, is refused:
"""),
    code("""
import json
import urllib.error
import urllib.request

request = urllib.request.Request(f"{cluster.dashboard_url}/api/jobs/", method="POST",
                                 data=json.dumps({"entrypoint": "echo hello from a stranger"}).encode(),
                                 headers={"Content-Type": "application/json"})  # no token
try:
    urllib.request.urlopen(request, timeout=30)
    stranger_status = 200
except urllib.error.HTTPError as error:
    stranger_status = error.code
print("a job submitted without the token:", stranger_status, "(401 = Unauthorized)")
"""),
    md("""
The cluster also listens on 127.0.0.1 only, as every local Ray the course starts (`init_ray`,
`rlcourse/utils/local_ray.py`): on a cafe's or a workshop's network, nobody else even reaches
the ports. A real cluster's nodes must reach each other, so there the token is the lock; keep the
dashboard's port private too (the cluster file below forwards it through SSH).
"""),
    md("""
## 5. Real clusters: `ray up` and KubeRay

On real machines nobody types `ray start` by hand. Two tools do it for you from a file, and the
course ships one of each in `deploy/` (its `README.md` has the commands; `tests/test_deploy.py`
checks that the files agree with each other and with `requirements.lock`). Both describe the same
cluster: a head that runs no actors, and two 8-CPU workers, all running one image, built by
`deploy/Dockerfile` from `rayproject/ray` at the Ray version of the lock, plus the course.

**`deploy/cluster.yaml`**, for Ray's cluster launcher: `ray up deploy/cluster.yaml` starts the
machines on AWS, then runs `head_start_ray_commands` on the head and `worker_start_ray_commands` on
each worker: the same `ray start` commands as `LocalCluster`.
"""),
    code("""
deploy = Path(rlcourse.__file__).resolve().parents[1] / "deploy"
print((deploy / "cluster.yaml").read_text())
"""),
    md("""
Line by line, the parts that matter:
- `max_workers`, and `min_workers`/`max_workers` per node type: how far the **autoscaler** may grow
  and shrink the cluster (with both 2, it never changes).
- `docker.image`: every Ray process of every machine runs in this container, so the driver and all
  runners see the same Python, Ray and `rlcourse`.
- `available_node_types.*.resources`: what Ray may schedule there. `{"CPU": 0}` on the head keeps
  actors away from the GCS and dashboard; the head still runs drivers (a Ray Job's, for one).
- `node_config.InstanceType`: the machine; its vCPUs match `resources.CPU`.
- `head_start_ray_commands`: `ray start --head`, with the dashboard on the head's **loopback** only.
  `ray dashboard deploy/cluster.yaml` forwards it to your laptop through SSH, and `ray job submit`
  goes through that tunnel: the cluster's HTTP API never faces the internet.
- `worker_start_ray_commands`: `ray start --address=$RAY_HEAD_IP:6379`, the head's GCS.

**`deploy/rayjob.yaml`**, for KubeRay on Kubernetes: one object that creates a Ray cluster of pods,
submits the job, and deletes the cluster when the job is done.
"""),
    code("""
print((deploy / "rayjob.yaml").read_text())
"""),
    md("""
Line by line:
- `kind: RayJob`: a cluster *and* a job. (A `RayCluster` is a cluster alone, for many jobs.)
- `entrypoint`: the same `python -m rlcourse train ...` as above, with 16 runners spread over the
  workers.
- `shutdownAfterJobFinishes`, `ttlSecondsAfterFinished`, `activeDeadlineSeconds`: the cluster lives
  as long as the job (plus time to read its logs), and a runaway job is stopped.
- `rayVersion` and `image`: the Ray inside the image; KubeRay needs to know it.
- `rayStartParams`: options of each pod's `ray start` (`num-cpus: "0"` on the head, as in
  `cluster.yaml`); a worker's `--num-cpus` comes from its container's CPU limit.
- `resources.requests` = `limits`: each pod gets exactly that share of a machine, sized like the AWS
  machines of `cluster.yaml`.
- `workerGroupSpecs[].replicas`, `minReplicas`, `maxReplicas`: how many worker pods, and how far
  KubeRay's autoscaler may go.
- The dashboard port is reachable inside Kubernetes only; `kubectl port-forward` brings it to you.

## 6. Scaling cheat sheet: from laptop to cluster

The algorithm code never changes; the config and where the driver runs do.

| step | where it runs | what to change in the config | around it |
|---|---|---|---|
| debug | laptop, one process | `env_runners(num_env_runners=0)`: the runner in the driver | no Ray actors at all |
| parallel sampling | laptop, 2-8 cores | `num_env_runners=N`, `num_cpus_per_env_runner=0.5`, `num_envs_per_env_runner=4` (vectorize first) | `init_ray(num_cpus=...)` |
| a big machine | 32-96 cores | runners ≈ cores - 2; `learners(num_learners=0)` until the update is the bottleneck | same code |
| a cluster | head + N workers | `resources(placement_strategy="SPREAD")`; `fault_tolerance(restart_failed_env_runners=True)` | `ray up` or KubeRay; run as a Ray Job; checkpoints on shared storage |
| GPUs for learning | + GPU workers | `learners(num_learners=K, num_gpus_per_learner=1)` (the learners train on them, as RLlib's do); runners stay on CPUs | a GPU node type in `cluster.yaml` / a GPU worker group |
| pinned hardware | special nodes | `env_runners(custom_resources_per_env_runner={"big-box": 0.5})` | `ray start --resources='{"big-box": 1}'` on those nodes |

## Summary

- Every node runs a raylet and an object store; the head also the GCS and the dashboard. A node
  joins with `ray start --address=<head>`, and can join or leave at any time.
- A placement group spreads runners over nodes; `SPREAD` re-places the bundles of a lost node,
  `STRICT_SPREAD` cannot when nodes are short, and a custom resource pins runners for good.
- Losing a node costs an iteration: Ray restarts the runner elsewhere, the runner group probes it
  and sends it the current weights.
- A Ray Job runs the driver on the cluster; `JobSubmissionClient` (or `ray job submit`) sends it
  and reads its logs. Only holders of the cluster's token may: keep token authentication on.

**Read next in the source**
- `rlcourse/course/cluster.py`: `LocalCluster`: `ray start` per node, stopping exactly one node (its session
  of processes), and the three ways teardown is guaranteed.
- `rlcourse/utils/resources.py`, `make_placement_group`: one bundle per runner; and
  `rlcourse/env/env_runner_health.py`, `came_back_after`: how a restarted runner is noticed.
- `rlcourse/course/train_job.py`: the job's entrypoint, one line per iteration.
- `rlcourse/utils/local_ray.py`: how a Ray on one machine stays on loopback, and its token private.
- `deploy/`: the image, `cluster.yaml` and `rayjob.yaml`.
"""),
    md("""
## Papers

- Moritz et al., *Ray: A Distributed Framework for Emerging AI Applications*, OSDI 2018
  ([arXiv:1712.05889](https://arxiv.org/abs/1712.05889)): the head node's global control store, a raylet on every node, and the scheduling of
  actors over nodes that this lesson runs on a local cluster.
- Liang et al., *RLlib: Abstractions for Distributed Reinforcement Learning*, ICML 2018
  ([arXiv:1712.09381](https://arxiv.org/abs/1712.09381)): sampling workers as actors, placed on whichever nodes a cluster has.

All the course's papers, and the lessons that use them: [docs/key_papers.md](../docs/key_papers.md).
"""),
    concept_checks_cell("06"),
    code("""
# Lesson check: runners used both nodes, came back on the head after worker-1 was lost, the job
# reached its return, and no process of the cluster is left.
assert sorted(before) == ["head", "worker-1"], before
assert after == ["head", "head"] and history[-1]["restarts"] >= 1, history[-1]
assert str(job_status) == "SUCCEEDED" and "done: reached return 200" in job_logs, job_logs[-2000:]
assert stranger_status == 401, stranger_status
cluster.shutdown()
assert cluster.processes() == [] and not ray.is_initialized()
print("Lesson 06 complete.")
"""),
]

if __name__ == "__main__":
    print(write_lesson(NAME, CELLS))
