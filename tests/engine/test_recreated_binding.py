"""A pod deleted and re-created while its binding is in flight (docs/examples/recreate.yaml):
the old binding's failure must not make the new pod's own binding look finished."""
from pathlib import Path

from engine import US, Engine, Scenario, Trace

ROOT = Path(__file__).resolve().parents[2]


def test_the_new_pod_stays_binding_when_the_old_binding_fails():
    eng = Engine(Scenario.from_path(ROOT / "docs/examples/recreate.yaml"), Trace(enabled=False))
    eng.run(until=int(2.5 * US))      # the old binding failed at 2s; the new one completes at 3s
    p = eng.state()["pods"]["default/p"]
    assert (p["phase"], p["nodeName"]) == ("Binding", "n1")
    eng.run(until=3 * US)
    p = eng.state()["pods"]["default/p"]
    assert (p["phase"], p["nodeName"]) == ("Running", "n1")
