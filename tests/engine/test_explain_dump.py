"""``python -m engine explain DUMP --json`` on held-out realistic dumps (issue 25).

tests/engine/importers/make_dump.py writes a ``kubectl get ... -A -o yaml`` dump of a made-up
21-node cluster; the stored one (data/cluster-dump.yaml.gz, test_cli_explain.py) is seed 7.
Here the seeds are others no test uses, with ``more_reasons`` (three more pending pods: memory,
an untolerated taint, a preemption), and every expectation is computed from the raw YAML, not
by the importer or the engine:

(a) the pods listed are exactly those pending in the dump, by the importer's documented rule
    (engine/importers/kube.py): a Pod without ``spec.nodeName``, not in phase Succeeded or
    Failed (the scheduler's informer leaves terminal pods out) and without a
    ``deletionTimestamp`` (``skipPodSchedule``);
(b) each has a consistent outcome: another scheduler's is ``not-ours (schedulerName)``, a gated
    one waits for SchedulingGates without an attempt, a bound one is on a node of the dump that
    its nodeSelector, its tolerations and its pinning (a DaemonSet's matchFields) allow, with its
    top scores (the chosen node first); a preemptor's victims were lower-priority pods on that
    node;
(c) every pod still pending carries kube-scheduler v1.28's FitError message, and for the pods
    the generator makes unschedulable on purpose the whole message is derived here from the
    nodes' taints, labels and allocatable and the requests of the pods bound on them.

The wording is upstream's ``FitError.Error()`` (pkg/scheduler/framework/types.go, v1.28.0):
``fmt.Sprintf("0/%v nodes are available:", N)``, then ``SeparatorFormat`` (" %v.") with the
PreFilter message, or with the histogram of the nodes' reasons, each "<count> <reason>", sorted
as strings (``sort.Strings``) and joined by ", "; then " %v." with the PostFilter message.
DefaultPreemption's PostFilter message is "preemption: " + the same Error() over its own node
statuses (preemption.go Preempt: "Preemption is not helpful for scheduling" for a node that
failed with UnschedulableAndUnresolvable, "No preemption victims found for incoming pod" where
no lower-priority pod runs; default_preemption.go PodEligibleToPreemptOthers: "not eligible due
to preemptionPolicy=Never."). The reasons: TaintToleration "node(s) had untolerated taint {%s:
%s}", NodeAffinity "node(s) didn't match Pod's node affinity/selector", NodeResourcesFit
"Insufficient <resource>" (cpu before memory), in the default profile's Filter order (the first
failing plugin's status per node).

The engine had one difference here, found by this test and fixed with it (issue 25): it
appended the PostFilter message as " " + message, without SeparatorFormat's final "."; upstream's
message then ends with ".." (the inner FitError's "." and the separator's), as kube-scheduler
v1.28's FailedScheduling events show ("... No preemption victims found for incoming pod..").
Every message is now compared with upstream's exactly.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE / "importers"))
import make_dump  # noqa: E402

# seed 7 is the stored dump (test_realistic_dump.py, test_cli_explain.py, the import fuzz test)
HELD_OUT_SEEDS = (3, 13, 42)
ON_PURPOSE = ("default/ml-trainer", "default/gpu-job", "default/cache-warmer", "default/batch-intruder")
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


# ------------------------------------------------------------------ reading the raw dump

def quantity(v) -> int:
    """cpu in millicores, memory in bytes: the forms make_dump writes (``7920m``, ``2``,
    ``65000Ki``, ``512Mi``, ``1Gi``)."""
    v = str(v)
    for suffix, mult in (("Ki", 1024), ("Mi", 1024 ** 2), ("Gi", 1024 ** 3), ("m", 1)):
        if v.endswith(suffix):
            return int(v[:-len(suffix)]) * mult
    return int(v)


def milli(v) -> int:
    v = str(v)
    return int(v[:-1]) if v.endswith("m") else int(v) * 1000


def key(obj) -> str:
    return f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"


def requests(pod) -> dict:
    cpu = mem = 0
    for c in pod["spec"]["containers"]:
        r = (c.get("resources") or {}).get("requests") or {}
        cpu += milli(r.get("cpu", "0"))
        mem += quantity(r.get("memory", "0"))
    return {"cpu": cpu, "memory": mem}


def pending_in_dump(items) -> list:
    """The importer's documented rule, applied to the raw objects."""
    return [p for p in items if p["kind"] == "Pod" and not p["spec"].get("nodeName")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not p["metadata"].get("deletionTimestamp")]


