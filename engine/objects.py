"""The Kubernetes objects the engine understands, parsed from manifests.

Each ``*_from_manifest`` function validates as it parses and reports every problem it finds
to a ``Problems`` collector under the manifest's place in the file
(``objects[3].spec.containers[0].resources.requests.cpu: "12x" is not a quantity``), so a
scenario's mistakes are reported all at once.  Objects keep their manifest for display, and
their parsed fields for the scheduler's hot paths.  The fields are read with engine/fields.py:
its typed getters, and ``Record`` tables of fields (key, type, default, required, rule) for
the mappings whose fields are plain (``_TAINT``, ``_CONTAINER_PORT``, ``_PVC_SPEC``, ...); what a
field's logic makes special (resource sums, affinity namespaces, volume sources, ...) is
written out.

Upstream shapes: ``k8s.io/api/core/v1`` (Pod, Node), ``scheduling/v1`` (PriorityClass),
``policy/v1`` (PodDisruptionBudget).  Resource arithmetic follows
``pkg/api/v1/resource.PodRequests`` and ``framework.calculateResource`` (v1.28).
"""
from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .fields import (Bool, Field, Int, Int32, List, Map, Parsed, Problems, Record, Str, StringMap, _q, each,
                     either, get_bool, get_int, get_list, get_map, get_str, one_of, parse_time, string_map)
# defined here before engine/fields.py; engine.scenario, engine.config, the importers and plugins
# import Problems, _q and the getters from this module
from .fields import INT32_MAX, INT32_MIN, _at, get_int32  # noqa: F401
from .labels import (is_valid_label_value, LabelSelector, NodeSelector, NodeSelectorTerm, Requirement, Taint,
                     Toleration)
from .quantity import MAX_QUANTITY, milli_value, parse_quantity, value

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_MILLI_CPU_REQUEST = 100          # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"

# pkg/apis/scheduling (v1.28): the priority range rules of PriorityClass validation and the
# Priority admission plugin (the int32 range, INT32_MIN..INT32_MAX, is engine.fields's).
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


def _valid_name(name: str) -> str | None:
    """ValidateObjectMeta's name rule (a DNS subdomain), as a field rule."""
    if not _NAME_RE.match(name) or len(name) > 253:
        return f"{_q(name)} is not a valid name (lower-case letters, digits, '-' and '.')"
    return None


# metav1.ObjectMeta: the fields read of a namespaced object and of a cluster-scoped one
_NAME = Str("name", required=True, rule=_valid_name)
_NAMESPACED_META = Record(_NAME, Str("namespace", "default"), StringMap("labels"), StringMap("annotations"))
_CLUSTER_META = Record(_NAME, StringMap("labels"), StringMap("annotations"))
# a name that is only required; a list item whose missing name ends it (volumes, CSI drivers)
_REQUIRED_NAME = Str("name", required=True)
_NAMED = Record(_REQUIRED_NAME, stop=True)


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


def parse_node_selector(v, place, probs) -> NodeSelector | None:
    """v1.NodeSelector (None when absent): its terms, each a NodeSelectorTerm."""
    if v is None:
        return None
    if not isinstance(v, dict):
        probs.add(place, f"{_q(v)} is not a node selector")
        return None
    terms = get_list(v, "nodeSelectorTerms", place, probs)
    return NodeSelector(tuple(parse_node_selector_term(t, f"{place}.nodeSelectorTerms[{i}]", probs)
                              for i, t in enumerate(terms)))


# ---------------------------------------------------------------------------------------------
# Resources

# Quantity texts repeat across a scenario's objects ("100m", "500Mi"): each short one is parsed
# once (a Decimal is immutable; an invalid one raises each time, as it is not kept).
_parse_quantity_text = functools.lru_cache(maxsize=4096)(parse_quantity)


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
            d = _parse_quantity_text(q) if type(q) is str and len(q) <= 64 else parse_quantity(q)
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


LABEL_METADATA_NAME = "kubernetes.io/metadata.name"      # v1.LabelMetadataName


def namespace_labels(ns: str) -> dict:
    """The labels of an implicit namespace (one no Namespace object or action of the scenario
    names): only its well-known name label, which the API server sets on every namespace."""
    return {LABEL_METADATA_NAME: ns}


