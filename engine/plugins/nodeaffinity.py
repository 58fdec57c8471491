"""NodeAffinity (upstream ``plugins/nodeaffinity/node_affinity.go``, v1.28.0, with the
matching rules of ``component-helpers/scheduling/corev1/nodeaffinity``).

Filter requires the pod's ``nodeSelector`` and required node affinity (and the scheduler's
``addedAffinity``, if configured) to match the node; Score sums the weights of the preferred
terms a node matches.
"""
from __future__ import annotations

import numpy as np

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code,
                                   EnqueueExtensions, FilterPlugin, GVK, MAX_NODE_SCORE,
                                   PreFilterPlugin, PreFilterResult, PreScorePlugin,
                                   ScoreExtensions, ScorePlugin, Status)
from ..labels import NodeSelector, Requirement
from ..objects import Problems, parse_node_selector_term
from .helper import ArgsChecker, default_normalize_score, default_normalize_values

NAME = "NodeAffinity"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
errReasonEnforced = "node(s) didn't match scheduler-enforced node affinity"
errReasonConflict = "pod affinity terms conflict"

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class _PreFilterState:
    """preFilterState: nodeaffinity.RequiredNodeAffinity, i.e. the pod's nodeSelector map and
    its required NodeSelector (None when absent).  Unaffected by pods coming and going, so
    clone returns itself."""
    __slots__ = ("node_selector", "node_affinity")

    def __init__(self, node_selector: dict, node_affinity):
        self.node_selector = node_selector
        self.node_affinity = node_affinity

    def clone(self):
        return self


class _PreScoreState:
    """preScoreState: the pod's preferred terms as (weight, NodeSelectorTerm) pairs."""
    __slots__ = ("preferred_node_affinity",)

    def __init__(self, terms):
        self.preferred_node_affinity = terms

    def clone(self):
        return self


def get_required_node_affinity(pod) -> _PreFilterState:
    """nodeaffinity.GetRequiredNodeAffinity."""
    return _PreFilterState(pod.node_selector, pod.required_node_affinity)


def required_node_affinity_match(s: _PreFilterState, node) -> bool:
    """RequiredNodeAffinity.Match: every nodeSelector label present with its value, then the
    required terms (ORed; an empty term, or no terms at all, matches nothing)."""
    sel = s.node_selector
    if sel:
        labels = node.labels
        for k, v in sel.items():
            if labels.get(k) != v:
                return False
    if s.node_affinity is not None:
        return s.node_affinity.matches(node.name, node.labels)
    return True


def node_selector_matches_on_table(selector: NodeSelector, table):
    """``selector.matches`` of every node of ``table`` (engine.nodetable.NodeTable) as a bool
    column (the terms ORed, each term's requirements ANDed, from ``NodeTable.label_matches``);
    None for a term with matchFields (node names, not in the table)."""
    out = np.zeros(len(table.node_infos), dtype=bool)
    for t in selector.terms:
        if t.match_fields:
            return None
        if t.invalid or not t.match_expressions:
            continue            # matches nothing
        m = None
        for r in t.match_expressions:
            c = table.label_matches(r)
            m = c if m is None else (m & c)
        out |= m
    return out


def new_preferred_scheduling_terms(terms) -> tuple:
    """nodeaffinity.NewPreferredSchedulingTerms: drop zero-weight and empty terms."""
    return tuple((w, t) for w, t in terms
                 if w != 0 and (t.match_expressions or t.match_fields))


