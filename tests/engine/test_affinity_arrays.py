"""InterPodAffinity and PodTopologySpread over the node table (label columns, pods grouped by
signature: engine.plugins.interpodaffinity, engine.plugins.podtopologyspread,
engine.nodetable.PodGroups) against the per-pod path (``filtering.USE_TABLE = False`` in
engine.plugins.interpodaffinity, which switches both): random clusters, the full JSON Lines
trace and the final state compared byte for byte.

The clusters mix nodes with zone / hostname / rack labels (some missing a key), existing and
incoming pods in several namespaces with matching and non-matching labels, required and
preferred pod affinity and anti-affinity (namespaces lists, empty and non-empty
namespaceSelectors, matchLabels and matchExpressions), hard and soft topology spread
constraints (minDomains, inclusion policies, matchLabelKeys, node selectors, tainted nodes,
terminating pods), priorities and small nodes, so that
preemption happens (AddPod/RemovePod in the dry runs) and pods get nominated (the Filter pass
with nominated pods), and pods are deleted along the way. Some clusters also declare labelled
Namespace objects (``with_namespaces``), select them by their labels, and relabel, delete and
create them along the way."""
import io
import json
import random

import pytest

from engine import Engine, Scenario, Trace
from engine.nodetable import NodeTable
from engine.plugins.interpodaffinity import filtering
from engine.trace import JsonLinesWriter

KEYS = ("zone", "kubernetes.io/hostname", "rack")
NAMESPACES = ("default", "a", "b")
APPS = ("web", "db", "cache")


def _node(rng, i):
    labels = {}
    if rng.random() < 0.85:
        labels["zone"] = f"z{rng.randrange(3)}"
    if rng.random() < 0.9:
        labels["kubernetes.io/hostname"] = f"n{i}"
    if rng.random() < 0.6:
        labels["rack"] = f"r{rng.randrange(4)}"
    if rng.random() < 0.3:
        labels["other"] = "x"
    cpu = rng.choice(("2", "3", "4"))
    spec = {}
    if rng.random() < 0.1:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "20"}}}


def _selector(rng):
    if rng.random() < 0.6:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    return {"matchExpressions": [{"key": "app", "operator": rng.choice(("In", "NotIn")),
                                  "values": rng.sample(APPS, rng.randrange(1, 3))}]}


def _term(rng):
    t = {"labelSelector": _selector(rng), "topologyKey": rng.choice(KEYS)}
    r = rng.random()
    if r < 0.2:
        t["namespaces"] = rng.sample(NAMESPACES, rng.randrange(1, 3))
    elif r < 0.3:
        t["namespaceSelector"] = {}
    elif r < 0.4:
        t["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": rng.choice(NAMESPACES)}}
    return t


def _affinity(rng):
    aff = {}
    for kind, p in (("podAffinity", 0.35), ("podAntiAffinity", 0.35)):
        if rng.random() > p:
            continue
        a = {}
        if rng.random() < 0.5:
            a["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(rng) for _ in range(rng.randrange(1, 3))]
        if rng.random() < 0.6:
            a["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randrange(1, 101), "podAffinityTerm": _term(rng)}
                for _ in range(rng.randrange(1, 3))]
        if a:
            aff[kind] = a
    return aff


def _spread(rng):
    c = {"maxSkew": rng.choice((1, 1, 2)), "topologyKey": rng.choice(KEYS),
         "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
         "labelSelector": _selector(rng) if rng.random() < 0.9 else {}}
    if rng.random() < 0.2:
        c["minDomains"] = rng.randrange(1, 4)
        c["whenUnsatisfiable"] = "DoNotSchedule"
    if rng.random() < 0.2:
        c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
    if rng.random() < 0.2:
        c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
    if rng.random() < 0.1:
        c["matchLabelKeys"] = ["tier"]
    return c


def _pod(rng, name, node=None):
    labels = {"app": rng.choice(APPS)} if rng.random() < 0.85 else {}
    if rng.random() < 0.3:
        labels["tier"] = rng.choice(("x", "y"))
    spec = {"priority": rng.choice((0, 0, 10, 100)),
            "terminationGracePeriodSeconds": rng.choice((0, 0, 2)),
            "containers": [{"name": "c", "image": "pause",
                            "resources": {"requests": {"cpu": rng.choice(("500m", "1", "1500m"))}}}]}
    aff = _affinity(rng)
    if aff:
        spec["affinity"] = aff
    if rng.random() < 0.4:
        spec["topologySpreadConstraints"] = [_spread(rng) for _ in range(rng.randrange(1, 3))]
    if rng.random() < 0.15:
        spec["nodeSelector"] = {"zone": f"z{rng.randrange(3)}"}
    if rng.random() < 0.1:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": rng.choice(NAMESPACES), "labels": labels},
            "spec": spec}