@dataclass
class Namespace:
    """A v1 Namespace: its name and labels. ``labels`` holds ``kubernetes.io/metadata.name:
    <name>`` whatever the manifest says (upstream ``SetDefaults_Namespace`` and the namespace
    strategy's ``PrepareForCreate``/``PrepareForUpdate`` set it)."""
    name: str
    labels: dict
    manifest: dict = field(default_factory=dict)

    namespace = ""


class NamespaceLister:
    """The namespace lister InterPodAffinity and the scheduling queue read
    (``listersv1.NamespaceLister`` of the shared informer factory, upstream v1.28).

    ``namespaces``: name -> Namespace for the namespaces that exist, and name -> None for a
    namespace the scenario names (in a Namespace object or action) that does not exist at
    the moment (not created yet, or deleted: the lister no longer lists it). A namespace
    the scenario never names is implicit: it exists, labelled only with its name
    (``namespace_labels``), so scenarios without Namespace objects see what they always did.
    Pods of a namespace that does not exist stay (the namespace controller, which would
    delete them upstream, is not modelled)."""
    __slots__ = ("namespaces",)

    def __init__(self, namespaces: dict | None = None):
        self.namespaces = namespaces if namespaces is not None else {}

    def labels(self, ns: str) -> dict | None:
        """``nsLister.Get(ns)``'s labels, or None when the namespace does not exist."""
        if ns not in self.namespaces:
            return namespace_labels(ns)
        o = self.namespaces[ns]
        return o.labels if o is not None else None

    def labels_snapshot(self, ns: str) -> dict:
        """interpodaffinity ``GetNamespaceLabelsSnapshot``: the namespace's labels, or an
        empty set when it does not exist (upstream logs the Get error and returns nil)."""
        got = self.labels(ns)
        return dict(got) if got is not None else {}

    def selects(self, selector, ns: str) -> bool:
        """Whether ``ns`` is in what ``mergeAffinityTermNamespacesIfNotEmpty`` unrolls a
        namespaceSelector into: every namespace for an empty selector (kept as
        ``labels.Everything()``, matched without labels), else the namespaces
        ``nsLister.List(selector)`` returns (existing ones whose labels match)."""
        if selector.empty:
            return True
        got = self.labels(ns)
        return got is not None and selector.matches(got)


# the lister of a scenario that names no namespace (and of plugins run without an engine)
IMPLICIT_NAMESPACES = NamespaceLister()
_NAMESPACE_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _valid_namespace_name(name: str) -> str | None:
    """ValidateNamespaceName: a DNS label (at most 63 characters)."""
    if not _NAMESPACE_NAME_RE.match(name) or len(name) > 63:
        return f"{_q(name)} is not a valid namespace name (a DNS label: lower-case letters, digits and '-')"
    return None


_NAMESPACE_META = Record(Str("name", required=True, rule=_valid_namespace_name), StringMap("labels"))


def namespace_from_manifest(m, place, probs) -> Namespace | None:
    """A Namespace of a scenario: ``metadata.name`` and ``metadata.labels`` are read (its spec
    and status are not read by the scheduler)."""
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a Namespace manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    name, labels = _NAMESPACE_META.read(md, f"{place}.metadata", probs)
    if len(probs.items) != n_before:
        return None
    return Namespace(name, {**labels, LABEL_METADATA_NAME: name}, m)


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


# v1.WeightedPodAffinityTerm (its podAffinityTerm read by _POD_AFFINITY_TERM) and v1.PodAffinityTerm
_WEIGHTED_POD_AFFINITY_TERM = Record(Int("weight", minimum=1, maximum=100, required="present"), Map("podAffinityTerm"))
_POD_AFFINITY_TERM = Record(Parsed("labelSelector", parse_label_selector), List("namespaces"),
                            Parsed("namespaceSelector", parse_label_selector), Str("topologyKey", required=True))


def _affinity_terms(d, key, place, probs, pod_ns, weighted=False):
    """The (weighted) pod affinity terms of the list ``d[key]``, as framework.AffinityTerm
    (namespaces defaulted to the pod's own when neither they nor a namespaceSelector are set)."""
    out = []
    for p, t in each(d, key, place, probs, "a mapping"):
        weight = None
        if weighted:
            weight, t = _WEIGHTED_POD_AFFINITY_TERM.read(t, p, probs)
            p = f"{p}.podAffinityTerm"
        sel, ns_list, ns_sel, tk = _POD_AFFINITY_TERM.read(t, p, probs)
        namespaces = frozenset(str(n) for n in ns_list)
        if not namespaces and ns_sel is None:
            namespaces = frozenset([pod_ns])
        term = AffinityTerm(namespaces, sel, tk, ns_sel)
        out.append(WeightedAffinityTerm(term, weight or 1) if weighted else term)
    return tuple(out)