def untolerated(node, pod):
    """The first NoSchedule/NoExecute taint of the node the pod does not tolerate (as
    TaintToleration's Filter reads them: v1helper.FindMatchingUntoleratedTaint), or None."""
    for t in (node.get("spec") or {}).get("taints") or []:
        if t["effect"] not in ("NoSchedule", "NoExecute"):
            continue
        ok = False
        for tol in pod["spec"].get("tolerations") or []:
            if tol.get("effect") and tol["effect"] != t["effect"]:
                continue
            if tol.get("operator") == "Exists":
                ok = not tol.get("key") or tol["key"] == t["key"]
            else:
                ok = tol.get("key") == t["key"] and (tol.get("value") or "") == (t.get("value") or "")
            if ok:
                break
        if not ok:
            return t
    return None


def selector_matches(node, pod) -> bool:
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return False
    req = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if req:      # make_dump's only required node affinity: DaemonSet pods' matchFields metadata.name In [node]
        terms = req["nodeSelectorTerms"]
        return any(all(f["key"] == "metadata.name" and f["operator"] == "In"
                       and node["metadata"]["name"] in f["values"] for f in t.get("matchFields") or [])
                   for t in terms)
    return True


# ------------------------------------------------------------------ the expected message

def fit_error(n, reasons: dict, post: str = "") -> str:
    """Upstream's FitError.Error() (types.go, v1.28.0) with the histogram ``reasons``
    (reason -> count) and PostFilterMsg ``post``."""
    msg = f"0/{n} nodes are available:"
    hist = sorted(f"{c} {r}" for r, c in reasons.items())
    if hist:
        msg += f" {', '.join(hist)}."
    if post:
        msg += f" {post}."
    return msg


def node_reasons(node, pod, used) -> tuple:
    """The first failing Filter plugin's reasons on ``node`` for ``pod`` (default Filter order:
    TaintToleration, NodeAffinity, NodeResourcesFit) and whether that status is resolvable by
    preemption (Unschedulable) or not (UnschedulableAndUnresolvable); ``()`` if it fits."""
    t = untolerated(node, pod)
    if t is not None:
        return [f"node(s) had untolerated taint {{{t['key']}: {t.get('value') or ''}}}"], False
    if not selector_matches(node, pod):
        return ["node(s) didn't match Pod's node affinity/selector"], False
    alloc = node["status"]["allocatable"]
    need = requests(pod)
    out = [f"Insufficient {res}" for res, a in (("cpu", milli(alloc["cpu"])), ("memory", quantity(alloc["memory"])))
           if need[res] > a - used[res]]
    return (out, True) if out else ()


def expected_message(pod, nodes, bound_on, prio) -> str | None:
    """The upstream message of ``pod``'s failed attempt, derived from the dump: ``bound_on``
    maps a node to the pods on it when the attempt ran (the dump's and those the run bound
    before), ``prio`` a pod's priority. None when it cannot be derived here (a node where the
    pod fits, or where preemption would have lower-priority pods to weigh)."""
    hist, post_hist = {}, {}
    for node in nodes:
        on = bound_on.get(node["metadata"]["name"], [])
        used = {"cpu": sum(requests(p)["cpu"] for p in on), "memory": sum(requests(p)["memory"] for p in on)}
        r = node_reasons(node, pod, used)
        if not r:
            return None
        reasons, resolvable = r
        for reason in reasons:
            hist[reason] = hist.get(reason, 0) + 1
        if not resolvable:
            post_hist[NOT_HELPFUL] = post_hist.get(NOT_HELPFUL, 0) + 1
        elif any(prio(p) < prio(pod) for p in on):
            return None
        else:
            post_hist[NO_VICTIMS] = post_hist.get(NO_VICTIMS, 0) + 1
    if pod["spec"].get("preemptionPolicy") == "Never":
        post = "preemption: not eligible due to preemptionPolicy=Never."
    else:
        post = "preemption: " + fit_error(len(nodes), post_hist)
    return fit_error(len(nodes), hist, post)


# ------------------------------------------------------------------ running explain