def preferred_score(terms, node) -> int:
    """PreferredSchedulingTerms.Score: the sum of the weights of the matching terms."""
    score = 0
    name = node.name
    labels = node.labels
    for w, t in terms:
        if t.matches(name, labels):
            score += w
    return score


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions,
                   EnqueueExtensions):
    name = NAME

    def __init__(self, handle=None, added_node_selector: NodeSelector | None = None,
                 added_pref_sched_terms: tuple | None = None):
        self.handle = handle
        self.added_node_selector = added_node_selector
        self.added_pref_sched_terms = added_pref_sched_terms

    def events_to_register(self) -> list:
        """NodeAffinity.EventsToRegister: Node/Add|Update."""
        return [ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.Update))]

    # PreFilter -------------------------------------------------------------------------------
    def pre_filter(self, state, pod):
        """NodeAffinity.PreFilter.

        Skip when the pod has neither required node affinity nor a nodeSelector and no
        affinity is added by configuration.  Otherwise store the required affinity and, when
        every required term pins node names with ``matchFields metadata.name In``, return
        those names (the union over the terms of each term's intersection); terms whose
        pinned names cannot all hold leave an empty union, which is
        UnschedulableAndUnresolvable ``pod affinity terms conflict``.
        """
        required = pod.required_node_affinity
        no_node_affinity = required is None
        if no_node_affinity and self.added_node_selector is None and not pod.node_selector:
            return None, Status(Code.Skip)
        state.write(PRE_FILTER_STATE_KEY, get_required_node_affinity(pod))
        if no_node_affinity or len(required.terms) == 0:
            return None, None
        node_names = None
        for term in required.terms:
            term_node_names = None
            for r in term.match_fields:
                if r.key == "metadata.name" and r.operator == "In":
                    s = set(r.values)
                    term_node_names = s if term_node_names is None else term_node_names & s
            if term_node_names is None:
                # A term without a name constraint admits every node (terms are ORed).
                return None, None
            node_names = set(term_node_names) if node_names is None else node_names | term_node_names
        if node_names is not None and len(node_names) == 0:
            return None, Status(Code.UnschedulableAndUnresolvable, errReasonConflict)
        if node_names:
            return PreFilterResult(node_names), None
        return None, None

    def pre_filter_extensions(self):
        return None

    # Filter ----------------------------------------------------------------------------------
    def filter(self, state, pod, node_info):
        """NodeAffinity.Filter: the added (scheduler-enforced) affinity first, then the pod's
        nodeSelector and required node affinity, each failure UnschedulableAndUnresolvable.
        Without PreFilter state (PreFilter disabled) the requirement is computed here."""
        node = node_info.node
        if self.added_node_selector is not None and not self.added_node_selector.matches(node.name, node.labels):
            return Status(Code.UnschedulableAndUnresolvable, errReasonEnforced)
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            s = get_required_node_affinity(pod)
        if not required_node_affinity_match(s, node):
            return Status(Code.UnschedulableAndUnresolvable, ErrReasonPod)
        return None

    # Filter reads the node and the pod only, never the node's pods (engine.resourcefit)
    _filter_node_only = True

    def _filter_suspects(self, state, pod, table):
        """The nodes Filter rejects (Framework.filter_suspects): those the added affinity, the
        pod's nodeSelector or its required node affinity (RequiredNodeAffinity.Match) does not
        match, from the label columns. False (cannot screen) for a term with matchFields."""
        ok = None
        if self.added_node_selector is not None:
            ok = node_selector_matches_on_table(self.added_node_selector, table)
            if ok is None:
                return False
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            s = get_required_node_affinity(pod)
        for k, v in (s.node_selector or {}).items():
            c = table.label_matches(Requirement(k, "In", (v,)))
            ok = c if ok is None else (ok & c)
        if s.node_affinity is not None:
            c = node_selector_matches_on_table(s.node_affinity, table)
            if c is None:
                return False
            ok = c if ok is None else (ok & c)
        if ok is None or ok.all():
            return None
        return ~ok

    # Score -----------------------------------------------------------------------------------
    def pre_score(self, state, pod, nodes):
        """NodeAffinity.PreScore: nothing to do without nodes; otherwise keep the pod's
        preferred terms for Score."""
        if len(nodes) == 0:
            return None
        state.write(PRE_SCORE_STATE_KEY,
                    _PreScoreState(new_preferred_scheduling_terms(pod.preferred_node_affinity)))
        return None

    def score(self, state, pod, node_name):
        """NodeAffinity.Score: the weights of the added preferred terms plus the pod's preferred
        terms that match the node (computed here when PreScore did not run)."""
        try:
            node_info = self.handle.snapshot().get(node_name)
        except KeyError:
            return 0, Status.error(f'getting node "{node_name}" from Snapshot: '
                                   f'nodeinfo not found for node name "{node_name}"')
        node = node_info.node
        count = 0
        if self.added_pref_sched_terms is not None:
            count += preferred_score(self.added_pref_sched_terms, node)
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            s = _PreScoreState(new_preferred_scheduling_terms(pod.preferred_node_affinity))
        if s.preferred_node_affinity:
            count += preferred_score(s.preferred_node_affinity, node)
        return count, None

    def score_nodes(self, state, pod, node_infos):
        """Score for every node in one call (same results as ``score``)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            s = _PreScoreState(new_preferred_scheduling_terms(pod.preferred_node_affinity))
        added, pref = self.added_pref_sched_terms, s.preferred_node_affinity
        if added is None and not pref:
            return [0] * len(node_infos), None
        out = []
        for ni in node_infos:
            count = 0
            if added is not None:
                count += preferred_score(added, ni.node)
            if pref:
                count += preferred_score(pref, ni.node)
            out.append(count)
        return out, None

    def normalize_score(self, state, pod, scores):
        """NodeAffinity.NormalizeScore: DefaultNormalizeScore(MaxNodeScore, reverse=False)."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def _normalize_values(self, state, pod, values):
        """NormalizeScore over plain scores (Framework.run_score_plugins' shortcut)."""
        return default_normalize_values(MAX_NODE_SCORE, False, values)

    def score_extensions(self):
        return self