# v1.ContainerPort (a hostPort of 0 is none)
_CONTAINER_PORT = Record(Int("hostPort", 0, minimum=0, maximum=65535),
                         Int("containerPort", 0, minimum=0, maximum=65535),
                         Str("protocol", "TCP", rule=one_of("TCP", "UDP", "SCTP")), Str("hostIP"))
# The scheduling fields of v1.PodSpec. spec.priority is any int32: the Priority admission plugin
# sets it from the class (system classes give values above HighestUserDefinablePriority); the
# scheduler never validates it.
_POD_SPEC = Record(Int32("priority", "a pod's priority is an int32"), Str("priorityClassName"),
                   Str("preemptionPolicy", None, rule=either(PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)),
                   Str("schedulerName", DEFAULT_SCHEDULER_NAME), Str("nodeName"), StringMap("nodeSelector"))
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# v1.Toleration: its value (empty for Exists) is checked, and its key read, after these
_TOLERATION = Record(Str("operator", "Equal", rule=either("Equal", "Exists")),
                     Str("effect", rule=one_of("", *_TAINT_EFFECTS, says="NoSchedule, PreferNoSchedule or NoExecute")),
                     stop=True)
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
# v1.TopologySpreadConstraint, to minDomains; its two policies are read, then checked
_TOPOLOGY_SPREAD_CONSTRAINT = Record(Int("maxSkew", minimum=1, required="present"), Str("topologyKey", required=True),
                                     Str("whenUnsatisfiable", rule=either(*_WHEN_UNSATISFIABLE)),
                                     Int("minDomains", minimum=1))
_SPREAD_POLICIES = Record(Str("nodeAffinityPolicy", "Honor", rule=either("Honor", "Ignore")),
                          Str("nodeTaintsPolicy", "Ignore", rule=either("Honor", "Ignore")), check_after=True)
_RDIE = "requiredDuringSchedulingIgnoredDuringExecution"
_PDIE = "preferredDuringSchedulingIgnoredDuringExecution"
_NO_AFFINITY = (None, (), (), (), (), ())


