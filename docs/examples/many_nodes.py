"""120 identical nodes and two pods, built in Python instead of YAML.

With 100 nodes or more, kube-scheduler stops filtering once it has found
numFeasibleNodesToFind feasible nodes (percentageOfNodesToScore; 0 means the adaptive
50 - nodes/125 percent, and never fewer than 100 nodes), and the next cycle starts filtering
where the previous one stopped.  This prints the FilterStopped events and the chosen nodes.

    PYTHONPATH=. python docs/examples/many_nodes.py
"""
import json

from engine import Engine, Scenario, Trace

nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03d}"},
          "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
         for i in range(120)]
pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
        for i in range(2)]
scenario = Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "many-nodes"},
                               "objects": nodes + pods})

events = []
trace = Trace()
trace.add_sink(events.append)
Engine(scenario, trace).run()

for e in events:
    if e["type"] == "FilterStopped":
        print(json.dumps(e, separators=(",", ":")))
    elif e["type"] == "HostSelected":
        print(f'{e["pod"]} -> {e["node"]}: {e["reason"]}')