def scenario(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.randrange(4, 16)
    objects = [_node(rng, i) for i in range(n)]
    bound = [_pod(rng, f"e{i}", f"n{rng.randrange(n)}") for i in range(rng.randrange(0, 2 * n))]
    objects += bound
    objects += [_pod(rng, f"p{i}") for i in range(rng.randrange(1, n))]
    actions = []
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in bound]
    for i in range(rng.randrange(5, 3 * n)):
        at = f"{rng.randrange(1, 4000)}ms"
        if names and rng.random() < 0.15:
            ns, name = names.pop(rng.randrange(len(names)))
            actions.append({"at": at, "delete": {"kind": "Pod", "name": name, "namespace": ns}})
        else:
            actions.append({"at": at, "create": _pod(rng, f"c{i}")})
    return {"kind": "Scenario", "metadata": {"name": f"affinity-{seed}"}, "objects": objects,
            "actions": sorted(actions, key=lambda a: int(a["at"][:-2]))}


TEAM_SELECTORS = ({"matchLabels": {"team": "devops"}},
                  {"matchExpressions": [{"key": "team", "operator": "In", "values": ["devops", "qa"]}]},
                  {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]})


def _namespace(name, team=None):
    md = {"name": name}
    if team is not None:
        md["labels"] = {"team": team}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": md}