def _affinity(aff: dict, ap: str, probs: Problems, pod_ns: str) -> tuple:
    """v1.Affinity: the required node selector, the preferred node selector terms ((weight,
    term), ...), and the required and preferred pod affinity and anti-affinity terms."""
    na = get_map(aff, "nodeAffinity", ap, probs)
    nap = f"{ap}.nodeAffinity"
    required_na = parse_node_selector(na.get(_RDIE), f"{nap}.{_RDIE}", probs)
    preferred_na = []
    for p, t in each(na, _PDIE, nap, probs, "a mapping"):
        w = get_int(t, "weight", p, probs, default=None, minimum=1, maximum=100)
        if w is None:
            if "weight" not in t:
                probs.add(f"{p}.weight", "is required")
            continue
        preferred_na.append((w, parse_node_selector_term(t.get("preference") or {}, f"{p}.preference", probs)))
    pa = get_map(aff, "podAffinity", ap, probs)
    paa = get_map(aff, "podAntiAffinity", ap, probs)
    return (required_na, tuple(preferred_na),
            _affinity_terms(pa, _RDIE, f"{ap}.podAffinity", probs, pod_ns),
            _affinity_terms(paa, _RDIE, f"{ap}.podAntiAffinity", probs, pod_ns),
            _affinity_terms(pa, _PDIE, f"{ap}.podAffinity", probs, pod_ns, True),
            _affinity_terms(paa, _PDIE, f"{ap}.podAntiAffinity", probs, pod_ns, True))


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
    name, ns, labels, annotations = _NAMESPACED_META.read(md, mp, probs)

    # a pod without containers is tolerated: it requests nothing
    containers = get_list(spec, "containers", sp, probs)
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
                for _, _, (hp, _, proto, ip) in _CONTAINER_PORT.each(c, "ports", cp, probs, "a port"):
                    if hp > 0:
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

    spec_priority, pcn, pp_, scheduler_name, node_name, node_selector = _POD_SPEC.read(spec, sp, probs)

    aff = get_map(spec, "affinity", sp, probs)
    required_na, preferred_na, req_aff, req_anti, pref_aff, pref_anti = (
        _affinity(aff, f"{sp}.affinity", probs, ns) if aff else _NO_AFFINITY)

    tolerations = []
    for p, t, (op, eff) in _TOLERATION.each(spec, "tolerations", sp, probs, "a toleration"):
        val = t.get("value")
        val = "" if val is None else str(val)
        if op == "Exists" and val:
            probs.add(f"{p}.value", "must be empty when operator is Exists")
            continue
        tolerations.append(Toleration(get_str(t, "key", p, probs) or "", op, val, eff))

    tscs = []
    for p, c, (ms, tk, wu, min_domains) in _TOPOLOGY_SPREAD_CONSTRAINT.each(
            spec, "topologySpreadConstraints", sp, probs, "a mapping"):
        if min_domains is not None and wu != "DoNotSchedule":
            probs.add(f"{p}.minDomains", "may only be set with whenUnsatisfiable: DoNotSchedule")
        nap_, ntp_ = _SPREAD_POLICIES.read(c, p, probs)
        mlk = tuple(str(k) for k in get_list(c, "matchLabelKeys", p, probs))
        sel = parse_label_selector(c.get("labelSelector"), f"{p}.labelSelector", probs)
        if ms and tk and wu in _WHEN_UNSATISFIABLE:
            tscs.append(TopologySpreadConstraint(ms, tk, wu, sel, min_domains, nap_, ntp_, mlk))

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
        priority=spec_priority or 0, priority_class_name=pcn, spec_priority=spec_priority,
        preemption_policy=pp_, scheduler_name=scheduler_name, node_name=node_name,
        node_selector=node_selector, required_node_affinity=required_na,
        preferred_node_affinity=preferred_na, required_affinity_terms=req_aff,
        required_anti_affinity_terms=req_anti, preferred_affinity_terms=pref_aff,
        preferred_anti_affinity_terms=pref_anti, tolerations=tuple(tolerations),
        topology_spread_constraints=tuple(tscs), requests=total, non0_cpu=non0_cpu,
        non0_mem=non0_mem, host_ports=tuple(host_ports), images=tuple(images),
        scheduling_gates=tuple(gates), volumes=volumes, termination_grace_period=tgp,
        nominated_node_name=nnn, start_time=start_time, manifest=m)


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


def _valid_node_name(name: str) -> str | None:
    """A Node's name: a DNS subdomain, at most 253 characters (ValidateNodeName)."""
    if not _NAME_RE.match(name):
        return f"{_q(name)} is not a valid name"
    if len(name) > 253:
        return f"{_q(name)} is not a valid name: {len(name)} characters, at most 253"
    return None


_NODE_META = Record(Str("name", required=True, rule=_valid_node_name), StringMap("labels"))
# v1.Taint (key and effect read, then checked; its value is any scalar, as text) and
# v1.ContainerImage
_TAINT = Record(Str("key", required=True), Str("effect", rule=either(*_TAINT_EFFECTS)), check_after=True)
_CONTAINER_IMAGE = Record(Int("sizeBytes", 0, minimum=0), List("names"))


def node_from_manifest(m: Any, place: str, probs: Problems) -> Node | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a Node manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    mp, sp, stp = f"{place}.metadata", f"{place}.spec", f"{place}.status"
    name, labels = _NODE_META.read(md, mp, probs)
    unsched = get_bool(spec, "unschedulable", sp, probs)
    taints = [Taint(key, "" if t.get("value") is None else str(t["value"]), eff)
              for _, t, (key, eff) in _TAINT.each(spec, "taints", sp, probs, "a taint")
              if key and eff in _TAINT_EFFECTS]
    alloc_raw = status.get("allocatable")
    place_alloc = f"{stp}.allocatable"
    if alloc_raw is None:
        alloc_raw = status.get("capacity")
        place_alloc = f"{stp}.capacity"
    alloc = to_resource(resource_list(alloc_raw, place_alloc, probs))
    images = {}
    for _, _, (size, names) in _CONTAINER_IMAGE.each(status, "images", stp, probs, "an image"):
        for nm in names:
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


_PRIORITY_CLASS_META = Record(_REQUIRED_NAME)
_PRIORITY_CLASS = Record(Int32("value", "a PriorityClass's value is an int32", required="present"),
                         Bool("globalDefault"),
                         Str("preemptionPolicy", PREEMPT_LOWER_PRIORITY,
                             rule=either(PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)))


