"""Fluent builders for Pods and Nodes, in the style of upstream's
``pkg/scheduler/testing/wrappers.go`` (``st.MakePod().Name("p").Req(...).Obj()``).

Each builder assembles a manifest (``.manifest()``, what a scenario's ``objects`` hold) and
``.obj()`` parses it with the engine's own parser (``objects.pod_from_manifest`` /
``node_from_manifest``), raising if the parser reports a problem, so tests exercise the same
objects a scenario produces::

    make_pod("p").req(cpu="1", memory="1Gi").priority(10).obj()
    make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).label("k", "v").taint("k", "v").obj()
"""
from __future__ import annotations

import copy

from ..objects import Problems, node_from_manifest, pod_from_manifest


def _res(resources: dict | None, kwargs: dict) -> dict:
    out = {}
    for k, v in (resources or {}).items():
        out[k] = v
    for k, v in kwargs.items():
        out[k.replace("_", "-")] = v   # ephemeral_storage= -> ephemeral-storage
    return out


class PodBuilder:
    def __init__(self):
        self.m = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "pod", "namespace": "default"},
                  "spec": {"containers": []}}

    # metadata ---------------------------------------------------------------------------
    def name(self, n):
        self.m["metadata"]["name"] = n
        return self

    def namespace(self, ns):
        self.m["metadata"]["namespace"] = ns
        return self

    def label(self, k, v):
        self.m["metadata"].setdefault("labels", {})[k] = v
        return self

    # spec -------------------------------------------------------------------------------
    @property
    def spec(self):
        return self.m["spec"]

    def priority(self, p):
        self.spec["priority"] = p
        return self

    def node(self, name):
        """spec.nodeName."""
        self.spec["nodeName"] = name
        return self

    def container(self, image=None, name=None, requests=None, limits=None, ports=None):
        """Add a container (upstream ``Container``); without requests it requests nothing."""
        cs = self.spec["containers"]
        c = {"name": name or f"con{len(cs)}"}
        if image:
            c["image"] = image
        if requests or limits:
            c["resources"] = {}
            if requests:
                c["resources"]["requests"] = dict(requests)
            if limits:
                c["resources"]["limits"] = dict(limits)
        if ports:
            c["ports"] = ports
        cs.append(c)
        return self

    def req(self, resources: dict | None = None, **kwargs):
        """Add a container requesting ``resources`` (upstream ``Req``): ``req(cpu="1")`` or
        ``req({"example.com/foo": "2"})``.  An empty request adds nothing, as upstream."""
        r = _res(resources, kwargs)
        if not r:
            return self
        return self.container(image="registry.k8s.io/pause:3.9", requests=r)

    def init_req(self, resources: dict | None = None, restart_policy=None, **kwargs):
        """Add an init container requesting ``resources``."""
        ics = self.spec.setdefault("initContainers", [])
        c = {"name": f"init{len(ics)}", "image": "registry.k8s.io/pause:3.9"}
        r = _res(resources, kwargs)
        if r:
            c["resources"] = {"requests": r}
        if restart_policy:
            c["restartPolicy"] = restart_policy
        ics.append(c)
        return self

    def overhead(self, resources: dict | None = None, **kwargs):
        self.spec["overhead"] = _res(resources, kwargs)
        return self

    def host_port(self, port, protocol="TCP", host_ip=""):
        """Add a container with one host port (upstream ``ContainerPort``)."""
        p = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        return self.container(image="registry.k8s.io/pause:3.9", ports=[p])

    def host_ports(self, *specs):
        """One container with several host ports given as upstream's node_ports_test does:
        ``"UDP/127.0.0.1/8080"``."""
        ports = []
        for s in specs:
            proto, ip, port = s.split("/")
            p = {"containerPort": int(port), "hostPort": int(port), "protocol": proto}
            if ip:
                p["hostIP"] = ip
            ports.append(p)
        return self.container(image="registry.k8s.io/pause:3.9", ports=ports)

    def node_selector(self, sel: dict):
        self.spec["nodeSelector"] = dict(sel)
        return self

    def _node_affinity(self):
        return self.spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})

    def node_affinity_required(self, *terms):
        """Required node affinity: each term a dict with matchExpressions / matchFields."""
        self._node_affinity()["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [copy.deepcopy(t) for t in terms]}
        return self

    def node_affinity_preferred(self, weight, term):
        self._node_affinity().setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "preference": copy.deepcopy(term)})
        return self

    def toleration(self, key="", value=None, effect="", operator=None):
        t = {}
        if key:
            t["key"] = key
        if operator:
            t["operator"] = operator
        if value is not None:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self.spec.setdefault("tolerations", []).append(t)
        return self

    def scheduling_gates(self, *names):
        self.spec["schedulingGates"] = [{"name": n} for n in names]
        return self

    def manifest(self) -> dict:
        """The manifest built so far (a copy), as a scenario's ``objects`` entry."""
        return copy.deepcopy(self.m)

    def obj(self):
        probs = Problems()
        pod = pod_from_manifest(copy.deepcopy(self.m), "test", probs)
        if probs.items or pod is None:
            raise AssertionError("test pod does not parse: " + "; ".join(probs.items))
        pod.priority = pod.spec_priority or 0
        return pod


