"""The pending-pods report of a session (issue 25): what happened to every pod that was pending
at the start (for an imported cluster: pending in the dump), and what-ifs that change the
cluster and show which pods now fit.

The report is ``engine.explain``'s, the one ``python -m engine explain`` prints, read from a run
of the session's scenario **with the cluster events injected into the session** (at the
positions and times they were recorded), taken until it is idle (``engine.compare.drive``, the
replay the comparison page uses). So a what-if is an ordinary injection: it goes through the
inject form's code path (``runner.control``), is recorded with the session, appears on the
session page and in every export, and the report is simply computed again. When the session
has injections, the report also runs the scenario without them and says, for each pod, what
they changed.

The runs are cached per (scenario, injections, plugin code) in this process (a handful of
sessions); a pod's history in the report is read from the cached run (``visualizer.history``
on it), so it shows the pod's whole run, wherever the session's page stands.
"""
from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections import OrderedDict

from engine import US
from engine import compare as cmp
from engine.explain import explain_events
from visualizer.formatting import seconds

REPORT_MAX_EVENTS = 2_000_000    # trace events of one report run (bounded memory and time: bench/report.py); it says so when cut
CACHE_SIZE = 4                   # report runs kept in this process
NODE_LIMIT = 2000                # nodes offered in the what-if forms' lists
LIKE_LIMIT = 50                  # pending pods whose "a node like X" link names X

_cache: OrderedDict = OrderedDict()
_lock = threading.Lock()


class ReportRun:
    """A report's run, shaped like a live session for ``visualizer.history.pod_history``
    (``stepper``, ``timeline``): everything it did, shown."""

    def __init__(self, run: cmp.Run):
        self.run = run
        self.stepper = run.stepper
        self.timeline = run.stepper.events


def _key(row) -> str:
    h = hashlib.sha256()
    for part in (row.scenario_text, row.source, json.dumps(row.injections or [], sort_keys=True),
                 json.dumps(row.plugin_code or {}, sort_keys=True)):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _injections(row) -> list:
    return [(int(i["position"]), int(i["timeUs"]), i["verb"], i["body"]) for i in row.injections or []]


def _compute(row) -> dict:
    from visualizer import runner
    scenario = runner.parsed_scenario(row.scenario_text, row.source or "<input>")
    injections = _injections(row)
    run = cmp.drive(scenario, injections, max_events=REPORT_MAX_EVENTS)
    report = explain_events(scenario, run.events, run.stepper.engine)
    base = None
    if injections:
        base_run = cmp.drive(scenario, (), max_events=REPORT_MAX_EVENTS)
        base = explain_events(scenario, base_run.events, base_run.stepper.engine)
    return {"report": report, "base": base, "run": ReportRun(run), "scenario": scenario,
            "truncated": run.truncated, "time": run.clock_us / US, "events": len(run.events)}


def computed(row) -> dict:
    """The cached report run of session ``row`` (computed if its inputs changed)."""
    key = _key(row)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    result = _compute(row)
    with _lock:
        _cache[key] = result
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def clear() -> None:
    with _lock:
        _cache.clear()


# ---------------------------------------------------------------------- what the page shows

def _node_rows(engine) -> list:
    out = []
    for name, node in list(engine.nodes.items())[:NODE_LIMIT]:
        alloc = getattr(node, "allocatable", None) or {}
        out.append({"name": name, "labels": len((node.manifest or {}).get("metadata", {}).get("labels") or {}),
                    "alloc": alloc})
    return out


def _pod_view(p, before) -> dict:
    v = dict(p)
    v["time_s"] = seconds(p["time"]) if p.get("time") is not None else None
    if before is not None and (before["outcome"], before["node"]) != (p["outcome"], p["node"]):
        v["before"] = before
    return v


def present(row) -> dict:
    """The report page's context: pods grouped (still pending first), what the injections
    changed, the nodes for the what-ifs."""
    c = computed(row)
    report, base = c["report"], c["base"]
    before = {p["pod"]: p for p in base["pods"]} if base else {}
    pods = [_pod_view(p, before.get(p["pod"])) for p in report["pods"]]
    groups = {o.replace("-", "_"): [p for p in pods if p["outcome"] == o]
              for o in ("pending", "binding", "bound", "deleted", "not-ours")}
    for p in groups["pending"][:LIKE_LIMIT]:
        p["like"], p["like_fit_only"] = best_node_to_copy(c, p["pod"], with_reason=True)
    changed = [p for p in pods if "before" in p]
    now_fit = [p for p in changed if p["outcome"] in ("bound", "binding") and p["before"]["outcome"] == "pending"]
    engine = c["run"].stepper.engine
    return {"report": report, "groups": groups, "counts": report["counts"], "total": report["total"],
            "changed": changed, "now_fit": now_fit, "injections": describe_injections(row),
            "time": seconds(c["time"]), "events": c["events"], "truncated": c["truncated"],
            "max_events": REPORT_MAX_EVENTS, "nodes": sorted(engine.nodes)[:NODE_LIMIT],
            "node_count": len(engine.nodes)}


