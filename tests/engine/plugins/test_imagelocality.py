"""ImageLocality.  Mirrors upstream imagelocality/image_locality_test.go
TestImageLocalityPriority and TestNormalizedImageName."""
import hashlib

import pytest

from engine.framework import CycleState
from engine.plugins import imagelocality
from tests.engine.builders import make_node, make_pod, snapshot_handle

MB = 1024 * 1024


def pod(*images):
    b = make_pod()
    for i in images:
        b.container(image=i)
    return b.obj()


def node(name, entries=()):
    return make_node().name(name).image_entries(entries).obj()


N403002000 = [(["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
              (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
              (["gcr.io/2000:latest"], 2000 * MB)]
N25010 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
N60040900 = [(["gcr.io/600:latest"], 600 * MB), (["gcr.io/40:latest"], 40 * MB), (["gcr.io/900:latest"], 900 * MB)]
N300600900 = [(["gcr.io/300:latest"], 300 * MB), (["gcr.io/600:latest"], 600 * MB), (["gcr.io/900:latest"], 900 * MB)]
N400030 = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
N203040 = [(["gcr.io/20:latest"], 20 * MB), (["gcr.io/30:latest"], 30 * MB), (["gcr.io/40:latest"], 40 * MB)]

CASES = [
    ("two images spread on two nodes, prefer the larger image one", pod("gcr.io/40", "gcr.io/250"),
     [node("node1", N403002000), node("node2", N25010)], [0, 5]),
    ("two images on one node, prefer this node", pod("gcr.io/40", "gcr.io/300"),
     [node("node1", N403002000), node("node2", N25010)], [7, 0]),
    ("if exceed limit, use limit", pod("gcr.io/10", "gcr.io/4000"),
     [node("node1", N400030), node("node2", N25010)], [100, 0]),
    ("if exceed limit, use limit (with node which has no images present)", pod("gcr.io/10", "gcr.io/4000"),
     [node("node1", N400030), node("node2", N25010), node("node3")], [66, 0, 0]),
    ("pod with multiple large images, node2 is preferred", pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
     [node("node1", N60040900), node("node2", N300600900), node("node3")], [32, 36, 0]),
    ("pod with multiple small images", pod("gcr.io/30", "gcr.io/40"),
     [node("node1", N203040), node("node2", N400030)], [1, 0]),
    # Not upstream: a node reporting an untagged name does not match the pod's normalized
    # "<name>:latest" (node names are used as reported).
    ("node image names are not normalized", pod("gcr.io/4000"),
     [make_node().name("node1").images({"gcr.io/4000": 4000 * MB}).obj(),
      make_node().name("node2").images({"gcr.io/4000:latest": 4000 * MB}).obj()], [0, 100]),
]


@pytest.mark.parametrize("name,p,nodes,expected", CASES, ids=[c[0] for c in CASES])
def test_image_locality_priority(name, p, nodes, expected):
    pl = imagelocality.new(None, snapshot_handle([], nodes))
    state = CycleState()
    got = []
    for n in nodes:
        s, st = pl.score(state, p, n.name)
        assert st is None
        got.append(s)
    assert got == expected
    assert pl.score_extensions() is None


def _digest(content):
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize("inp,out", [
    ("root", "root:latest"),
    ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
    ("root:tag", "root:tag"),
    ("root@" + _digest("root"), "root@" + _digest("root")),
])
def test_normalized_image_name(inp, out):
    assert imagelocality.normalized_image_name(inp) == out


def test_calculate_priority_bounds():
    assert imagelocality.calculate_priority(0, 2) == 0
    assert imagelocality.calculate_priority(10 ** 12, 2) == 100
    # A pod without containers: maxThreshold is 0, the sum clamps to minThreshold -> 0.
    assert imagelocality.calculate_priority(0, 0) == 0
