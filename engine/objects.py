"""The Kubernetes objects the engine understands, parsed from manifests.

Each ``*_from_manifest`` function validates as it parses and reports every problem it finds
to a ``Problems`` collector under the manifest's place in the file
(``objects[3].spec.containers[0].resources.requests.cpu: "12x" is not a quantity``), so a
scenario's mistakes are reported all at once.  Objects keep their manifest for display, and
their parsed fields for the scheduler's hot paths.

Upstream shapes: ``k8s.io/api/core/v1`` (Pod, Node), ``scheduling/v1`` (PriorityClass),
``policy/v1`` (PodDisruptionBudget).  Resource arithmetic follows
``pkg/api/v1/resource.PodRequests`` and ``framework.calculateResource`` (v1.28).
"""
from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .labels import (is_valid_label_value, LabelSelector, NodeSelector, NodeSelectorTerm, Requirement, Taint,
                     Toleration)
from .quantity import _q as _quote
from .quantity import MAX_QUANTITY, milli_value, parse_quantity, shorten, value

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_MILLI_CPU_REQUEST = 100          # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"

# pkg/apis/scheduling (v1.28): the priority range rules of PriorityClass validation and the
# Priority admission plugin.
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000        # scheduling.HighestUserDefinablePriority
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY   # scheduling.SystemCriticalPriority
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"                 # scheduling.SystemPriorityClassPrefix
SYSTEM_CLUSTER_CRITICAL = SYSTEM_PRIORITY_CLASS_PREFIX + "cluster-critical"
SYSTEM_NODE_CRITICAL = SYSTEM_PRIORITY_CLASS_PREFIX + "node-critical"
# pkg/apis/scheduling/v1.systemPriorityClasses: (name, value), globalDefault false, created by
# the API server at bootstrap.
SYSTEM_PRIORITY_CLASSES = ((SYSTEM_NODE_CRITICAL, SYSTEM_CRITICAL_PRIORITY + 1000),
                           (SYSTEM_CLUSTER_CRITICAL, SYSTEM_CRITICAL_PRIORITY))

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


class Problems:
    """Collects ``place: message`` strings."""

    def __init__(self):
        self.items: list[str] = []

    def add(self, place: str, message: str) -> None:
        self.items.append(f"{place}: {message}" if place else message)

    def __bool__(self):
        return bool(self.items)


def _q(v) -> str:
    """Quote a user value for an error message (cut to a bounded length: see quantity._q)."""
    return _quote(v)


# ---------------------------------------------------------------------------------------------
# Small typed getters that report problems and return a default.

def _at(place: str, key: str) -> str:
    """The place of ``key`` inside ``place`` (just ``key`` at the top of the document)."""
    return f"{place}.{key}" if place else key


def get_map(d: dict, key: str, place: str, probs: Problems, default=None):
    v = d.get(key)
    if v is None:
        return {} if default is None else default
    if not isinstance(v, dict):
        probs.add(_at(place, key), f"{_q(v)} is not a mapping")
        return {} if default is None else default
    return v


def get_list(d: dict, key: str, place: str, probs: Problems):
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        probs.add(_at(place, key), f"{_q(v)} is not a list")
        return []
    return v


def get_str(d: dict, key: str, place: str, probs: Problems, default: str | None = "") -> str | None:
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, str):
        probs.add(_at(place, key), f"{_q(v)} is not a string")
        return default
    return v


def get_int(d: dict, key: str, place: str, probs: Problems, default=None, minimum=None, maximum=None):
    v = d.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            probs.add(_at(place, key), f"{_q(v)} is not an integer")
            return default
    if minimum is not None and v < minimum:
        probs.add(_at(place, key), f"{v} is less than {minimum}")
        return default
    if maximum is not None and v > maximum:
        probs.add(_at(place, key), f"{v} is greater than {maximum}")
        return default
    return v


def get_int32(d: dict, key: str, place: str, probs: Problems, default=None, what: str = "an int32"):
    """An integer that must fit Kubernetes' ``int32`` (the type of ``spec.priority`` and of a
    PriorityClass's ``value``)."""
    v = get_int(d, key, place, probs, default=None)
    if v is None:
        return default
    if not INT32_MIN <= v <= INT32_MAX:
        probs.add(_at(place, key), f"{v} is outside the int32 range {INT32_MIN}..{INT32_MAX} ({what})")
        return default
    return v


def get_bool(d: dict, key: str, place: str, probs: Problems, default=False):
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        probs.add(_at(place, key), f"{_q(v)} is not true or false")
        return default
    return v


def string_map(d: dict, key: str, place: str, probs: Problems) -> dict:
    m = get_map(d, key, place, probs)
    out = {}
    for k, v in m.items():
        if not isinstance(k, str):
            probs.add(_at(place, key), f"key {_q(k)} is not a string")
            continue
        if isinstance(v, bool) or v is None or not isinstance(v, (str, int, float)):
            probs.add(f"{_at(place, key)}.{k}", f"{_q(v)} is not a string")
            continue
        out[k] = v if isinstance(v, str) else str(v)
    return out