def priority_class_from_manifest(m, place, probs) -> PriorityClass | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PriorityClass manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    name, = _PRIORITY_CLASS_META.read(md, f"{place}.metadata", probs)
    v, gd, pp = _PRIORITY_CLASS.read(m, place, probs)
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


_PDB_META = Record(_REQUIRED_NAME, Str("namespace", "default"))
_PDB_SPEC = Record(Parsed("selector", parse_label_selector), Parsed("minAvailable", _int_or_percent),
                   Parsed("maxUnavailable", _int_or_percent))
_PDB_STATUS = Record(Int("disruptionsAllowed", minimum=0), Map("disruptedPods"))


def pdb_from_manifest(m, place, probs) -> PodDisruptionBudget | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PodDisruptionBudget manifest")
        return None
    n_before = len(probs.items)
    md = get_map(m, "metadata", place, probs)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    name, ns = _PDB_META.read(md, f"{place}.metadata", probs)
    sel, mina, maxu = _PDB_SPEC.read(spec, f"{place}.spec", probs)
    if mina is not None and maxu is not None:
        probs.add(f"{place}.spec", "minAvailable and maxUnavailable cannot both be set")
    fixed, disrupted = _PDB_STATUS.read(status, f"{place}.status", probs)
    disrupted = frozenset(str(k) for k in disrupted)
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


def _non_empty_strings(v) -> str | None:
    """A rule: a non-empty list of strings."""
    return None if v and all(isinstance(x, str) for x in v) else "must be a non-empty list of strings"


_KNOWN_VOLUME_SOURCES = (("persistentVolumeClaim", "ephemeral", "iscsi", "azureDisk") + RESTRICTED_SOURCES
                         + OTHER_VOLUME_SOURCES)
# The fields of the pod volume sources the volume plugins read (readOnly first, then what each
# requires); any other source has only readOnly read.
_VOLUME_SOURCES = {
    "persistentVolumeClaim": Record(Bool("readOnly"), Str("claimName", required=True), stop=True),
    "ephemeral": Record(Bool("readOnly"), Map("volumeClaimTemplate", required=True), stop=True),
    "gcePersistentDisk": Record(Bool("readOnly"), Str("pdName", required=True), stop=True),
    "awsElasticBlockStore": Record(Bool("readOnly"), Str("volumeID", required=True), stop=True),
    "iscsi": Record(Bool("readOnly"), Str("iqn", required=True), stop=True),
    "rbd": Record(Bool("readOnly"), Str("image", required=True), List("monitors", rule=_non_empty_strings), stop=True),
}
_OTHER_VOLUME_SOURCE = Record(Bool("readOnly"))


def parse_pod_volumes(spec: dict, sp: str, probs: Problems) -> tuple:
    out, names = [], set()
    for p, v, (name,) in _NAMED.each(spec, "volumes", sp, probs, "a volume"):
        if name in names:
            probs.add(f"{p}.name", f"{_q(name)} is used by another volume of the pod")
            continue
        names.add(name)
        kinds = [k for k in v if k != "name"]
        unknown = [k for k in kinds if k not in _KNOWN_VOLUME_SOURCES]
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
        values = _VOLUME_SOURCES.get(kind, _OTHER_VOLUME_SOURCE).read(src, f"{p}.{kind}", probs)
        if values is None:
            continue
        claim = values[1] if kind == "persistentVolumeClaim" else ""
        out.append(Volume(name, kind, claim, values[0], src))
    return tuple(out)


def _access_modes(d, key, place, probs) -> tuple:
    out = []
    for i, m in enumerate(get_list(d, key, place, probs)):
        if m not in ACCESS_MODES:
            probs.add(f"{place}.{key}[{i}]", f"{_q(m)} is not one of {', '.join(ACCESS_MODES)}")
            continue
        out.append(m)
    return tuple(out)


def _storage(rl: dict, place, probs, required=False):
    """The ``storage`` quantity of a ResourceList, in bytes (None if absent)."""
    q = resource_list(rl, place, probs)
    if "storage" not in q:
        # a capacity that is not a mapping was reported by resource_list ("is not a resource list")
        if required and isinstance(rl, dict | None) and "storage" not in (rl or {}):
            probs.add(f"{place}.storage", "is required")
        return None
    return value(q["storage"])


def _meta(m, kind, place, probs, namespaced):
    md = get_map(m, "metadata", place, probs)
    mp = f"{place}.metadata"
    if namespaced:
        name, ns, labels, ann = _NAMESPACED_META.read(md, mp, probs)
    else:
        name, labels, ann = _CLUSTER_META.read(md, mp, probs)
        ns = ""
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


