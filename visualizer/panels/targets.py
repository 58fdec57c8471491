"""The targets panel (templates/visualizer/partials/_targets.html): the version of the pod and
node names the injection, log-filter and node-search fields offer, and the two datalists
themselves, asked for by the page (/s|w/<token>/targets/)."""
from __future__ import annotations

import hashlib

from django.utils.html import escape

from visualizer import moment
from visualizer.panels.common import trace_index, unit_state


def targets(live, mom) -> dict:
    """What the injection, log-filter and node-search fields offer: the names of the pods and
    nodes there are at this moment. The frame carries only their version (``data-targets``);
    the page asks for the names themselves (``targets_html``, at /s|w/<token>/targets/) when
    one of those fields is focused: 10,000 pods and 5,000 nodes are 546 KB of options, which a
    frame would carry whenever a pod comes or goes, to every page of the session."""
    engine = live.stepper.engine
    pods, nodes = sorted(mom["pods"]), sorted(engine.nodes)
    key = (len(pods), len(nodes), hash(tuple(pods)), hash(tuple(nodes)))
    cached = getattr(live, "_targets", None)
    if cached is None or cached[0] != key:
        digest = hashlib.blake2b(digest_size=8)
        for name in pods:
            digest.update(name.encode("utf-8", "surrogatepass") + b"\n")
        digest.update(b"\0")
        for name in nodes:
            digest.update(name.encode("utf-8", "surrogatepass") + b"\n")
        cached = live._targets = (key, digest.hexdigest(), pods, nodes)
    return {"version": cached[1]}


def targets_html(live, version=None) -> tuple:
    """(version, the two datalists' HTML) of the names ``targets`` gave last, or of the
    session as it is now if that was another version."""
    cached = getattr(live, "_targets", None)
    if cached is None or cached[1] != version:
        st = live.stepper
        targets(live, moment.moment(st, unit_state(st), trace_index(live)))
        cached = live._targets
    option = '<option value="{}"></option>'.format
    html = ('<datalist id="pod-keys">' + "".join(option(escape(k)) for k in cached[2]) + "</datalist>"
            '<datalist id="node-names">' + "".join(option(escape(n)) for n in cached[3]) + "</datalist>")
    return cached[1], html