class NodeBuilder:
    def __init__(self):
        self.m = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node"},
                  "spec": {}, "status": {}}

    def name(self, n):
        self.m["metadata"]["name"] = n
        return self

    def label(self, k, v):
        self.m["metadata"].setdefault("labels", {})[k] = v
        return self

    def labels(self, d: dict):
        for k, v in d.items():
            self.label(k, v)
        return self

    def capacity(self, resources: dict | None = None, **kwargs):
        """Capacity and allocatable (upstream ``Capacity``: pods defaults to 32)."""
        r = {"pods": "32"}
        r.update({k: str(v) if isinstance(v, int) else v for k, v in _res(resources, kwargs).items()})
        self.m["status"]["capacity"] = dict(r)
        self.m["status"]["allocatable"] = dict(r)
        return self

    def allocatable(self, resources: dict | None = None, **kwargs):
        """Exactly these allocatable resources (no default pod count)."""
        r = {k: str(v) if isinstance(v, int) else v for k, v in _res(resources, kwargs).items()}
        self.m["status"]["allocatable"] = r
        return self

    def taint(self, key, value="", effect="NoSchedule"):
        t = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self.m["spec"].setdefault("taints", []).append(t)
        return self

    def unschedulable(self, flag=True):
        self.m["spec"]["unschedulable"] = flag
        return self

    def images(self, images: dict):
        """``{name: sizeBytes}``, one image entry per name (upstream ``Images``)."""
        self.m["status"]["images"] = [{"names": [n], "sizeBytes": s} for n, s in images.items()]
        return self

    def image_entries(self, entries):
        """Raw ``status.images`` entries: ``[(names, sizeBytes), ...]``."""
        self.m["status"]["images"] = [{"names": list(n), "sizeBytes": s} for n, s in entries]
        return self

    def manifest(self) -> dict:
        """The manifest built so far (a copy), as a scenario's ``objects`` entry."""
        return copy.deepcopy(self.m)

    def obj(self):
        probs = Problems()
        node = node_from_manifest(copy.deepcopy(self.m), "test", probs)
        if probs.items or node is None:
            raise AssertionError("test node does not parse: " + "; ".join(probs.items))
        return node


def make_pod(name: str | None = None) -> PodBuilder:
    """A pod builder (``default/pod`` unless named)."""
    b = PodBuilder()
    return b.name(name) if name else b


def make_node(name: str | None = None) -> NodeBuilder:
    """A node builder (``node`` unless named)."""
    b = NodeBuilder()
    return b.name(name) if name else b