_PV_SPEC = Record(Parsed("capacity", functools.partial(_storage, required=True)), Field("accessModes", _access_modes),
                  Str("storageClassName"), Str("volumeMode", "Filesystem", rule=either(*VOLUME_MODES)))
# v1.ObjectReference (a claimRef: namespace, name, uid) and v1.CSIPersistentVolumeSource
_OBJECT_REFERENCE = Record(_REQUIRED_NAME, Str("namespace", "default"), Str("uid"))
_CSI_SOURCE = Record(Str("driver", required=True), Str("volumeHandle", required=True), check_after=True)


def pv_from_manifest(m, place, probs) -> PersistentVolume | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PersistentVolume manifest")
        return None
    n_before = len(probs.items)
    name, _, labels, ann, deleting, _md = _meta(m, "PersistentVolume", place, probs, False)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    sp, stp = f"{place}.spec", f"{place}.status"
    cap, modes, scn, vm = _PV_SPEC.read(spec, sp, probs)
    scn = scn or ann.get(ANN_STORAGE_CLASS, "")
    claim_ref = None
    cr = spec.get("claimRef")
    if cr is not None:
        if not isinstance(cr, dict):
            probs.add(f"{sp}.claimRef", f"{_q(cr)} is not an object reference")
        else:
            crn, crns, cru = _OBJECT_REFERENCE.read(cr, f"{sp}.claimRef", probs)
            claim_ref = (crns, crn, cru)
    na = parse_node_selector(get_map(spec, "nodeAffinity", sp, probs).get("required"),
                             f"{sp}.nodeAffinity.required", probs)
    csi = None
    if spec.get("csi") is not None:
        csi = tuple(_CSI_SOURCE.read(get_map(spec, "csi", sp, probs), f"{sp}.csi", probs))
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


def _requested_storage(d, key, place, probs) -> int:
    """A claim's ``resources.requests.storage`` in bytes (0 if unset)."""
    return _storage(get_map(d, key, place, probs).get("requests"), f"{place}.{key}.requests", probs) or 0


_PVC_SPEC = Record(Str("storageClassName", None), Field("accessModes", _access_modes),
                   Field("resources", _requested_storage), Str("volumeName"),
                   Str("volumeMode", "Filesystem", rule=either(*VOLUME_MODES)),
                   Parsed("selector", parse_label_selector))
_PVC_STATUS = Record(Str("phase", "Pending", rule=one_of(*PVC_PHASES)))


def pvc_from_manifest(m, place, probs) -> PersistentVolumeClaim | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a PersistentVolumeClaim manifest")
        return None
    n_before = len(probs.items)
    name, ns, labels, ann, deleting, md = _meta(m, "PersistentVolumeClaim", place, probs, True)
    spec = get_map(m, "spec", place, probs)
    status = get_map(m, "status", place, probs)
    scn, modes, req, vn, vm, sel = _PVC_SPEC.read(spec, f"{place}.spec", probs)
    phase, = _PVC_STATUS.read(status, f"{place}.status", probs)
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


_STORAGE_CLASS = Record(Str("provisioner", required=True),
                        Str("volumeBindingMode", BINDING_IMMEDIATE,
                            rule=either(BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER)))
# v1.TopologySelectorLabelRequirement: both fields read, then checked; the first wrong one drops it
_TOPOLOGY_SELECTOR_REQUIREMENT = Record(Str("key", required=True), List("values", rule=_non_empty_strings),
                                        stop=True, check_after=True)


def storage_class_from_manifest(m, place, probs) -> StorageClass | None:
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a StorageClass manifest")
        return None
    n_before = len(probs.items)
    name, _, _l, _a, _d, _md = _meta(m, "StorageClass", place, probs, False)
    prov, mode = _STORAGE_CLASS.read(m, place, probs)
    terms = []
    for tp, t in each(m, "allowedTopologies", place, probs, "a topology selector term"):
        terms.append(tuple((key, tuple(vals)) for _, _, (key, vals) in _TOPOLOGY_SELECTOR_REQUIREMENT.each(
            t, "matchLabelExpressions", tp, probs, "a mapping (key, values)")))
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
    for dp, d, (dn,) in _NAMED.each(spec, "drivers", sp, probs, "a driver"):
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