def with_namespaces(sc: dict, seed: int) -> dict:
    """``sc`` with namespaces ``a`` (team=devops) and ``b`` (no team) declared, about half of
    the pod affinity terms selecting namespaces by their team label, and actions that
    relabel ``a``, delete ``b`` and create it again (``default`` stays implicit)."""
    rng = random.Random(seed + 10_000)
    pods = [o for o in sc["objects"] if o["kind"] == "Pod"]
    pods += [a["create"] for a in sc["actions"] if "create" in a]
    for p in pods:
        for kind in p["spec"].get("affinity", {}).values():
            terms = list(kind.get("requiredDuringSchedulingIgnoredDuringExecution", []))
            terms += [w["podAffinityTerm"] for w in kind.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
            for t in terms:
                if rng.random() < 0.5:
                    t.pop("namespaces", None)
                    t["namespaceSelector"] = rng.choice(TEAM_SELECTORS)
    actions = sc["actions"] + [
        {"at": f"{rng.randrange(1, 1500)}ms", "update": _namespace("a", rng.choice(("qa", None)))},
        {"at": f"{rng.randrange(1, 1500)}ms", "delete": {"kind": "Namespace", "name": "b"}},
        {"at": f"{rng.randrange(1500, 4000)}ms", "create": _namespace("b", "devops")}]
    return dict(sc, objects=[_namespace("a", "devops"), _namespace("b")] + sc["objects"],
                actions=sorted(actions, key=lambda a: int(a["at"][:-2])))


def run(sc: dict, use_table: bool, trace: bool = True):
    old = filtering.USE_TABLE
    filtering.USE_TABLE = use_table
    try:
        buf = io.StringIO()
        tr = Trace(enabled=trace)
        if trace:
            tr.add_sink(JsonLinesWriter(buf))
        eng = Engine(Scenario.from_dict(sc), tr)
        eng.run(400_000_000)
        return buf.getvalue(), json.dumps(eng.state(), sort_keys=True)
    finally:
        filtering.USE_TABLE = old


@pytest.mark.parametrize("seed", range(120))
def test_table_path_matches_per_pod_path(seed):
    sc = scenario(seed)
    trace_a, state_a = run(sc, True)
    trace_b, state_b = run(sc, False)
    assert state_a == state_b
    if trace_a != trace_b:
        la, lb = trace_a.splitlines(), trace_b.splitlines()
        i = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
        pytest.fail(f"traces differ at line {i}:\n{la[i] if i < len(la) else None}\n"
                    f"{lb[i] if i < len(lb) else None}")


@pytest.mark.parametrize("seed", range(40))
def test_table_path_matches_per_pod_path_with_labelled_namespaces(seed):
    sc = with_namespaces(scenario(seed), seed)
    trace_a, state_a = run(sc, True)
    trace_b, state_b = run(sc, False)
    assert state_a == state_b
    assert trace_a == trace_b


@pytest.mark.parametrize("seed", range(120))
def test_table_path_matches_per_pod_path_trace_off(seed):
    """The headless mode (trace off) takes other Filter loops (Framework.node_filter,
    schedule_one.filter_on_table): the same states."""
    sc = scenario(seed)
    assert run(sc, True, trace=False)[1] == run(sc, False, trace=False)[1]


def large_scenario(seed: int) -> dict:
    """More nodes than numFeasibleNodesToFind (the search stops early, among the nodes
    InterPodAffinity's screen rejects with known statuses: schedule_one.filter_screened), most
    incoming pods with a required hostname anti-affinity to one another (so that most nodes
    holding a pod are rejected), some also with a zone affinity, the rest as ``scenario``'s."""
    rng = random.Random(seed)
    n = rng.randrange(120, 200)
    objects = [_node(rng, i) for i in range(n)]
    objects += [_pod(rng, f"e{i}", f"n{rng.randrange(n)}") for i in range(rng.randrange(n // 4, n // 2))]
    for i in range(rng.randrange(n // 2, n)):
        p = _pod(rng, f"p{i}")
        if rng.random() < 0.7:
            p["metadata"]["labels"]["color"] = "green"
            req = [{"labelSelector": {"matchLabels": {"color": "green"}},
                    "topologyKey": "kubernetes.io/hostname", "namespaces": list(NAMESPACES)}]
            p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": req}}
            if rng.random() < 0.3:
                p["spec"]["affinity"]["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}, "topologyKey": "zone"}]}
        objects.append(p)
    return {"kind": "Scenario", "metadata": {"name": f"affinity-large-{seed}"}, "objects": objects}


@pytest.mark.parametrize("seed", range(5))
def test_screen_statuses_where_the_search_stops_early(seed, monkeypatch):
    """The Filter loop with InterPodAffinity's known statuses (Framework.filter_suspects'
    ``known``) counts the nodes it rejects and stops where the per-node loop stops: the same
    trace and state as the per-pod path, trace on and off."""
    from engine import schedule_one
    real = schedule_one.filter_screened
    used = []

    def spy(*args, known=None, **kw):
        used.append(known is not None)
        return real(*args, known=known, **kw)
    monkeypatch.setattr(schedule_one, "filter_screened", spy)
    sc = large_scenario(seed)
    trace_a, state_a = run(sc, True)
    assert sum(used) > 20, used
    trace_b, state_b = run(sc, False)
    assert state_a == state_b
    assert trace_a == trace_b
    assert run(sc, True, trace=False)[1] == state_a


def test_pod_groups_and_label_columns_stay_current():
    """The pod groups and label columns the table keeps (synced as pods come and go) equal
    those built afresh (NodeTable.check), checked along the runs of a few random clusters."""
    for seed in range(12):
        eng = Engine(Scenario.from_dict(scenario(seed)), Trace(enabled=False))
        checked = 0
        for until in range(0, 4_500_000, 300_000):
            eng.run(until)
            t = eng.cache.snapshot().node_table()
            if t is None:
                continue
            checked += 1
            assert t.pod_groups() is not None
            assert t.check() == []
            for key in KEYS:
                codes, values, index = t.labels(key)
                want = [ni.node.labels.get(key) for ni in t.node_infos]
                assert [values[c] if c >= 0 else None for c in codes.tolist()] == want
                assert all(index[v] == i for i, v in enumerate(values))
        assert checked > 10


def _normalized(pl, st, pod, nodes, raw, use_table):
    """NormalizeScore: the plugin's shortcut over plain scores on the table path, upstream's
    form over NodeScores on the other."""
    from engine.framework.interface import NodeScore
    if raw is None:
        return None
    if use_table:
        return pl._normalize_values(st, pod, raw)
    scores = [NodeScore(ni.name, v) for ni, v in zip(nodes, raw)]
    assert pl.normalize_score(st, pod, scores) is None
    return [ns.score for ns in scores]


def _states(eng, pod, use_table: bool):
    """The PreFilter / PreScore states InterPodAffinity and PodTopologySpread compute for
    ``pod`` now, with or without the table (the pair orders included)."""
    from engine.framework.cycle_state import CycleState
    old = filtering.USE_TABLE
    filtering.USE_TABLE = use_table
    try:
        fwk = eng.frameworks["default-scheduler"]
        ipa, pts = fwk._instances["InterPodAffinity"], fwk._instances["PodTopologySpread"]
        nodes = fwk.snapshot().node_info_list
        out = []
        st = CycleState()
        _, status = ipa.pre_filter(st, pod)
        s = st.get("PreFilterInterPodAffinity")
        out.append((status and status.code, s and (sorted(s.existing_anti_affinity_counts.items()),
                                                  sorted(s.affinity_counts.items()),
                                                  sorted(s.anti_affinity_counts.items()))))
        if s is not None and use_table:
            # the screen's codes are Filter's statuses (code and reasons), node by node
            table = fwk.snapshot().node_table()
            m = ipa._filter_suspects(st, pod, table)
            got = [None] * len(nodes) if m is None else [m.statuses[c - 1] if c else None
                                                         for c in m.codes.tolist()]
            want = [None if r is None else (r.code, tuple(r.reasons))
                    for r in (ipa.filter(st, pod, ni) for ni in nodes)]
            assert got == want
        status = ipa.pre_score(st, pod, nodes)
        s = st.get("PreScoreInterPodAffinity")
        out.append((status and status.code, s and {k: sorted(v.items()) for k, v in s.topology_score.items()}))
        if s is not None:
            raw, err = ipa.score_nodes(st, pod, nodes)
            out.append((raw, err, _normalized(ipa, st, pod, nodes, raw, use_table)))
        st = CycleState()
        _, status = pts.pre_filter(st, pod)
        s = st.get("PreFilterPodTopologySpread")
        out.append((status and status.code, s and (list(s.tp_pair_to_match_num.items()),
                                                  {k: p.as_pairs() for k, p in s.tp_key_to_critical_paths.items()},
                                                  s.tp_key_to_domains_num)))
        if s is not None and use_table:
            table = fwk.snapshot().node_table()
            m = pts._filter_suspects(st, pod, table)
            got = [None] * len(nodes) if m is None else [m.statuses[c - 1] if c else None
                                                         for c in m.codes.tolist()]
            assert got == [None if r is None else (r.code, tuple(r.reasons))
                           for r in (pts.filter(st, pod, ni) for ni in nodes)]
        for candidates in (nodes, nodes[::2]):
            st = CycleState()
            status = pts.pre_score(st, pod, candidates)
            s = st.get("PreScorePodTopologySpread")
            scores = None
            if s is not None:
                raw, err = pts.score_nodes(st, pod, candidates)
                scores = (raw, err, _normalized(pts, st, pod, candidates, raw, use_table))
            out.append((status and status.code,
                        s and (list(s.topology_pair_to_pod_counts.items()), sorted(s.ignored_nodes),
                               s.topology_normalizing_weight), scores))
        return out
    finally:
        filtering.USE_TABLE = old


@pytest.mark.parametrize("seed,namespaces", [(s, False) for s in range(40)] + [(s, True) for s in range(10)])
def test_pre_filter_and_pre_score_states_match(seed, namespaces):
    """The states themselves (PodTopologySpread's pairs in the same order, which its critical
    paths depend on), for every pod of the cluster, at a few points of the run; and the
    screens (``_filter_suspects``) give, node by node, InterPodAffinity's and
    PodTopologySpread's Filter statuses (code and reasons)."""
    sc = with_namespaces(scenario(seed), seed) if namespaces else scenario(seed)
    eng = Engine(Scenario.from_dict(sc), Trace(enabled=False))
    for until in (0, 1_000_000, 2_500_000, 400_000_000):
        eng.run(until)
        for pod in list(eng.pods.values()):
            assert _states(eng, pod, True) == _states(eng, pod, False)
