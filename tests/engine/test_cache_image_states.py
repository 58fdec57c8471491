"""The scheduler cache's image states (issue 15), from v1.28 ``internal/cache/cache.go``:
``AddNode``/``UpdateNode`` call ``removeNodeImageStates`` for the node's previous version, then
``addNodeImageStates``, which records the node in ``cache.imageStates`` and gives *this* node's
NodeInfo an ``ImageStateSummary`` per image with ``NumNodes = len(state.nodes)`` at that moment
(and the size the cache first recorded). ``RemoveNode`` calls ``removeNodeImageStates``. Other
nodes' summaries are never refreshed, so they go stale.
"""
from engine import Engine, Scenario, Trace
from engine.cache import Cache
from tests.engine.builders import make_node

MB = 1024 * 1024


def node(name, **images):
    return make_node().name(name).capacity(cpu="4", memory="8Gi").images(
        {k.replace("_", "/"): v for k, v in images.items()}).obj()


def states(cache, name):
    return cache.nodes[name].image_states


def test_counts_are_taken_when_each_node_is_added():
    c = Cache()
    c.add_node(node("n1", nginx=100 * MB))
    c.add_node(node("n2", nginx=100 * MB))
    c.add_node(node("n3", nginx=100 * MB, redis=50 * MB))
    assert states(c, "n1") == {"nginx": (100 * MB, 1)}        # stale: counted when n1 was added
    assert states(c, "n2") == {"nginx": (100 * MB, 2)}
    assert states(c, "n3") == {"nginx": (100 * MB, 3), "redis": (50 * MB, 1)}
    assert {k: (v[0], sorted(v[1])) for k, v in c.image_states.items()} == {
        "nginx": (100 * MB, ["n1", "n2", "n3"]), "redis": (50 * MB, ["n3"])}


def test_an_update_recounts_only_the_updated_node():
    c = Cache()
    n1 = node("n1", nginx=100 * MB)
    c.add_node(n1)
    c.add_node(node("n2", nginx=100 * MB))
    n1b = make_node().name("n1").capacity(cpu="4", memory="8Gi").label("k", "v").images({"nginx": 100 * MB}).obj()
    c.update_node(n1, n1b)
    assert states(c, "n1") == {"nginx": (100 * MB, 2)}        # recounted: n1 itself was updated
    assert states(c, "n2") == {"nginx": (100 * MB, 2)}


def test_the_size_is_the_one_the_cache_recorded_first():
    c = Cache()
    c.add_node(node("n1", nginx=100 * MB))
    c.add_node(node("n2", nginx=300 * MB))
    assert states(c, "n2") == {"nginx": (100 * MB, 2)}        # imageState.size from n1


def test_a_removed_node_leaves_the_others_stale_and_frees_unused_images():
    c = Cache()
    n1, n2 = node("n1", nginx=100 * MB, redis=10 * MB), node("n2", nginx=100 * MB)
    c.add_node(n1)
    c.add_node(n2)
    c.remove_node(n1)
    assert states(c, "n2") == {"nginx": (100 * MB, 2)}        # still counts n1
    assert "redis" not in c.image_states and sorted(c.image_states["nginx"][1]) == ["n2"]
    c.add_node(node("n3", nginx=100 * MB))
    assert states(c, "n3") == {"nginx": (100 * MB, 2)}        # n2 and n3


def test_image_locality_scores_with_the_stale_counts():
    # Three nodes with a 500 MB image, added in order; the pod wants it. Upstream's scores differ
    # per node (NumNodes 1, 2, 3 of 3 nodes), where a count over the snapshot would tie them.
    def n(name):
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                           "images": [{"names": ["example.com/big:1"], "sizeBytes": 500 * MB}]}}
    sc = Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "t"},
                             "objects": [n("n1"), n("n2"), n("n3"),
                                         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                          "spec": {"containers": [{"name": "c", "image": "example.com/big:1"}]}}]})
    events = []
    tr = Trace()
    tr.add_sink(events.append)
    Engine(sc, tr).run()
    raw = {e["node"]: e["score"] for e in events
           if e["type"] == "PluginResult" and e["plugin"] == "ImageLocality" and e["point"] == "Score"}
    # scaledImageScore = size * NumNodes / 3; calculatePriority maps (sum - 23MB) / (1000MB - 23MB) onto 0..100
    def expected(num):
        s = int(500 * MB * (num / 3))
        return 100 * (s - 23 * MB) // (1000 * MB - 23 * MB)
    assert raw == {"n1": expected(1), "n2": expected(2), "n3": expected(3)}
    assert raw["n1"] < raw["n2"] < raw["n3"]
