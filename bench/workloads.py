"""Benchmark workloads in the shape of upstream's scheduler_perf (kubernetes v1.28).

Source: test/integration/scheduler_perf/config/performance-config.yaml and its templates
(node-default.yaml, pod-default.yaml, pod-low-priority.yaml, pod-high-priority.yaml).

Every workload is a scenario *dict* (SPEC.md §1) built in memory, never written to disk:

* nodes  -- ``createNodes``: node-default.yaml (capacity cpu 4, memory 32Gi, pods 110; no labels,
  so no zones: the node tree is creation order);
* init pods -- the first ``createPods`` op: *pending* pods in ``objects`` (enqueued at t=0).
  Upstream's createPods op waits until they are all scheduled before the next op starts
  (skipWaitToCompletion is false), so they are scheduled by the scheduler *before* measurement
  starts.  The benchmark runs the engine with ``run(until=0)`` for this phase and times it
  separately;
* measured pods -- the ``createPods`` op with ``collectMetrics: true``: ``create`` actions at
  t = 1s (virtual), all at the same instant, as a client would create them in a burst.  Only the
  ``run()`` that applies them and schedules them to idle is the measured phase.
"""
from __future__ import annotations

# The gap between the init phase (everything at t=0) and the measured pods' creation.
MEASURE_AT = "1s"


def node(name: str) -> dict:
    """templates: config/node-default.yaml."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }


def _pod(name: str, cpu: str, memory: str, priority=None, grace=None) -> dict:
    spec = {
        "containers": [{
            "image": "registry.k8s.io/pause:3.9",
            "name": "pause",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": cpu, "memory": memory},
                          "requests": {"cpu": cpu, "memory": memory}},
        }],
    }
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def pod_default(name: str) -> dict:
    """config/pod-default.yaml: requests = limits = cpu 100m, memory 500Mi."""
    return _pod(name, "100m", "500Mi")


def pod_low_priority(name: str) -> dict:
    """config/pod-low-priority.yaml: cpu 900m, memory 500Mi, no priority (0),
    terminationGracePeriodSeconds 0."""
    return _pod(name, "900m", "500Mi", grace=0)


def pod_high_priority(name: str) -> dict:
    """config/pod-high-priority.yaml: cpu 3000m, memory 500Mi, priority 10."""
    return _pod(name, "3000m", "500Mi", priority=10)


def _scenario(name, nodes, init_pods, init_tpl, measure_pods, measure_tpl, init_prefix, measure_prefix):
    w = max(5, len(str(max(nodes, init_pods, measure_pods, 1))))
    objects = [node(f"scheduler-perf-{i:0{w}d}") for i in range(nodes)]
    objects += [init_tpl(f"{init_prefix}-{i:0{w}d}") for i in range(init_pods)]
    actions = [{"at": MEASURE_AT, "create": measure_tpl(f"{measure_prefix}-{i:0{w}d}")}
               for i in range(measure_pods)]
    return {"kind": "Scenario", "metadata": {"name": name}, "objects": objects, "actions": actions}


def scheduling_basic(nodes: int, init_pods: int, measure_pods: int) -> dict:
    """SchedulingBasic: createNodes, createPods(initPods), createPods(measurePods, collectMetrics)
    -- all pods from pod-default.yaml.  Upstream params: 500Nodes = 500/500/1000,
    5000Nodes = 5000/1000/1000."""
    return _scenario("scheduling-basic", nodes, init_pods, pod_default, measure_pods, pod_default,
                     "init-pod", "pod")


def preemption_basic(nodes: int, init_pods: int, measure_pods: int) -> dict:
    """PreemptionBasic: createNodes, createPods(initPods, pod-low-priority.yaml),
    createPods(measurePods, pod-high-priority.yaml, collectMetrics).  Upstream params:
    500Nodes = 500/2000/500 (four 900m pods fill each 4-cpu node; every 3000m high-priority pod
    must preempt three of them)."""
    return _scenario("preemption-basic", nodes, init_pods, pod_low_priority, measure_pods,
                     pod_high_priority, "low-pod", "high-pod")


# name -> (builder, default nodes, default init pods, default measured pods, description)
WORKLOADS = {
    "SchedulingBasic": (scheduling_basic, 500, 500, 1000),
    "PreemptionBasic": (preemption_basic, 500, 2000, 500),
}

# upstream's init-pod counts for SchedulingBasic by node count (performance-config.yaml)
SCHEDULING_BASIC_INIT = {500: 500, 5000: 1000}


def default_init_pods(workload: str, nodes: int) -> int:
    """Init pods when --init-pods is not given: upstream's value for that node count, else
    proportional (SchedulingBasic: one per node, capped at 1000 beyond 1000 nodes as 5000Nodes
    does; PreemptionBasic: four per node, filling every node)."""
    if workload == "SchedulingBasic":
        return SCHEDULING_BASIC_INIT.get(nodes, min(nodes, 1000) if nodes >= 1000 else nodes)
    return 4 * nodes