def describe_injections(row) -> list:
    out = []
    for i in row.injections or []:
        body = i.get("body") or {}
        kind = body.get("kind", "?")
        meta = body.get("metadata") or {}
        name = meta.get("name") or body.get("name") or "?"
        ns = meta.get("namespace") or body.get("namespace")
        out.append({"verb": i.get("verb"), "kind": kind, "name": f"{ns}/{name}" if ns and kind == "Pod" else name,
                    "time": seconds(int(i.get("timeUs", 0)) / US)})
    return out


# ---------------------------------------------------------------------- what-if forms, prefilled

NODE_STATUS_KEYS = ("capacity", "allocatable")


def node_like(engine, name: str, new_name: str) -> dict:
    """A manifest for a new node like ``name``: its labels (the hostname label renamed), taints,
    unschedulable flag, capacity and allocatable; nothing it runs."""
    node = engine.nodes[name]
    src = node.manifest or {}
    meta = src.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    if "kubernetes.io/hostname" in labels:
        labels["kubernetes.io/hostname"] = new_name
    out = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": new_name}}
    if labels:
        out["metadata"]["labels"] = labels
    spec = {k: copy.deepcopy(v) for k, v in (src.get("spec") or {}).items() if k in ("taints", "unschedulable")}
    if spec:
        out["spec"] = spec
    status = {k: copy.deepcopy(v) for k, v in (src.get("status") or {}).items() if k in NODE_STATUS_KEYS}
    if status:
        out["status"] = status
    return out


def free_name(engine, base: str) -> str:
    for i in range(2, 10_000):
        name = f"{base}-whatif-{i - 1}" if len(base) < 230 else f"whatif-{i - 1}"
        if name not in engine.nodes:
            return name
    return "whatif-node"


POD_DROP_META = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "ownerReferences")


def pod_manifest(engine, key: str) -> dict | None:
    """The pod's manifest as the scenario gave it, without its status and server-set fields:
    the text of "change this pod's requests" (an update of the pending pod)."""
    pod = engine.pods.get(key)
    if pod is None:
        return None
    src = copy.deepcopy(pod.manifest or {})
    src.pop("status", None)
    meta = src.setdefault("metadata", {})
    for k in POD_DROP_META:
        meta.pop(k, None)
    src.setdefault("apiVersion", "v1")
    src.setdefault("kind", "Pod")
    return src


def best_node_to_copy(c, pod_key: str, with_reason: bool = False):
    """The node a "node like X" what-if starts from for a pending pod: among the nodes its last
    cycle's Filter rejected only for resources (NodeResourcesFit), the largest; else the largest
    node (by allocatable cpu, then memory). ``with_reason``: ``(node, whether it only lacked
    resources)``."""
    engine = c["run"].stepper.engine
    if not engine.nodes:
        return (None, False) if with_reason else None
    only_fit = _nodes_rejected_only_by_fit(c["run"], pod_key)

    def size(name):
        a = getattr(engine.nodes[name], "allocatable", None) or {}
        return (a.get("cpu", 0) or 0, a.get("memory", 0) or 0)
    fit_only = [n for n in only_fit if n in engine.nodes]
    pool = fit_only or list(engine.nodes)
    best = max(pool, key=lambda n: (size(n), [-ord(ch) for ch in n]))
    return (best, bool(fit_only)) if with_reason else best


def _nodes_rejected_only_by_fit(run: ReportRun, pod_key: str) -> list:
    """The nodes whose only Filter rejection in the pod's last cycle was NodeResourcesFit."""
    from visualizer.events import backward, forward
    events = run.timeline
    n = len(events)
    last = next((e["seq"] for e in backward(events, n, quiet=False, types={"CycleStart"})
                 if e.get("pod") == pod_key), None)
    if last is None:
        return []
    rejected: dict = {}
    for e in forward(events, last + 1, n, types={"PluginResult", "CycleEnd"}):
        if e["type"] == "CycleEnd":
            if e.get("pod") == pod_key:
                break
            continue
        if e.get("pod") == pod_key and e.get("point") == "Filter" and e.get("node") and not e.get("dryRun") \
                and e.get("code") not in ("Success", "Skip"):
            rejected.setdefault(e["node"], set()).add(e.get("plugin"))
    return [n for n, plugins in rejected.items() if plugins == {"NodeResourcesFit"}]