def new(args, handle) -> NodeAffinity:
    """nodeaffinity.New with ValidateNodeAffinityArgs: ``addedAffinity`` (a v1.NodeAffinity)
    is optional; its required selector and preferred terms must parse."""
    ck = ArgsChecker(NAME, args, ("addedAffinity",))
    added = ck.get_map(ck.args, "addedAffinity", "addedAffinity")
    added_selector = None
    added_pref = None
    if added is not None:
        for k in added:
            if k not in (_REQUIRED, _PREFERRED):
                ck.add("addedAffinity", f"unknown field {k!r} (known: {_REQUIRED}, {_PREFERRED})")
        probs = Problems()
        req = ck.get_map(added, _REQUIRED, f"addedAffinity.{_REQUIRED}")
        if req is not None:
            field = f"addedAffinity.{_REQUIRED}.nodeSelectorTerms"
            terms = []
            for i, t in enumerate(ck.get_list(req, "nodeSelectorTerms", field)):
                place = ck.place(f"{field}[{i}]")
                term = parse_node_selector_term(t, place, probs)
                for j, r in enumerate(term.match_fields):
                    if len(r.values) != 1:
                        probs.add(f"{place}.matchFields[{j}].values", "must have one element")
                terms.append(term)
            added_selector = NodeSelector(tuple(terms))
        pref = []
        field = f"addedAffinity.{_PREFERRED}"
        for i, t in enumerate(ck.get_list(added, _PREFERRED, field)):
            if not isinstance(t, dict):
                ck.add(f"{field}[{i}]", f"{t!r} is not a mapping")
                continue
            w = ck.get_int(t, "weight", f"{field}[{i}].weight", default=0)
            term = parse_node_selector_term(t.get("preference") or {}, ck.place(f"{field}[{i}].preference"), probs)
            if w is not None:
                pref.append((w, term))
        if pref:
            added_pref = new_preferred_scheduling_terms(pref)
        ck.problems.extend(probs.items)
    ck.raise_if_any()
    return NodeAffinity(handle, added_selector, added_pref)
