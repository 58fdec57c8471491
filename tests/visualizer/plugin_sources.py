"""A plugin author's files, as the tests write them into a temporary directory: a plugin module
the project does not ship (loaded only through SCHEDULER_PLUGINS or engine.plugins.loader), with a
bug that shows on some nodes, and a scenario that enables it."""
import textwrap
from pathlib import Path

# ZonePin reads the zone label with labels[...]: a KeyError on a node without one.
ZONE_PIN = '''\
"""ZonePin: keeps a pod in the zone its "zone" label names."""
from engine.framework import Code, Status
from engine.framework.interface import FilterPlugin, ScorePlugin


class ZonePin(FilterPlugin, ScorePlugin):
    """Keeps pods labelled zone=X on nodes of zone X; prefers emptier nodes."""
    name = "ZonePin"

    def __init__(self, args, handle):
        self.handle = handle

    def filter(self, state, pod, node_info):
        want = pod.labels.get("zone")
        if want is None:
            return None
        if node_info.node.labels.get("dedicated"):
            return Status(Code.UnschedulableAndUnresolvable, ["node is dedicated"])
        zone = node_info.node.labels["topology.kubernetes.io/zone"]
        if zone != want:
            return Status(Code.Unschedulable, [f"node is in zone {zone}, not {want}"])
        return None

    def score(self, state, pod, node_name):
        pods = len(self.handle.snapshot().get(node_name).pods)
        return max(0, 100 - 10 * pods), None


PLUGINS = {"ZonePin": ZonePin}
'''
ZONE_PIN_BUG_LINE = 19     # the labels[...] line above

ZONES = '''\
kind: Scenario
metadata:
  name: zone-pin
  title: ZonePin keeps pods in their zone
  description: web (zone a) lands in zone a; batch (zone b) tolerates the edge node, where ZonePin raises.
scheduler:
  profiles:
    - schedulerName: default-scheduler
      plugins:
        multiPoint:
          enabled:
            - {name: ZonePin, weight: 2}
objects:
  - {apiVersion: v1, kind: Node, metadata: {name: a-1, labels: {topology.kubernetes.io/zone: a}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: a-2, labels: {topology.kubernetes.io/zone: a}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: a-gpu, labels: {topology.kubernetes.io/zone: a, dedicated: gpu}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: b-1, labels: {topology.kubernetes.io/zone: b}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: edge-1}, spec: {taints: [{key: edge, value: "true", effect: NoSchedule}]}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: web, labels: {zone: a}}
    spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
  - apiVersion: v1
    kind: Pod
    metadata: {name: batch, labels: {zone: b}}
    spec:
      tolerations: [{key: edge, operator: Exists}]
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
'''

# Two more plugins in one file: ScoreBug raises in Score on b-1; PreBug's PreFilter returns a
# string for the pod "batch" (not the pair PreFilter returns).
SCORE_BUG = '''\
from engine.framework.interface import PreFilterPlugin, ScorePlugin


class ScoreBug(ScorePlugin):
    name = "ScoreBug"

    def __init__(self, args, handle):
        pass

    def score(self, state, pod, node_name):
        if node_name == "b-1":
            return 1 // 0, None
        return len(node_name), None


class PreBug(PreFilterPlugin):
    name = "PreBug"

    def __init__(self, args, handle):
        pass

    def pre_filter(self, state, pod):
        if pod.name == "batch":
            return "oops"
        return None, None


PLUGINS = {"ScoreBug": ScoreBug, "PreBug": PreBug}
'''
SCORE_BUG_LINE = 12        # the 1 // 0 line above
SCORE_BUGS = ZONES.replace("name: zone-pin", "name: score-bugs").replace(
    "title: ZonePin keeps pods in their zone", "title: Two buggy plugins").replace(
    "- {name: ZonePin, weight: 2}", "- {name: ScoreBug}\n            - {name: PreBug}")


def write_plugin(directory: Path, name="zone_pin.py", source=ZONE_PIN) -> Path:
    path = Path(directory) / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path
