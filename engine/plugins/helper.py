"""Small helpers shared by the in-tree plugins.

Upstream: ``pkg/scheduler/framework/plugins/helper`` (normalize_score.go, shape_score.go,
taint.go), the resource-name predicates of ``pkg/scheduler/util`` / ``pkg/apis/core/v1/helper``
and a few Go arithmetic rules the plugins rely on (integer division truncates toward zero,
``math.Round`` rounds half away from zero).  Also the argument checking every plugin factory
uses, so a bad ``pluginConfig`` entry is reported as ``pluginConfig[<Plugin>].args.<field>: ...``.
"""
from __future__ import annotations

import math
import re

from ..errors import ConfigError

# ---------------------------------------------------------------------------------------------
# Go arithmetic


def go_div(a: int, b: int) -> int:
    """Go's integer ``a / b``: the quotient truncated toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_round(x: float) -> int:
    """Go's ``math.Round``: half away from zero (Python's ``round`` rounds half to even)."""
    if x >= 0:
        return int(math.floor(x + 0.5))
    return -int(math.floor(-x + 0.5))


def go_list(items) -> str:
    """``fmt.Sprintf("%v", []string{...})``: ``[a b c]``."""
    return "[" + " ".join(items) + "]"


# ---------------------------------------------------------------------------------------------
# Scores


def default_normalize_score(max_priority: int, reverse: bool, scores: list) -> None:
    """helper.DefaultNormalizeScore: scale ``scores`` (NodeScores, non-negative) from
    [0, max(scores)] onto [0, max_priority] in place; with ``reverse`` each result is
    subtracted from ``max_priority``.  When every score is 0 the list is left alone, or set
    to ``max_priority`` throughout if reversed.  Returns None (Success)."""
    max_count = 0
    for s in scores:
        if s.score > max_count:
            max_count = s.score
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return None
    for s in scores:
        v = go_div(max_priority * s.score, max_count)
        if reverse:
            v = max_priority - v
        s.score = v
    return None


def default_normalize_values(max_priority: int, reverse: bool, values: list) -> list:
    """``default_normalize_score`` over plain scores: the normalized scores as a new list
    (the same arithmetic; the framework's shortcut for in-tree plugins, which need no
    NodeScore objects)."""
    max_count = max(values, default=0)
    if max_count <= 0:
        return [max_priority] * len(values) if reverse else list(values)
    if reverse:
        return [max_priority - go_div(max_priority * v, max_count) for v in values]
    return [go_div(max_priority * v, max_count) for v in values]


def build_broken_linear_function(shape):
    """helper.BuildBrokenLinearFunction: ``shape`` is a sequence of (utilization, score)
    points in increasing utilization; the function is the first score left of the first
    point, the last score right of the last one, and linear (Go integer arithmetic) between.
    """
    pts = [(int(u), int(s)) for u, s in shape]

    def f(p: int) -> int:
        for i, (u, s) in enumerate(pts):
            if p <= u:
                if i == 0:
                    return pts[0][1]
                pu, ps = pts[i - 1]
                return ps + go_div((s - ps) * (p - pu), u - pu)
        return pts[-1][1]

    return f


# ---------------------------------------------------------------------------------------------
# Taints


def do_not_schedule_taints_filter(taint) -> bool:
    """helper.DoNotScheduleTaintsFilterFunc: only NoSchedule and NoExecute taints keep a pod
    off a node."""
    return taint.effect == "NoSchedule" or taint.effect == "NoExecute"


# ---------------------------------------------------------------------------------------------
# Resource names

_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_qualified_name(value: str) -> bool:
    """validation.IsQualifiedName: ``[prefix/]name``, the name at most 63 characters of
    alphanumerics, '-', '_' and '.', starting and ending alphanumeric; the prefix a DNS-1123
    subdomain of at most 253 characters."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        return False
    return bool(name) and len(name) <= 63 and bool(_QUALIFIED_NAME_PART.match(name))


def is_prefixed_native_resource(name: str) -> bool:
    """v1helper.IsPrefixedNativeResource: the name contains ``kubernetes.io/``."""
    return "kubernetes.io/" in name


def is_native_resource(name: str) -> bool:
    """v1helper.IsNativeResource: no domain prefix, or a kubernetes.io one."""
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: not native, not ``requests.``-prefixed, and
    ``requests.<name>`` is a qualified name."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith("hugepages-")


def is_attachable_volume_resource_name(name: str) -> bool:
    return name.startswith("attachable-volumes-")


def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended, hugepages, kubernetes.io-prefixed native or
    attachable-volumes resources (everything a framework.Resource keeps in ScalarResources)."""
    return (is_extended_resource_name(name) or is_hugepage_resource_name(name)
            or is_prefixed_native_resource(name) or is_attachable_volume_resource_name(name))


# ---------------------------------------------------------------------------------------------
# Plugin arguments


class ArgsChecker:
    """Collects problems in one plugin's ``pluginConfig`` args and raises them together.

    ``place(field)`` gives ``pluginConfig[<Plugin>].args.<field>``; ``raise_if_any()`` raises
    ConfigError with every problem found.
    """

    def __init__(self, plugin_name: str, args, allowed: tuple):
        self.plugin_name = plugin_name
        self.problems: list = []
        if args is None:
            args = {}
        if not isinstance(args, dict):
            self.add("", f"{args!r} is not a mapping")
            args = {}
        for k in args:
            if k not in allowed:
                self.add("", f"unknown field {k!r} (known: {', '.join(allowed) or 'none'})")
        self.args = args

    def place(self, field: str) -> str:
        base = f"pluginConfig[{self.plugin_name}].args"
        return f"{base}.{field}" if field else base

    def add(self, field: str, message: str) -> None:
        self.problems.append(f"{self.place(field)}: {message}")

    def raise_if_any(self) -> None:
        if self.problems:
            raise ConfigError(self.problems)

    # typed getters -----------------------------------------------------------------------
    def get_list(self, container: dict, key: str, field: str):
        v = container.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            self.add(field, f"{_q(v)} is not a list")
            return []
        return v

    def get_map(self, container: dict, key: str, field: str):
        v = container.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            self.add(field, f"{_q(v)} is not a mapping")
            return None
        return v

    def get_int(self, container: dict, key: str, field: str, default=0):
        v = container.get(key)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                return int(v)
            self.add(field, f"{_q(v)} is not an integer")
            return None
        return v

    def get_str(self, container: dict, key: str, field: str, default=""):
        v = container.get(key)
        if v is None:
            return default
        if not isinstance(v, str):
            self.add(field, f"{_q(v)} is not a string")
            return None
        return v


def _q(v) -> str:
    return '"' + v + '"' if isinstance(v, str) else repr(v)

