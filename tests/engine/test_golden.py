"""Optimisations keep every trace and state byte for byte: the JSON Lines trace and the state
of small SchedulingBasic/PreemptionBasic workloads (bench/workloads.py) and of every lesson and
example are the ones the engine produced before trace batches and the compact event store
(80582fd), but for one fix since (tests/engine/golden/digests.json, made by `python
tests/engine/golden/digests.py`). A change that means to change a trace regenerates the file
and says why in its commit and here:

- issue 25 (2026-11-26): FitError.Error() ends each part with SeparatorFormat " %v.", the
  PostFilter message too, so a message ending in DefaultPreemption's "preemption: 0/N nodes are
  available: ... ." ends in ".." (pkg/scheduler/framework/types.go, v1.28.0). The traces of 19
  of the 31 items changed, and only there: 83 CycleEnd messages, each the old one plus "."
  (compared line by line with the engine before the fix); every state is the same.
- issue 28 (2026-11-27): docs/examples/namespaces.yaml (Namespace objects with labels) added,
  with its digests made by the engine that added Namespace objects; every other item's are
  unchanged."""
import json
from pathlib import Path

from tests.engine.golden.digests import digests

STORED = Path(__file__).resolve().parent / "golden" / "digests.json"


def test_traces_and_states_are_byte_identical_to_the_stored_digests():
    want = json.loads(STORED.read_text())
    got = digests()
    assert sorted(got) == sorted(want)
    assert {k: v for k, v in got.items() if v != want[k]} == {}


def test_states_with_the_trace_off_are_the_same():
    """The headless mode (trace off) takes shorter paths (Framework.node_filter); its states
    are the stored ones too."""
    want = json.loads(STORED.read_text())
    got = digests(trace=False)
    assert {k: v[1] for k, v in got.items() if v[1] != want[k][1]} == {}
