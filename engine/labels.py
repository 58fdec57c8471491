"""Label selectors, node selectors, taints and tolerations.

Upstream: ``k8s.io/apimachinery/pkg/labels`` (LabelSelectorAsSelector),
``k8s.io/component-helpers/scheduling/corev1/nodeaffinity`` (NodeSelector matching) and
``k8s.io/api/core/v1/toleration.go`` (ToleratesTaint).  Selectors are parsed once into small
immutable objects whose ``matches`` methods are cheap, because filters call them per node.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def is_valid_label_value(v: str) -> bool:
    """validation.IsValidLabelValue: at most 63 characters of [-A-Za-z0-9_.], alphanumeric ends."""
    return len(v) <= 63 and bool(_LABEL_VALUE_RE.match(v))


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # In NotIn Exists DoesNotExist (Gt Lt for node selectors)
    values: tuple = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op in ("Gt", "Lt"):
            if self.key not in labels:
                return False
            try:
                have = int(labels[self.key])
                want = int(self.values[0])
            except (ValueError, IndexError):
                return False
            return have > want if op == "Gt" else have < want
        return False

    def __visualize__(self) -> str:
        """As labels.Requirement.String writes it: ``app=web``, ``tier in (a,b)``, ``!gpu``."""
        op, vals = self.operator, ",".join(self.values)
        if op == "In" and len(self.values) == 1:
            return f"{self.key}={vals}"
        if op == "NotIn" and len(self.values) == 1:
            return f"{self.key}!={vals}"
        if op == "Exists":
            return self.key
        if op == "DoesNotExist":
            return f"!{self.key}"
        if op in ("Gt", "Lt"):
            return f"{self.key}{'>' if op == 'Gt' else '<'}{vals}"
        return f"{self.key} {op.lower()} ({vals})"


@dataclass(frozen=True)
class LabelSelector:
    """metav1.LabelSelector as a labels.Selector.  ``None`` selects nothing upstream; an empty
    selector (no requirements) selects everything."""
    requirements: tuple = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __visualize__(self) -> str:
        """``app=web,tier in (a,b)``; an empty selector selects everything."""
        return ",".join(r.__visualize__() for r in self.requirements) or "(everything)"

    @classmethod
    def from_match_labels(cls, match_labels: Mapping[str, str]) -> "LabelSelector":
        return cls(tuple(Requirement(k, "In", (v,)) for k, v in sorted(match_labels.items())))


EVERYTHING = LabelSelector()


@dataclass(frozen=True)
class NodeSelectorTerm:
    match_expressions: tuple = ()  # Requirements on labels
    match_fields: tuple = ()       # Requirements on fields (only metadata.name)
    invalid: bool = False          # a requirement labels.NewRequirement would refuse

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        # An empty term, or one whose requirements do not parse as a selector
        # (NodeSelectorRequirementsAsSelector fails), matches nothing.
        if self.invalid or (not self.match_expressions and not self.match_fields):
            return False
        for r in self.match_expressions:
            if not r.matches(labels):
                return False
        if self.match_fields:
            fields = {"metadata.name": node_name}
            for r in self.match_fields:
                if not r.matches(fields):
                    return False
        return True


@dataclass(frozen=True)
class NodeSelector:
    """v1.NodeSelector: the terms are ORed."""
    terms: tuple = ()

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for t in self.terms:
            if t.matches(node_name, labels):
                return True
        return False


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""  # NoSchedule PreferNoSchedule NoExecute

    def to_dict(self):
        d = {"key": self.key, "effect": self.effect}
        if self.value:
            d["value"] = self.value
        return d


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal Exists
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """v1.Toleration.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


def tolerations_tolerate_taint(tolerations, taint: Taint) -> bool:
    for t in tolerations:
        if t.tolerates(taint):
            return True
    return False


def find_untolerated_taint(taints, tolerations, effects=("NoSchedule", "NoExecute")):
    """v1helper.FindMatchingUntoleratedTaint with a filter on the taint effect."""
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