def explain_dump(tmp_path, seed):
    dump = make_dump.make_dump(seed, more_reasons=True)
    f = tmp_path / f"dump-{seed}.yaml"
    f.write_text(make_dump.to_yaml(dump))
    r = subprocess.run([sys.executable, "-m", "engine", "explain", str(f), "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return dump["items"], json.loads(r.stdout)


@pytest.fixture(scope="module", params=HELD_OUT_SEEDS, ids=[f"seed{s}" for s in HELD_OUT_SEEDS])
def explained(request, tmp_path_factory):
    return (request.param, *explain_dump(tmp_path_factory.mktemp("dump"), request.param))


def test_the_held_out_seeds_are_not_the_stored_dump():
    import gzip
    stored = gzip.decompress((HERE / "importers/data/cluster-dump.yaml.gz").read_bytes()).decode()
    assert make_dump.to_yaml(make_dump.make_dump(7)) == stored   # more_reasons off: seed 7 unchanged
    for seed in HELD_OUT_SEEDS:
        assert make_dump.to_yaml(make_dump.make_dump(seed, more_reasons=True)) != stored


def test_exactly_the_pods_pending_in_the_dump_are_listed(explained):
    seed, items, doc = explained
    expected = sorted(key(p) for p in pending_in_dump(items))
    assert sorted(p["pod"] for p in doc["pods"]) == expected
    assert doc["total"] == len(expected) and sum(doc["counts"].values()) == len(expected)
    # the generator's deliberate cases are among them; a pending pod being deleted is not
    assert set(ON_PURPOSE) | {"default/waiting-for-quota", "batch/urgent-report"} <= set(expected)
    deleting = [key(p) for p in items if p["kind"] == "Pod" and p["metadata"].get("deletionTimestamp")]
    assert deleting and not set(deleting) & set(expected)


def test_each_outcome_is_consistent_with_the_dump(explained):
    seed, items, doc = explained
    nodes = {n["metadata"]["name"]: n for n in items if n["kind"] == "Node"}
    pods = {key(p): p for p in items if p["kind"] == "Pod"}
    prio = {k: p["spec"].get("priority", 0) for k, p in pods.items()}
    for got in doc["pods"]:
        pod = pods[got["pod"]]
        sched = pod["spec"].get("schedulerName") or "default-scheduler"
        assert got["schedulerName"] == sched
        if sched != "default-scheduler":
            assert got["outcome"] == "not-ours", got
            continue
        if pod["spec"].get("schedulingGates"):
            assert (got["outcome"], got["plugins"], got["message"], got["attempts"]) == \
                ("pending", ["SchedulingGates"], None, 0)
            continue
        assert got["outcome"] in ("bound", "pending"), got
        assert got["attempts"] >= 1 and got["waiting_on"] is None and got["deleted"] is None
        if got["outcome"] == "bound":
            node = nodes[got["node"]]           # a node of the dump
            assert untolerated(node, pod) is None and selector_matches(node, pod), got
            assert got["scores"] and got["scores"][0]["node"] == got["node"]
            if got["scores"][0]["score"] is not None:
                totals = [s["score"] for s in got["scores"]]
                assert totals == sorted(totals, reverse=True) and len(got["scores"]) <= 3
                assert all(s["node"] in nodes for s in got["scores"])
            assert got["message"] is None and got["plugins"] == []
            for v in got["victims"]:            # a preemptor: its victims ran on its node, lower priority
                assert pods[v]["spec"].get("nodeName") == got["node"] and prio[v] < prio[got["pod"]], (got, v)
            if got["victims"]:
                assert got["nominated_node"] == got["node"]
        else:
            assert got["node"] is None and got["plugins"] and got["victims"] == []
            assert got["message"].startswith(f"0/{len(nodes)} nodes are available: ")


def test_pending_messages_have_the_fit_error_shape(explained):
    """Every pod still pending: "0/N nodes are available: " + a histogram sorted as strings +
    "." + " preemption: ..." (DefaultPreemption ran: every one of them can preempt)."""
    seed, items, doc = explained
    n = sum(1 for i in items if i["kind"] == "Node")
    for got in doc["pods"]:
        if got["outcome"] != "pending" or got["message"] is None:
            continue
        head, sep, post = got["message"].partition(". preemption: ")
        assert sep, got["message"]
        # SeparatorFormat after DefaultPreemption's own FitError message: ".."
        assert got["message"].endswith("..") or post.startswith("not eligible due to "), got["message"]
        prefix = f"0/{n} nodes are available: "
        assert head.startswith(prefix)
        hist = head[len(prefix):].split(", ")
        assert hist == sorted(hist)
        counts = [int(h.split(" ", 1)[0]) for h in hist]
        assert all(1 <= c <= n for c in counts) and sum(counts) >= n   # every node failed, each for a reason
        assert post.startswith(prefix) or post.startswith("not eligible due to ")
        if post.startswith(prefix):
            phist = post[len(prefix):].rstrip(".").split(", ")
            assert phist == sorted(phist) and sum(int(h.split(" ", 1)[0]) for h in phist) == n


def bound_on_at(items, doc, t, with_terminating):
    """Node -> the pods on it when an attempt ending at virtual time ``t`` ran: the dump's
    bound, non-terminal pods (those being deleted included or not) and those the run bound by
    then."""
    pods = {key(p): p for p in items if p["kind"] == "Pod"}
    on: dict = {}
    for p in items:
        if p["kind"] == "Pod" and p["spec"].get("nodeName") \
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed") \
                and (with_terminating or not p["metadata"].get("deletionTimestamp")):
            on.setdefault(p["spec"]["nodeName"], []).append(p)
    for got in doc["pods"]:
        if got["outcome"] == "bound" and got["time"] is not None and got["time"] <= t:
            on.setdefault(got["node"], []).append(pods[got["pod"]])
    return on


def derived(items, doc, got):
    pods = {key(p): p for p in items if p["kind"] == "Pod"}
    nodes = [n for n in items if n["kind"] == "Node"]

    def prio(p):
        return p["spec"].get("priority", 0)
    # a pod being deleted frees its node some time into the run: derive with and without it
    a, b = (expected_message(pods[got["pod"]], nodes, bound_on_at(items, doc, got["time"], w), prio)
            for w in (True, False))
    return a if a == b else None


def test_the_pods_unschedulable_on_purpose_carry_the_derived_message(explained):
    seed, items, doc = explained
    by_key = {p["pod"]: p for p in doc["pods"]}
    for k in ON_PURPOSE:
        got = by_key[k]
        assert got["outcome"] == "pending", got
        upstream = derived(items, doc, got)
        assert upstream is not None, k
        assert got["message"] == upstream, k
    # the histograms these seeds give, spelled out once (the same for every held-out seed but
    # cache-warmer's, which depends on how full the memory nodes are)
    assert by_key["default/ml-trainer"]["message"].startswith(
        "0/21 nodes are available: 15 Insufficient cpu, 15 Insufficient memory, "
        "3 node(s) had untolerated taint {dedicated: batch}, "
        "3 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. "
        "preemption: 0/21 nodes are available: 15 No preemption victims found for incoming pod, "
        "6 Preemption is not helpful for scheduling..")
    assert by_key["default/batch-intruder"]["message"] == (
        "0/21 nodes are available: 15 node(s) didn't match Pod's node affinity/selector, "
        "3 node(s) had untolerated taint {dedicated: batch}, "
        "3 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. "
        "preemption: 0/21 nodes are available: 21 Preemption is not helpful for scheduling..")
    assert "3 Insufficient memory, " in by_key["default/cache-warmer"]["message"]


def test_every_pending_pod_whose_message_can_be_derived_has_it(explained):
    """Not only the deliberate ones: any pending pod whose every node's verdict follows from
    the dump (taints, selectors, resources; no lower-priority pod to weigh)."""
    seed, items, doc = explained
    checked = 0
    for got in doc["pods"]:
        if got["outcome"] == "pending" and got["message"] is not None:
            upstream = derived(items, doc, got)
            if upstream is not None:
                assert got["message"] == upstream, got["pod"]
                checked += 1
    assert checked >= len(ON_PURPOSE)


# urgent-report (business-critical, 7.5 cpus, batch nodes only) fits on a batch node only
# without its batch-low jobs on seeds 3 and 13; on seed 42 a batch node has room
PREEMPTS = {3: True, 13: True, 42: False}


def test_the_preemption_of_the_held_out_dumps(explained):
    seed, items, doc = explained
    got = next(p for p in doc["pods"] if p["pod"] == "batch/urgent-report")
    pods = {key(p): p for p in items if p["kind"] == "Pod"}
    node = next(n for n in items if n["kind"] == "Node" and n["metadata"]["name"] == got["node"])
    assert got["outcome"] == "bound" and node["metadata"]["labels"]["workload"] == "batch"
    assert bool(got["victims"]) == PREEMPTS[seed], got
    for v in got["victims"]:
        assert pods[v]["spec"]["priorityClassName"] == "batch-low" and pods[v]["spec"]["nodeName"] == got["node"]


def test_the_message_is_upstreams_byte_for_byte(explained):
    seed, items, doc = explained
    got = next(p for p in doc["pods"] if p["pod"] == "default/batch-intruder")
    assert got["message"] == derived(items, doc, got)