def parse_time(v, place: str, probs: Problems):
    """An RFC 3339 instant -> aware datetime (None if absent or invalid)."""
    if v is None:
        return None
    if isinstance(v, datetime):
        return v if v.tzinfo else v.replace(tzinfo=timezone.utc)
    if not isinstance(v, str):
        probs.add(place, f"{_q(v)} is not an RFC 3339 time")
        return None
    text = v.strip()
    if text.endswith("Z") or text.endswith("z"):
        text = text[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        probs.add(place, f"{_q(v)} is not an RFC 3339 time")
        return None
    if t.tzinfo is None:
        probs.add(place, f"{_q(v)} has no time zone (RFC 3339 needs Z or an offset)")
        return None
    return t


# ---------------------------------------------------------------------------------------------
# Selectors

_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_SELECTOR_OPS = _SELECTOR_OPS + ("Gt", "Lt")


def parse_requirement(e: Any, place: str, probs: Problems, ops=_SELECTOR_OPS):
    if not isinstance(e, dict):
        probs.add(place, f"{_q(e)} is not a mapping")
        return None
    key = get_str(e, "key", place, probs)
    op = get_str(e, "operator", place, probs)
    values = get_list(e, "values", place, probs)
    ok = True
    if not key:
        probs.add(f"{place}.key", "is required")
        ok = False
    if op not in ops:
        probs.add(f"{place}.operator", f"{_q(op)} is not one of {', '.join(ops)}")
        ok = False
    vals = []
    for i, x in enumerate(values):
        if isinstance(x, bool) or not isinstance(x, (str, int)):
            probs.add(f"{place}.values[{i}]", f"{_q(x)} is not a string")
            ok = False
        else:
            vals.append(str(x))
    if op in ("In", "NotIn") and not vals:
        probs.add(f"{place}.values", f"must be non-empty for operator {op}")
        ok = False
    if op in ("Exists", "DoesNotExist") and vals:
        probs.add(f"{place}.values", f"must be empty for operator {op}")
        ok = False
    if op in ("Gt", "Lt"):
        if len(vals) != 1:
            probs.add(f"{place}.values", f"must have exactly one value for operator {op}")
            ok = False
        else:
            try:
                int(vals[0])
            except ValueError:
                probs.add(f"{place}.values[0]", f"{_q(vals[0])} is not an integer")
                ok = False
    return Requirement(key, op, tuple(vals)) if ok else None


def parse_label_selector(v: Any, place: str, probs: Problems) -> LabelSelector | None:
    """metav1.LabelSelector.  Returns None for an absent selector (which selects nothing)."""
    if v is None:
        return None
    if not isinstance(v, dict):
        probs.add(place, f"{_q(v)} is not a label selector")
        return None
    reqs = []
    for k, val in string_map(v, "matchLabels", place, probs).items():
        reqs.append(Requirement(k, "In", (val,)))
    for i, e in enumerate(get_list(v, "matchExpressions", place, probs)):
        r = parse_requirement(e, f"{place}.matchExpressions[{i}]", probs)
        if r:
            reqs.append(r)
    return LabelSelector(tuple(reqs))


def parse_node_selector_term(v, place, probs) -> NodeSelectorTerm:
    if not isinstance(v, dict):
        probs.add(place, f"{_q(v)} is not a node selector term")
        return NodeSelectorTerm()
    exprs = []
    for i, e in enumerate(get_list(v, "matchExpressions", place, probs)):
        r = parse_requirement(e, f"{place}.matchExpressions[{i}]", probs, _NODE_SELECTOR_OPS)
        if r:
            exprs.append(r)
    fields = []
    for i, e in enumerate(get_list(v, "matchFields", place, probs)):
        r = parse_requirement(e, f"{place}.matchFields[{i}]", probs, ("In", "NotIn"))
        if r:
            if r.key != "metadata.name":
                probs.add(f"{place}.matchFields[{i}].key", f"{_q(r.key)} is not supported (only metadata.name)")
            else:
                fields.append(r)
    invalid = any(r.operator in ("In", "NotIn") and not all(is_valid_label_value(x) for x in r.values)
                  for r in exprs)
    return NodeSelectorTerm(tuple(exprs), tuple(fields), invalid)


# ---------------------------------------------------------------------------------------------
# Resources

def resource_list(v: Any, place: str, probs: Problems) -> dict:
    """A ResourceList as {name: Decimal}."""
    out = {}
    if v is None:
        return out
    if not isinstance(v, dict):
        probs.add(place, f"{_q(v)} is not a resource list")
        return out
    for name, q in v.items():
        try:
            d = parse_quantity(q)
        except ValueError as e:
            probs.add(f"{place}.{name}", str(e))
            continue
        if d < 0:
            probs.add(f"{place}.{name}", f"{_q(q)} must not be negative")
            continue
        if name == "cpu" and milli_value(d) > MAX_QUANTITY:
            # the scheduler counts CPU with MilliValue(), an int64 (upstream would overflow)
            probs.add(f"{place}.{name}", f"{_q(q)} is more CPU than an int64 of millicores holds "
                                         f"(at most {MAX_QUANTITY // 1000}.{MAX_QUANTITY % 1000:03d})")
            continue
        out[str(name)] = d
    return out


def is_scalar_resource(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended resources (domain-prefixed, outside
    kubernetes.io), hugepages-*, prefixed native resources (kubernetes.io/...) and
    attachable-volumes-*."""
    return name.startswith("hugepages-") or name.startswith("attachable-volumes-") or "/" in name


def to_resource(rl: dict) -> dict:
    """framework.Resource.Add: cpu in millicores, others as integer values; unknown names are
    kept only if they are scalar resources.  ``pods`` is kept for allocatable."""
    out = {}
    for name, q in rl.items():
        if name == "cpu":
            out["cpu"] = milli_value(q)
        elif name in ("memory", "ephemeral-storage", "pods"):
            out[name] = value(q)
        elif is_scalar_resource(name):
            out[name] = value(q)
    return out


def _add(into: dict, rl: dict):
    for k, v in rl.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: dict, rl: dict):
    for k, v in rl.items():
        if v > into.get(k, 0):
            into[k] = v


# ---------------------------------------------------------------------------------------------
# Pod

@dataclass(frozen=True)
class AffinityTerm:
    """framework.AffinityTerm: a parsed PodAffinityTerm.  ``namespaces`` is already defaulted
    to the owning pod's namespace when both it and the namespaceSelector are empty."""
    namespaces: frozenset
    selector: LabelSelector | None
    topology_key: str
    namespace_selector: LabelSelector | None = None

    def matches(self, pod: "Pod", ns_labels=None) -> bool:
        """AffinityTerm.Matches: namespace then labels."""
        if pod.namespace in self.namespaces:
            pass
        elif self.namespace_selector is not None and self.namespace_selector.matches(
                ns_labels if ns_labels is not None else namespace_labels(pod.namespace)):
            pass
        else:
            return False
        return self.selector is not None and self.selector.matches(pod.labels)


def namespace_labels(ns: str) -> dict:
    """Namespaces are not modelled; each carries only its well-known name label."""
    return {"kubernetes.io/metadata.name": ns}


@dataclass(frozen=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule ScheduleAnyway
    selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple = ()


@dataclass(frozen=True)
class HostPort:
    ip: str
    protocol: str
    port: int


_pod_uid_counter = [0]


# Pod fields that none of its cached properties reads (Pod.copy keeps the cache when only
# these change)
_CACHE_FREE = frozenset({"node_name", "nominated_node_name", "deletion_timestamp", "disruption_target",
                         "start_time", "resource_version", "manifest"})
_CACHED = ("key", "has_affinity", "has_required_anti_affinity")


@dataclass
class Pod:
    name: str
    namespace: str = "default"
    uid: str = ""
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    priority: int = 0
    priority_class_name: str = ""
    spec_priority: int | None = None   # spec.priority as written (None: resolved from the class)
    preemption_policy: str | None = None  # as written on the pod (None: from the class)
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    node_name: str = ""
    node_selector: dict = field(default_factory=dict)
    required_node_affinity: NodeSelector | None = None
    preferred_node_affinity: tuple = ()   # ((weight, NodeSelectorTerm), ...)
    required_affinity_terms: tuple = ()
    required_anti_affinity_terms: tuple = ()
    preferred_affinity_terms: tuple = ()
    preferred_anti_affinity_terms: tuple = ()
    tolerations: tuple = ()
    topology_spread_constraints: tuple = ()
    requests: dict = field(default_factory=dict)       # framework.Resource of the pod
    non0_cpu: int = 0
    non0_mem: int = 0
    host_ports: tuple = ()
    images: tuple = ()
    scheduling_gates: tuple = ()
    volumes: tuple = ()                 # spec.volumes (objects.Volume)
    termination_grace_period: int = DEFAULT_TERMINATION_GRACE_PERIOD
    nominated_node_name: str = ""
    start_time: int | None = None       # virtual microseconds (may be negative)
    deletion_timestamp: int | None = None
    disruption_target: bool = False     # DisruptionTarget=True, reason PreemptionByScheduler
    manifest: dict = field(default_factory=dict)
    resource_version: int = 0

    # key, has_affinity and has_required_anti_affinity are read in every NodeInfo update;
    # computed once per Pod object (cached in its __dict__; copy() drops them when a field
    # they depend on changes)
    @functools.cached_property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def effective_preemption_policy(self) -> str:
        return self.preemption_policy or PREEMPT_LOWER_PRIORITY

    @functools.cached_property
    def has_affinity(self) -> bool:
        """podWithAffinity: any pod affinity or anti-affinity term."""
        return bool(self.required_affinity_terms or self.required_anti_affinity_terms or
                    self.preferred_affinity_terms or self.preferred_anti_affinity_terms)

    @functools.cached_property
    def has_required_anti_affinity(self) -> bool:
        return bool(self.required_anti_affinity_terms)

    def copy(self, **changes) -> "Pod":
        p = copy.copy(self)
        for k, v in changes.items():
            setattr(p, k, v)
        if not _CACHE_FREE.issuperset(changes):
            d = p.__dict__
            for k in _CACHED:
                d.pop(k, None)
        return p

    def spec_for_compare(self) -> dict:
        """The manifest as isPodUpdated compares it: no status, resourceVersion, generation,
        managedFields or finalizers."""
        m = dict(self.manifest)
        m.pop("status", None)
        md = dict(m.get("metadata") or {})
        for k in ("resourceVersion", "generation", "managedFields", "finalizers"):
            md.pop(k, None)
        m["metadata"] = md
        spec = dict(m.get("spec") or {})
        spec.pop("nodeName", None)
        m["spec"] = spec
        return m


def _affinity_terms(lst, place, probs, pod_ns, weighted=False):
    out = []
    for i, t in enumerate(lst):
        p = f"{place}[{i}]"
        if not isinstance(t, dict):
            probs.add(p, f"{_q(t)} is not a mapping")
            continue
        weight = None
        if weighted:
            weight = get_int(t, "weight", p, probs, default=None, minimum=1, maximum=100)
            if weight is None and "weight" not in t:
                probs.add(f"{p}.weight", "is required")
            t = get_map(t, "podAffinityTerm", p, probs)
            p = f"{p}.podAffinityTerm"
        sel = parse_label_selector(t.get("labelSelector"), f"{p}.labelSelector", probs)
        ns_list = get_list(t, "namespaces", p, probs)
        ns_sel = parse_label_selector(t.get("namespaceSelector"), f"{p}.namespaceSelector", probs)
        tk = get_str(t, "topologyKey", p, probs)
        if not tk:
            probs.add(f"{p}.topologyKey", "is required")
        namespaces = frozenset(str(n) for n in ns_list)
        if not namespaces and ns_sel is None:
            namespaces = frozenset([pod_ns])
        term = AffinityTerm(namespaces, sel, tk or "", ns_sel)
        out.append(WeightedAffinityTerm(term, weight or 1) if weighted else term)
    return tuple(out)


def pod_from_manifest(m: Any, place: str, probs: Problems, start_instant: datetime | None = None) -> Pod | None:
    """Parse and validate a Pod manifest.  Priority is not resolved here (see Cluster)."""
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a Pod manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    mp, sp, stp = f"{place}.metadata", f"{place}.spec", f"{place}.status"
    name = get_str(md, "name", mp, probs)
    if not name:
        probs.add(f"{mp}.name", "is required")
    elif not _NAME_RE.match(name) or len(name) > 253:
        probs.add(f"{mp}.name", f"{_q(name)} is not a valid name (lower-case letters, digits, '-' and '.')")
    ns = get_str(md, "namespace", mp, probs) or "default"
    labels = string_map(md, "labels", mp, probs)
    annotations = string_map(md, "annotations", mp, probs)

    containers = get_list(spec, "containers", sp, probs)
    if not containers and "containers" not in spec:
        pass  # tolerated: a pod without containers requests nothing
    init_containers = get_list(spec, "initContainers", sp, probs)
    total: dict = {}
    non0_cpu = non0_mem = 0
    init_max: dict = {}
    non0_init_cpu = non0_init_mem = 0
    host_ports = []
    images = []
    for kind, lst in (("containers", containers), ("initContainers", init_containers)):
        for i, c in enumerate(lst):
            cp = f"{sp}.{kind}[{i}]"
            if not isinstance(c, dict):
                probs.add(cp, f"{_q(c)} is not a container")
                continue
            res = get_map(c, "resources", cp, probs)
            reqs = resource_list(res.get("requests"), f"{cp}.resources.requests", probs)
            limits = resource_list(res.get("limits"), f"{cp}.resources.limits", probs)
            for k, v in limits.items():  # the API server defaults requests to limits
                reqs.setdefault(k, v)
                if reqs[k] > v:
                    probs.add(f"{cp}.resources.requests.{k}", f"must be less than or equal to the {k} limit")
            r = to_resource(reqs)
            c_cpu = r.get("cpu", 0) if "cpu" in reqs else DEFAULT_MILLI_CPU_REQUEST
            c_mem = r.get("memory", 0) if "memory" in reqs else DEFAULT_MEMORY_REQUEST
            img = get_str(c, "image", cp, probs)
            if kind == "containers":
                _add(total, r)
                non0_cpu += c_cpu
                non0_mem += c_mem
                if img:
                    images.append(img)
                for j, port in enumerate(get_list(c, "ports", cp, probs)):
                    pp = f"{cp}.ports[{j}]"
                    if not isinstance(port, dict):
                        probs.add(pp, f"{_q(port)} is not a port")
                        continue
                    hp = get_int(port, "hostPort", pp, probs, default=0, minimum=0, maximum=65535)
                    get_int(port, "containerPort", pp, probs, default=0, minimum=0, maximum=65535)
                    proto = get_str(port, "protocol", pp, probs) or "TCP"
                    if proto not in ("TCP", "UDP", "SCTP"):
                        probs.add(f"{pp}.protocol", f"{_q(proto)} is not one of TCP, UDP, SCTP")
                    ip = get_str(port, "hostIP", pp, probs) or ""
                    if hp and hp > 0:
                        host_ports.append(HostPort(ip or "0.0.0.0", proto, hp))
            else:
                _max_into(init_max, r)
                non0_init_cpu = max(non0_init_cpu, c_cpu)
                non0_init_mem = max(non0_init_mem, c_mem)
    _max_into(total, init_max)
    non0_cpu = max(non0_cpu, non0_init_cpu)
    non0_mem = max(non0_mem, non0_init_mem)
    overhead = to_resource(resource_list(spec.get("overhead"), f"{sp}.overhead", probs))
    _add(total, overhead)
    if "cpu" in overhead:
        non0_cpu += overhead["cpu"]
    if "memory" in overhead:
        non0_mem += overhead["memory"]
    total.pop("pods", None)

    # Any int32: the Priority admission plugin sets it from the class (system classes give
    # values above HighestUserDefinablePriority); the scheduler never validates it.
    spec_priority = get_int32(spec, "priority", sp, probs, default=None, what="a pod's priority is an int32")
    pcn = get_str(spec, "priorityClassName", sp, probs)
    pp_ = get_str(spec, "preemptionPolicy", sp, probs, default=None)
    if pp_ is not None and pp_ not in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
        probs.add(f"{sp}.preemptionPolicy", f"{_q(pp_)} is not PreemptLowerPriority or Never")
        pp_ = None
    scheduler_name = get_str(spec, "schedulerName", sp, probs) or DEFAULT_SCHEDULER_NAME
    node_name = get_str(spec, "nodeName", sp, probs)
    node_selector = string_map(spec, "nodeSelector", sp, probs)

    aff = get_map(spec, "affinity", sp, probs)
    ap = f"{sp}.affinity"
    na = get_map(aff, "nodeAffinity", ap, probs)
    nap = f"{ap}.nodeAffinity"
    required_na = None
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        rp = f"{nap}.requiredDuringSchedulingIgnoredDuringExecution"
        if not isinstance(req, dict):
            probs.add(rp, f"{_q(req)} is not a node selector")
        else:
            terms = get_list(req, "nodeSelectorTerms", rp, probs)
            required_na = NodeSelector(tuple(parse_node_selector_term(t, f"{rp}.nodeSelectorTerms[{i}]", probs)
                                             for i, t in enumerate(terms)))
    preferred_na = []
    for i, t in enumerate(get_list(na, "preferredDuringSchedulingIgnoredDuringExecution", nap, probs)):
        p = f"{nap}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not isinstance(t, dict):
            probs.add(p, f"{_q(t)} is not a mapping")
            continue
        w = get_int(t, "weight", p, probs, default=None, minimum=1, maximum=100)
        if w is None:
            if "weight" not in t:
                probs.add(f"{p}.weight", "is required")
            continue
        preferred_na.append((w, parse_node_selector_term(t.get("preference") or {}, f"{p}.preference", probs)))
    pa = get_map(aff, "podAffinity", ap, probs)
    paa = get_map(aff, "podAntiAffinity", ap, probs)
    rdie = "requiredDuringSchedulingIgnoredDuringExecution"
    pdie = "preferredDuringSchedulingIgnoredDuringExecution"
    req_aff = _affinity_terms(get_list(pa, rdie, f"{ap}.podAffinity", probs), f"{ap}.podAffinity.{rdie}", probs, ns)
    req_anti = _affinity_terms(get_list(paa, rdie, f"{ap}.podAntiAffinity", probs), f"{ap}.podAntiAffinity.{rdie}", probs, ns)
    pref_aff = _affinity_terms(get_list(pa, pdie, f"{ap}.podAffinity", probs), f"{ap}.podAffinity.{pdie}", probs, ns, True)
    pref_anti = _affinity_terms(get_list(paa, pdie, f"{ap}.podAntiAffinity", probs), f"{ap}.podAntiAffinity.{pdie}", probs, ns, True)

    tolerations = []
    for i, t in enumerate(get_list(spec, "tolerations", sp, probs)):
        p = f"{sp}.tolerations[{i}]"
        if not isinstance(t, dict):
            probs.add(p, f"{_q(t)} is not a toleration")
            continue
        op = get_str(t, "operator", p, probs) or "Equal"
        if op not in ("Equal", "Exists"):
            probs.add(f"{p}.operator", f"{_q(op)} is not Equal or Exists")
            continue
        eff = get_str(t, "effect", p, probs) or ""
        if eff not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            probs.add(f"{p}.effect", f"{_q(eff)} is not NoSchedule, PreferNoSchedule or NoExecute")
            continue
        val = t.get("value")
        val = "" if val is None else str(val)
        if op == "Exists" and val:
            probs.add(f"{p}.value", "must be empty when operator is Exists")
            continue
        tolerations.append(Toleration(get_str(t, "key", p, probs) or "", op, val, eff))

    tscs = []
    for i, c in enumerate(get_list(spec, "topologySpreadConstraints", sp, probs)):
        p = f"{sp}.topologySpreadConstraints[{i}]"
        if not isinstance(c, dict):
            probs.add(p, f"{_q(c)} is not a mapping")
            continue
        ms = get_int(c, "maxSkew", p, probs, default=None, minimum=1)
        if ms is None and "maxSkew" not in c:
            probs.add(f"{p}.maxSkew", "is required")
        tk = get_str(c, "topologyKey", p, probs)
        if not tk:
            probs.add(f"{p}.topologyKey", "is required")
        wu = get_str(c, "whenUnsatisfiable", p, probs)
        if wu not in ("DoNotSchedule", "ScheduleAnyway"):
            probs.add(f"{p}.whenUnsatisfiable", f"{_q(wu)} is not DoNotSchedule or ScheduleAnyway")
        md_ = get_int(c, "minDomains", p, probs, default=None, minimum=1)
        if md_ is not None and wu != "DoNotSchedule":
            probs.add(f"{p}.minDomains", "may only be set with whenUnsatisfiable: DoNotSchedule")
        nap_ = get_str(c, "nodeAffinityPolicy", p, probs) or "Honor"
        ntp_ = get_str(c, "nodeTaintsPolicy", p, probs) or "Ignore"
        for fname, fv in (("nodeAffinityPolicy", nap_), ("nodeTaintsPolicy", ntp_)):
            if fv not in ("Honor", "Ignore"):
                probs.add(f"{p}.{fname}", f"{_q(fv)} is not Honor or Ignore")
        mlk = tuple(str(k) for k in get_list(c, "matchLabelKeys", p, probs))
        sel = parse_label_selector(c.get("labelSelector"), f"{p}.labelSelector", probs)
        if ms and tk and wu in ("DoNotSchedule", "ScheduleAnyway"):
            tscs.append(TopologySpreadConstraint(ms, tk, wu, sel, md_, nap_, ntp_, mlk))

    gates = []
    for i, g in enumerate(get_list(spec, "schedulingGates", sp, probs)):
        if not isinstance(g, dict) or not isinstance(g.get("name"), str) or not g.get("name"):
            probs.add(f"{sp}.schedulingGates[{i}]", f"{_q(g)} is not a gate (a mapping with a name)")
            continue
        gates.append(g["name"])
    volumes = parse_pod_volumes(spec, sp, probs)
    tgp = get_int(spec, "terminationGracePeriodSeconds", sp, probs, default=DEFAULT_TERMINATION_GRACE_PERIOD, minimum=0)
    nnn = get_str(status, "nominatedNodeName", stp, probs)
    st = parse_time(status.get("startTime"), f"{stp}.startTime", probs)
    start_time = None
    if st is not None and start_instant is not None:
        delta = st - start_instant
        start_time = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if len(probs.items) != n_before:
        return None
    return Pod(
        name=name, namespace=ns, labels=labels, annotations=annotations,
        priority=spec_priority or 0, priority_class_name=pcn or "", spec_priority=spec_priority,
        preemption_policy=pp_, scheduler_name=scheduler_name, node_name=node_name or "",
        node_selector=node_selector, required_node_affinity=required_na,
        preferred_node_affinity=tuple(preferred_na), required_affinity_terms=req_aff,
        required_anti_affinity_terms=req_anti, preferred_affinity_terms=pref_aff,
        preferred_anti_affinity_terms=pref_anti, tolerations=tuple(tolerations),
        topology_spread_constraints=tuple(tscs), requests=total, non0_cpu=non0_cpu,
        non0_mem=non0_mem, host_ports=tuple(host_ports), images=tuple(images),
        scheduling_gates=tuple(gates), volumes=volumes, termination_grace_period=tgp,
        nominated_node_name=nnn or "", start_time=start_time, manifest=m)


# ---------------------------------------------------------------------------------------------
# Node

@dataclass
class Node:
    name: str
    labels: dict = field(default_factory=dict)
    unschedulable: bool = False
    taints: tuple = ()
    allocatable: dict = field(default_factory=dict)   # framework.Resource incl. "pods"
    images: dict = field(default_factory=dict)         # image name -> size bytes
    conditions: dict = field(default_factory=dict)     # type -> status
    manifest: dict = field(default_factory=dict)

    def copy(self, **changes) -> "Node":
        n = copy.copy(self)
        for k, v in changes.items():
            setattr(n, k, v)
        return n


def node_from_manifest(m: Any, place: str, probs: Problems) -> Node | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a Node manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    mp, sp, stp = f"{place}.metadata", f"{place}.spec", f"{place}.status"
    name = get_str(md, "name", mp, probs)
    if not name:
        probs.add(f"{mp}.name", "is required")
    elif not _NAME_RE.match(name):
        probs.add(f"{mp}.name", f"{_q(name)} is not a valid name")
    labels = string_map(md, "labels", mp, probs)
    unsched = get_bool(spec, "unschedulable", sp, probs)
    taints = []
    for i, t in enumerate(get_list(spec, "taints", sp, probs)):
        p = f"{sp}.taints[{i}]"
        if not isinstance(t, dict):
            probs.add(p, f"{_q(t)} is not a taint")
            continue
        key = get_str(t, "key", p, probs)
        eff = get_str(t, "effect", p, probs)
        if not key:
            probs.add(f"{p}.key", "is required")
        if eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            probs.add(f"{p}.effect", f"{_q(eff)} is not NoSchedule, PreferNoSchedule or NoExecute")
        val = t.get("value")
        if key and eff in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            taints.append(Taint(key, "" if val is None else str(val), eff))
    alloc_raw = status.get("allocatable")
    place_alloc = f"{stp}.allocatable"
    if alloc_raw is None:
        alloc_raw = status.get("capacity")
        place_alloc = f"{stp}.capacity"
    alloc = to_resource(resource_list(alloc_raw, place_alloc, probs))
    images = {}
    for i, im in enumerate(get_list(status, "images", stp, probs)):
        p = f"{stp}.images[{i}]"
        if not isinstance(im, dict):
            probs.add(p, f"{_q(im)} is not an image")
            continue
        size = get_int(im, "sizeBytes", p, probs, default=0, minimum=0)
        for nm in get_list(im, "names", p, probs):
            images[str(nm)] = size
    conditions = {}
    for i, c in enumerate(get_list(status, "conditions", stp, probs)):
        if isinstance(c, dict) and c.get("type"):
            conditions[str(c["type"])] = str(c.get("status", ""))
    if len(probs.items) != n_before:
        return None
    return Node(name=name, labels=labels, unschedulable=unsched, taints=tuple(taints),
                allocatable=alloc, images=images, conditions=conditions, manifest=m)


# ---------------------------------------------------------------------------------------------
# PriorityClass and PodDisruptionBudget

@dataclass
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    manifest: dict = field(default_factory=dict)


def is_known_system_priority_class(name: str, value: int, global_default: bool) -> tuple[bool, str]:
    """Upstream ``IsKnownSystemPriorityClass`` (pkg/apis/scheduling/v1/helpers.go): whether
    ``name``, ``value`` and ``global_default`` match a system class exactly, else why not."""
    for spc_name, spc_value in SYSTEM_PRIORITY_CLASSES:
        if spc_name == name:
            if spc_value != value:
                return False, f"value of {spc_name} PriorityClass must be {spc_value}"
            if global_default:
                return False, f"globalDefault of {spc_name} PriorityClass must be false"
            return True, ""
    return False, f"{name} is not a known system priority class"


def validate_priority_class_value(name: str, value: int, global_default: bool, place: str, probs: Problems):
    """The value rules of upstream ``ValidatePriorityClass`` (pkg/apis/scheduling/validation):
    a name with the ``system-`` prefix must be one of the system classes, exactly; any other
    class's value must not exceed ``HighestUserDefinablePriority``."""
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        ok, err = is_known_system_priority_class(name, value, global_default)
        if not ok:
            probs.add(f"{place}.metadata.name",
                      f"{_q(name)}: priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved "
                      f"for system use only. error: {err}")
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        probs.add(f"{place}.value",
                  f"{value}: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY} "
                  f"(values above it are reserved for the built-in {SYSTEM_CLUSTER_CRITICAL} and "
                  f"{SYSTEM_NODE_CRITICAL} classes)")


def system_priority_classes() -> list[PriorityClass]:
    """The classes the API server creates at bootstrap (``SystemPriorityClasses``), known to
    every scenario whether or not it declares them."""
    return [PriorityClass(n, v, False, PREEMPT_LOWER_PRIORITY,
                          {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": n}, "value": v})
            for n, v in SYSTEM_PRIORITY_CLASSES]


def priority_class_from_manifest(m, place, probs) -> PriorityClass | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PriorityClass manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    name = get_str(md, "name", f"{place}.metadata", probs)
    if not name:
        probs.add(f"{place}.metadata.name", "is required")
    v = get_int32(m, "value", place, probs, default=None, what="a PriorityClass's value is an int32")
    if "value" not in m:
        probs.add(f"{place}.value", "is required")
    gd = get_bool(m, "globalDefault", place, probs)
    pp = get_str(m, "preemptionPolicy", place, probs) or PREEMPT_LOWER_PRIORITY
    if pp not in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
        probs.add(f"{place}.preemptionPolicy", f"{_q(pp)} is not PreemptLowerPriority or Never")
    if name and v is not None:
        validate_priority_class_value(name, v, gd, place, probs)
    if len(probs.items) != n_before:
        return None
    return PriorityClass(name, v, gd, pp, m)


@dataclass
class PodDisruptionBudget:
    name: str
    namespace: str
    selector: LabelSelector | None
    min_available: Any = None     # int or "NN%"
    max_unavailable: Any = None
    fixed_disruptions_allowed: int | None = None   # status.disruptionsAllowed when given
    disrupted_pods: frozenset = frozenset()
    disruptions_allowed: int = 0  # recomputed as the disruption controller would
    manifest: dict = field(default_factory=dict)

    @property
    def key(self):
        return f"{self.namespace}/{self.name}"


def _int_or_percent(v, place, probs):
    if v is None:
        return None
    if isinstance(v, bool):
        probs.add(place, f"{_q(v)} is not an integer or a percentage")
        return None
    if isinstance(v, int):
        if v < 0:
            probs.add(place, f"{v} must not be negative")
            return None
        return v
    if isinstance(v, str):
        if re.fullmatch(r"[0-9]+%", v):
            return v
        if re.fullmatch(r"[0-9]+", v):
            return int(v)
    probs.add(place, f"{_q(v)} is not an integer or a percentage")
    return None


def pdb_from_manifest(m, place, probs) -> PodDisruptionBudget | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PodDisruptionBudget manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    name = get_str(md, "name", f"{place}.metadata", probs)
    if not name:
        probs.add(f"{place}.metadata.name", "is required")
    ns = get_str(md, "namespace", f"{place}.metadata", probs) or "default"
    sel = parse_label_selector(spec.get("selector"), f"{place}.spec.selector", probs)
    mina = _int_or_percent(spec.get("minAvailable"), f"{place}.spec.minAvailable", probs)
    maxu = _int_or_percent(spec.get("maxUnavailable"), f"{place}.spec.maxUnavailable", probs)
    if mina is not None and maxu is not None:
        probs.add(f"{place}.spec", "minAvailable and maxUnavailable cannot both be set")
    fixed = get_int(status, "disruptionsAllowed", f"{place}.status", probs, default=None, minimum=0)
    disrupted = frozenset(str(k) for k in get_map(status, "disruptedPods", f"{place}.status", probs))
    if len(probs.items) != n_before:
        return None
    return PodDisruptionBudget(name, ns, sel, mina, maxu, fixed, disrupted,
                               fixed if fixed is not None else 0, m)


# ---------------------------------------------------------------------------------------------
# Volumes: pod volumes, PersistentVolume, PersistentVolumeClaim (core/v1), StorageClass and
# CSINode (storage.k8s.io/v1), the fields the v1.28 volume plugins read.

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"          # volume.AnnBindCompleted
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"  # volume.AnnBoundByController
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"          # volume.AnnSelectedNode
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"     # v1.BetaStorageClassAnnotation
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"  # v1.MigratedPluginsAnnotationKey
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
VOLUME_MODES = ("Filesystem", "Block")
BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
PV_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")
PVC_PHASES = ("Pending", "Bound", "Lost")
# The in-tree volume sources VolumeRestrictions compares (needsRestrictionsCheck), with the
# fields it reads, and the in-tree plugin and CSI driver each migrates to (csi-translation-lib).
IN_TREE_SOURCES = {
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "pdName"),
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "volumeID"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
}
RESTRICTED_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
# Every other kind of pod volume is accepted and kept (no volume plugin reads it).
OTHER_VOLUME_SOURCES = ("emptyDir", "hostPath", "configMap", "secret", "projected", "downwardAPI", "nfs",
                        "csi", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gitRepo",
                        "glusterfs", "photonPersistentDisk", "portworxVolume", "quobyte", "scaleIO",
                        "storageos", "vsphereVolume", "image")


@dataclass(frozen=True)
class Volume:
    """v1.Volume, the parts the volume plugins read.  ``kind`` is the source's field name
    (``persistentVolumeClaim``, ``ephemeral``, ``gcePersistentDisk``, ...); ``claim_name`` is
    the claim of a persistentVolumeClaim source; ``source`` the source mapping as written."""
    name: str
    kind: str
    claim_name: str = ""
    read_only: bool = False
    source: Any = None

    def get(self, key, default=""):
        s = self.source if isinstance(self.source, dict) else {}
        v = s.get(key, default)
        return default if v is None else v


def parse_pod_volumes(spec: dict, sp: str, probs: Problems) -> tuple:
    out, names = [], set()
    for i, v in enumerate(get_list(spec, "volumes", sp, probs)):
        p = f"{sp}.volumes[{i}]"
        if not isinstance(v, dict):
            probs.add(p, f"{_q(v)} is not a volume")
            continue
        name = get_str(v, "name", p, probs)
        if not name:
            probs.add(f"{p}.name", "is required")
            continue
        if name in names:
            probs.add(f"{p}.name", f"{_q(name)} is used by another volume of the pod")
            continue
        names.add(name)
        kinds = [k for k in v if k != "name"]
        known = ("persistentVolumeClaim", "ephemeral", "iscsi", "azureDisk") + RESTRICTED_SOURCES + OTHER_VOLUME_SOURCES
        unknown = [k for k in kinds if k not in known]
        if unknown:
            probs.add(f"{p}.{unknown[0]}", "is not a volume source the engine knows")
            continue
        if len(kinds) != 1:
            probs.add(p, "must have exactly one volume source (persistentVolumeClaim, ephemeral, emptyDir, ...)")
            continue
        kind = kinds[0]
        src = v[kind]
        if src is None:
            src = {}
        if not isinstance(src, dict):
            probs.add(f"{p}.{kind}", f"{_q(src)} is not a mapping")
            continue
        sp_ = f"{p}.{kind}"
        ro = get_bool(src, "readOnly", sp_, probs)
        claim = ""
        if kind == "persistentVolumeClaim":
            claim = get_str(src, "claimName", sp_, probs)
            if not claim:
                probs.add(f"{sp_}.claimName", "is required")
                continue
        elif kind == "ephemeral":
            tmpl = get_map(src, "volumeClaimTemplate", sp_, probs)
            if not tmpl:
                probs.add(f"{sp_}.volumeClaimTemplate", "is required")
                continue
        elif kind == "gcePersistentDisk" and not get_str(src, "pdName", sp_, probs):
            probs.add(f"{sp_}.pdName", "is required")
            continue
        elif kind == "awsElasticBlockStore" and not get_str(src, "volumeID", sp_, probs):
            probs.add(f"{sp_}.volumeID", "is required")
            continue
        elif kind == "iscsi" and not get_str(src, "iqn", sp_, probs):
            probs.add(f"{sp_}.iqn", "is required")
            continue
        elif kind == "rbd":
            if not get_str(src, "image", sp_, probs):
                probs.add(f"{sp_}.image", "is required")
                continue
            mons = get_list(src, "monitors", sp_, probs)
            if not mons or not all(isinstance(m, str) for m in mons):
                probs.add(f"{sp_}.monitors", "must be a non-empty list of strings")
                continue
        out.append(Volume(name, kind, claim or "", ro, src))
    return tuple(out)


def _access_modes(d, place, probs) -> tuple:
    out = []
    for i, m in enumerate(get_list(d, "accessModes", place, probs)):
        if m not in ACCESS_MODES:
            probs.add(f"{place}.accessModes[{i}]", f"{_q(m)} is not one of {', '.join(ACCESS_MODES)}")
            continue
        out.append(m)
    return tuple(out)


def _storage(rl: dict, place, probs, required=False):
    """The ``storage`` quantity of a ResourceList, in bytes (None if absent)."""
    q = resource_list(rl, place, probs)
    if "storage" not in q:
        if required and "storage" not in (rl or {}):
            probs.add(f"{place}.storage", "is required")
        return None
    return value(q["storage"])


def _meta(m, kind, place, probs, namespaced):
    md = get_map(m, "metadata", place, probs)
    mp = f"{place}.metadata"
    name = get_str(md, "name", mp, probs)
    if not name:
        probs.add(f"{mp}.name", "is required")
    elif not _NAME_RE.match(name) or len(name) > 253:
        probs.add(f"{mp}.name", f"{_q(name)} is not a valid name (lower-case letters, digits, '-' and '.')")
    ns = (get_str(md, "namespace", mp, probs) or "default") if namespaced else ""
    labels = string_map(md, "labels", mp, probs)
    ann = string_map(md, "annotations", mp, probs)
    deleting = md.get("deletionTimestamp") is not None
    return name, ns, labels, ann, deleting, md


@dataclass
class PersistentVolume:
    name: str
    capacity: int | None = None                # spec.capacity.storage in bytes
    access_modes: tuple = ()
    storage_class_name: str = ""
    volume_mode: str = "Filesystem"
    claim_ref: tuple | None = None             # (namespace, name, uid)
    node_affinity: NodeSelector | None = None  # spec.nodeAffinity.required
    csi: tuple | None = None                   # (driver, volumeHandle)
    in_tree: tuple | None = None               # (source field, {source}) of a migratable source
    phase: str = "Available"
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    deleting: bool = False
    manifest: dict = field(default_factory=dict)
    resource_version: int = 0

    namespace = ""

    def copy(self, **changes) -> "PersistentVolume":
        n = copy.copy(self)
        for k, v in changes.items():
            setattr(n, k, v)
        return n


def pv_from_manifest(m, place, probs) -> PersistentVolume | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PersistentVolume manifest")
        return None
    n_before = len(probs.items)
    name, _, labels, ann, deleting, _md = _meta(m, "PersistentVolume", place, probs, False)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    sp, stp = f"{place}.spec", f"{place}.status"
    cap = _storage(spec.get("capacity"), f"{sp}.capacity", probs, required=True)
    modes = _access_modes(spec, sp, probs)
    scn = get_str(spec, "storageClassName", sp, probs) or ann.get(ANN_STORAGE_CLASS, "")
    vm = get_str(spec, "volumeMode", sp, probs) or "Filesystem"
    if vm not in VOLUME_MODES:
        probs.add(f"{sp}.volumeMode", f"{_q(vm)} is not Filesystem or Block")
    claim_ref = None
    cr = spec.get("claimRef")
    if cr is not None:
        if not isinstance(cr, dict):
            probs.add(f"{sp}.claimRef", f"{_q(cr)} is not an object reference")
        else:
            crn = get_str(cr, "name", f"{sp}.claimRef", probs)
            if not crn:
                probs.add(f"{sp}.claimRef.name", "is required")
            claim_ref = (get_str(cr, "namespace", f"{sp}.claimRef", probs) or "default", crn or "",
                         get_str(cr, "uid", f"{sp}.claimRef", probs) or "")
    na = None
    na_raw = get_map(spec, "nodeAffinity", sp, probs)
    if na_raw.get("required") is not None:
        rp = f"{sp}.nodeAffinity.required"
        req = na_raw["required"]
        if not isinstance(req, dict):
            probs.add(rp, f"{_q(req)} is not a node selector")
        else:
            terms = get_list(req, "nodeSelectorTerms", rp, probs)
            na = NodeSelector(tuple(parse_node_selector_term(t, f"{rp}.nodeSelectorTerms[{i}]", probs)
                                    for i, t in enumerate(terms)))
    csi = None
    if spec.get("csi") is not None:
        c = get_map(spec, "csi", sp, probs)
        drv = get_str(c, "driver", f"{sp}.csi", probs)
        vh = get_str(c, "volumeHandle", f"{sp}.csi", probs)
        if not drv:
            probs.add(f"{sp}.csi.driver", "is required")
        if not vh:
            probs.add(f"{sp}.csi.volumeHandle", "is required")
        csi = (drv or "", vh or "")
    in_tree = None
    for src in IN_TREE_SOURCES:
        if spec.get(src) is not None:
            s = get_map(spec, src, sp, probs)
            in_tree = (src, s)
    default_phase = "Bound" if claim_ref is not None else "Available"
    phase = get_str(status, "phase", stp, probs) or default_phase
    if phase not in PV_PHASES:
        probs.add(f"{stp}.phase", f"{_q(phase)} is not one of {', '.join(PV_PHASES)}")
    if len(probs.items) != n_before:
        return None
    return PersistentVolume(name, cap, modes, scn, vm, claim_ref, na, csi, in_tree, phase, labels, ann,
                            deleting, m)


@dataclass
class PersistentVolumeClaim:
    name: str
    namespace: str = "default"
    uid: str = ""
    storage_class_name: str | None = None     # spec.storageClassName (None: not set)
    access_modes: tuple = ()
    request: int = 0                          # spec.resources.requests.storage in bytes
    volume_name: str = ""
    volume_mode: str = "Filesystem"
    selector: LabelSelector | None = None
    phase: str = "Pending"
    annotations: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    owners: tuple = ()                        # ((kind, name, uid, controller), ...)
    deleting: bool = False
    manifest: dict = field(default_factory=dict)
    resource_version: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def class_name(self) -> str:
        """storagehelpers.GetPersistentVolumeClaimClass: the beta annotation first."""
        if ANN_STORAGE_CLASS in self.annotations:
            return self.annotations[ANN_STORAGE_CLASS]
        return self.storage_class_name or ""

    def copy(self, **changes) -> "PersistentVolumeClaim":
        n = copy.copy(self)
        for k, v in changes.items():
            setattr(n, k, v)
        return n


def pvc_from_manifest(m, place, probs) -> PersistentVolumeClaim | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PersistentVolumeClaim manifest")
        return None
    n_before = len(probs.items)
    name, ns, labels, ann, deleting, md = _meta(m, "PersistentVolumeClaim", place, probs, True)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    sp, stp = f"{place}.spec", f"{place}.status"
    scn = get_str(spec, "storageClassName", sp, probs, default=None)
    modes = _access_modes(spec, sp, probs)
    res = get_map(spec, "resources", sp, probs)
    req = _storage(res.get("requests"), f"{sp}.resources.requests", probs) or 0
    vn = get_str(spec, "volumeName", sp, probs) or ""
    vm = get_str(spec, "volumeMode", sp, probs) or "Filesystem"
    if vm not in VOLUME_MODES:
        probs.add(f"{sp}.volumeMode", f"{_q(vm)} is not Filesystem or Block")
    sel = parse_label_selector(spec.get("selector"), f"{sp}.selector", probs)
    phase = get_str(status, "phase", stp, probs) or "Pending"
    if phase not in PVC_PHASES:
        probs.add(f"{stp}.phase", f"{_q(phase)} is not one of {', '.join(PVC_PHASES)}")
    owners = []
    for i, o in enumerate(get_list(md, "ownerReferences", f"{place}.metadata", probs)):
        if isinstance(o, dict):
            owners.append((str(o.get("kind", "")), str(o.get("name", "")), str(o.get("uid", "")),
                           o.get("controller") is True))
    if len(probs.items) != n_before:
        return None
    return PersistentVolumeClaim(name, ns, str(md.get("uid") or ""), scn, modes, req, vn, vm, sel, phase, ann,
                                 labels, tuple(owners), deleting, m)


@dataclass
class StorageClass:
    name: str
    provisioner: str = ""
    volume_binding_mode: str = BINDING_IMMEDIATE
    allowed_topologies: tuple = ()    # ((key, (values...)), ...) per term
    manifest: dict = field(default_factory=dict)

    namespace = ""


def storage_class_from_manifest(m, place, probs) -> StorageClass | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a StorageClass manifest")
        return None
    n_before = len(probs.items)
    name, _, _l, _a, _d, _md = _meta(m, "StorageClass", place, probs, False)
    prov = get_str(m, "provisioner", place, probs)
    if not prov:
        probs.add(f"{place}.provisioner", "is required")
    mode = get_str(m, "volumeBindingMode", place, probs) or BINDING_IMMEDIATE
    if mode not in (BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER):
        probs.add(f"{place}.volumeBindingMode", f"{_q(mode)} is not Immediate or WaitForFirstConsumer")
    terms = []
    for i, t in enumerate(get_list(m, "allowedTopologies", place, probs)):
        tp = f"{place}.allowedTopologies[{i}]"
        if not isinstance(t, dict):
            probs.add(tp, f"{_q(t)} is not a topology selector term")
            continue
        exprs = []
        for j, e in enumerate(get_list(t, "matchLabelExpressions", tp, probs)):
            ep = f"{tp}.matchLabelExpressions[{j}]"
            if not isinstance(e, dict):
                probs.add(ep, f"{_q(e)} is not a mapping (key, values)")
                continue
            key = get_str(e, "key", ep, probs)
            vals = get_list(e, "values", ep, probs)
            if not key:
                probs.add(f"{ep}.key", "is required")
                continue
            if not vals or not all(isinstance(x, str) for x in vals):
                probs.add(f"{ep}.values", "must be a non-empty list of strings")
                continue
            exprs.append((key, tuple(vals)))
        terms.append(tuple(exprs))
    if len(probs.items) != n_before:
        return None
    return StorageClass(name, prov, mode, tuple(terms), m)


def match_topology_selector_terms(terms, labels: dict) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms match everything; else any term whose
    every expression's key is a label with one of its values."""
    if not terms:
        return True
    for term in terms:
        if len(term) == 0:
            continue
        if all(k in labels and labels[k] in vals for k, vals in term):
            return True
    return False


@dataclass
class CSINode:
    name: str
    drivers: tuple = ()      # ((name, allocatable count or None, (topologyKeys...)), ...)
    annotations: dict = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

    namespace = ""

    def migrated_plugins(self) -> set:
        v = self.annotations.get(ANN_MIGRATED_PLUGINS, "")
        return {p.strip() for p in v.split(",") if p.strip()}


def csi_node_from_manifest(m, place, probs) -> CSINode | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a CSINode manifest")
        return None
    n_before = len(probs.items)
    name, _, _l, ann, _d, _md = _meta(m, "CSINode", place, probs, False)
    spec = get_map(m, "spec", place, probs)
    sp = f"{place}.spec"
    drivers, seen = [], set()
    for i, d in enumerate(get_list(spec, "drivers", sp, probs)):
        dp = f"{sp}.drivers[{i}]"
        if not isinstance(d, dict):
            probs.add(dp, f"{_q(d)} is not a driver")
            continue
        dn = get_str(d, "name", dp, probs)
        if not dn:
            probs.add(f"{dp}.name", "is required")
            continue
        if dn in seen:
            probs.add(f"{dp}.name", f"{_q(dn)} is listed twice")
            continue
        seen.add(dn)
        alloc = get_map(d, "allocatable", dp, probs)
        count = get_int(alloc, "count", f"{dp}.allocatable", probs, default=None, minimum=0)
        keys = tuple(str(k) for k in get_list(d, "topologyKeys", dp, probs))
        drivers.append((dn, count, keys))
    if len(probs.items) != n_before:
        return None
    return CSINode(name, tuple(drivers), ann, m)


# ---------------------------------------------------------------------- custom resources

def _is_builtin_group(group: str) -> bool:
    """API groups of Kubernetes itself (the core group "", ``apps``, ``*.k8s.io``, ...):
    the engine models the kinds of those it reads and refuses the others."""
    return "." not in group or group == "k8s.io" or group.endswith(".k8s.io") or group.endswith(".kubernetes.io")


def guess_plural(kind: str) -> str:
    """The resource name of a kind, as apimachinery's ``meta.UnsafeGuessKindToResource``
    guesses it: lower case, "s" -> "ses", "y" -> "ies", else + "s" (PodGroup -> podgroups)."""
    singular = kind.lower()
    if not singular:
        return singular
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


class CustomObject:
    """An object of a kind the engine does not model (a custom resource such as a PodGroup of
    ``scheduling.x-k8s.io/v1alpha1``), kept as its manifest.  Plugins read it through the
    handle (``get_object``, ``list_objects``) and may register for its events."""
    __slots__ = ("api_version", "kind", "namespace", "name", "manifest", "resource_version")

    def __init__(self, api_version, kind, namespace, name, manifest, resource_version=0):
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.manifest = manifest
        self.resource_version = resource_version

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def type_key(self) -> str:
        """``apiVersion/kind``, e.g. ``scheduling.x-k8s.io/v1alpha1/PodGroup``."""
        return f"{self.api_version}/{self.kind}"

    @property
    def gvk(self) -> str:
        """framework.GVK of its events: ``<plural>.<version>.<group>``."""
        group, _, version = self.api_version.rpartition("/")
        return f"{guess_plural(self.kind)}.{version}.{group}"


def is_custom_api_version(api) -> bool:
    """An apiVersion ``group/version`` whose group is not one of Kubernetes' own."""
    if not isinstance(api, str) or api.count("/") != 1:
        return False
    group, version = api.split("/")
    return bool(group) and bool(version) and not _is_builtin_group(group)


def custom_object_from_manifest(m, place, probs, namespaced=True):
    """A CustomObject from a manifest with a custom apiVersion: only the common fields are
    checked (apiVersion, kind, metadata.name, metadata.namespace)."""
    import copy
    api = m.get("apiVersion")
    kind = m.get("kind")
    ok = True
    if not isinstance(kind, str) or not re.match(r"^[A-Z][A-Za-z0-9]*$", kind or ""):
        probs.add(f"{place}.kind", f"{_q(kind)} is not a kind name (e.g. PodGroup)")
        ok = False
    _g, _, version = api.partition("/")
    if not re.match(r"^v[0-9]+((alpha|beta)[0-9]+)?$", version):
        probs.add(f"{place}.apiVersion", f"{_q(api)} does not end with a version such as v1 or v1alpha1")
        ok = False
    md = get_map(m, "metadata", place, probs)
    name = get_str(md, "name", f"{place}.metadata", probs) if md is not None else None
    if not name:
        probs.add(f"{place}.metadata.name", "is required")
        ok = False
    elif not _NAME_RE.match(name) or len(name) > 253:
        probs.add(f"{place}.metadata.name", f"{_q(name)} is not a valid name (lower case letters, digits, '-' and '.')")
        ok = False
    ns = get_str(md, "namespace", f"{place}.metadata", probs, default="default") if md is not None else "default"
    if ns and (not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", ns) or len(ns) > 63):
        probs.add(f"{place}.metadata.namespace", f"{_q(ns)} is not a valid namespace name")
        ok = False
    if not ok:
        return None
    return CustomObject(api, kind, ns or "default", name, copy.deepcopy(m))
