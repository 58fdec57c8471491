"""Where the node search stops (issue 15), from v1.28 ``schedule_one.go``:
``findNodesThatPassFilters``'s checkNode adds a feasible node with ``atomic.AddInt32``; the node
whose success makes the count exceed ``numNodesToFind`` cancels the search and is not kept.
The nodes that failed before it were examined and recorded in the diagnosis, and
``findNodesThatFitPod`` advances ``nextStartNodeIndex`` by ``len(feasibleNodes) +
len(diagnosis.NodeToStatusMap)``. With one worker (SPEC.md section 4) the order is the loop's.
"""
from engine import Engine, Scenario, Trace

N = 200          # numFeasibleNodesToFind(200) = max(200 * (50 - 200 // 125) // 100, 100) = 100
FAILING = range(100, 105)


def scenario():
    nodes = []
    for i in range(N):
        spec = {"unschedulable": True} if i in FAILING else {}
        nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03d}"}, "spec": spec,
                      "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": p},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}
            for p in ("a", "b")]
    return Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "stop"}, "objects": nodes + pods})


def test_the_next_feasible_node_stops_the_search_and_the_failed_ones_count():
    events = []
    tr = Trace()
    tr.add_sink(events.append)
    eng = Engine(scenario(), tr)
    eng.run(until=0)

    def filtered(pod):
        seen = []
        for e in events:
            if e["type"] == "PluginResult" and e["point"] == "Filter" and e["pod"] == pod and e["node"] not in seen:
                seen.append(e["node"])
        return seen

    a = filtered("default/a")
    # 100 feasible nodes, the 5 unschedulable ones examined, then n105 passes and stops it
    assert a == [f"n{i:03d}" for i in range(106)]
    [stop] = [e for e in events if e["type"] == "FilterStopped" and e["pod"] == "default/a"]
    assert (stop["evaluated"], stop["feasible"], stop["nodes"]) == (106, 100, N)
    assert "the next node that passed, n105, stopped the search and is not kept" in stop["message"]
    scored = {e["node"] for e in events if e["type"] == "PluginResult" and e["point"] == "Score"
              and e["pod"] == "default/a"}
    assert len(scored) == 100 and "n105" not in scored
    # nextStartNodeIndex moved by 100 feasible + 5 failed: b starts at n105
    b = filtered("default/b")
    assert b[0] == "n105" and b[:3] == ["n105", "n106", "n107"]
    # b: n105..n199 and n000..n004 feasible (100), n005 passes and stops it, not counted
    assert len(b) == 101 and b[-1] == "n005"
    assert eng.next_start_node_index == (105 + 100) % N == 5
