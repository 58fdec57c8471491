"""Each cue names the panel it is about (issue 24, "the projector shows the mechanism being
taught"): its own ``panel``, else one read from its ``when`` event; the current cue carries it
as ``data-cue-panel`` for presentation mode (static/js/session.js), and in every lesson that
panel is on the page at the cue."""
import re
from pathlib import Path

import pytest
import yaml

from engine.scenario import CUE_PANELS
from visualizer import presenters, runner
from visualizer.panels.narrative import cue_panel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("lesson_plugins")]

LESSONS = sorted(Path(__file__).resolve().parents[2].joinpath("fixtures").glob("*.yaml"))


@pytest.mark.parametrize(("cue", "panel"), [
    ({"at": 0, "text": "t", "panel": "node:n1"}, "node:n1"),
    ({"when": {"type": "ReprieveStep"}, "text": "t", "panel": "queues"}, "queues"),   # its own wins
    ({"at": 0, "text": "t"}, "queues"),
    ({"when": {"type": "QueueTransition", "pod": "default/p"}, "text": "t"}, "queues"),
    ({"when": {"type": "PermitWait"}, "text": "t"}, "queues"),
    ({"when": {"type": "ReprieveStep"}, "text": "t"}, "preemption"),
    ({"when": {"type": "PreemptionPick"}, "text": "t"}, "preemption"),
    ({"when": {"type": "PreemptionCandidate", "node": "n1"}, "text": "t"}, "preemption"),
    ({"when": {"type": "PluginResult", "point": "Filter"}, "text": "t"}, "filter"),
    ({"when": {"type": "PluginResult", "point": "Score"}, "text": "t"}, "scores"),
    ({"when": {"type": "PluginResult", "point": "Reserve"}, "text": "t"}, "cycle"),
    ({"when": {"type": "FilterStopped"}, "text": "t"}, "filter"),
    ({"when": {"type": "HostSelected"}, "text": "t"}, "scores"),
    ({"when": {"type": "CycleEnd", "result": "Unschedulable"}, "text": "t"}, "cycle"),
    ({"when": {"type": "Bound", "pod": "default/p"}, "text": "t"}, "nodes"),
    ({"when": {"type": "Action", "kind": "Node"}, "text": "t"}, "nodes"),
    ({"when": {"type": "Action", "kind": "Pod"}, "text": "t"}, "queues"),
    ({"when": {"pod": "default/p"}, "text": "t"}, "queues"),      # no type: any event
])
def test_a_cue_without_a_panel_gets_the_one_its_event_is_shown_in(cue, panel):
    assert cue_panel(cue) == panel


def _target_in(panels: dict, panel: str) -> bool:
    """Whether the rendered panels have what session.js brings on screen for ``panel``."""
    if panel.startswith("node:"):
        return f'data-node="{panel[5:]}"' in panels["panel-nodes"]
    if panel in ("filter", "scores"):
        return ("data-filter-matrix" if panel == "filter" else "data-scores") in panels["panel-cycle"]
    return f"panel-{panel}" in panels


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_cue_of_every_lesson_names_a_panel_shown_while_it_is_current(path):
    """Stepped event by event, each cue becomes the current one with its lesson's ``panel`` in
    data-cue-panel, and while it is current the panel it names is on the page (an ``at`` cue is
    current from the first event of its time, before e.g. its cycle's Filter matrix is there:
    presentation mode brings the cycle panel then, the matrix once it comes)."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    # every lesson says which panel each of its cues is about (docs/lessons.md)
    for i, cue in enumerate(raw["cues"]):
        assert cue.get("panel") in CUE_PANELS or str(cue.get("panel")).startswith("node:"), (path.name, i)
    session = runner.create_session(path.read_text(encoding="utf-8"), path.name)
    current, shown = {}, {}      # cue index -> first position it is current at / where its panel is
    with runner.open_live(session.pk) as live:
        while True:
            latest = presenters.context(live, names=("narrative",))["narrative"]["latest"]
            if latest is not None and latest["index"] not in shown:
                panels = dict(presenters.render_panels(live))
                now = re.search(r'data-cue="(\d+)" data-cue-panel="([^"]+)"(?: data-cue-focus="pick")? data-cue-now', panels["panel-narrative"])
                assert now and int(now.group(1)) == latest["index"], (path.name, latest["index"])
                assert now.group(2) == raw["cues"][latest["index"]]["panel"], (path.name, latest["index"])
                current.setdefault(latest["index"], live.position)
                if _target_in(panels, now.group(2)):
                    shown[latest["index"]] = live.position
            before = live.position
            if not live.step("event") and live.position == before:
                break
    missing = {i: (raw["cues"][i]["panel"], at) for i, at in current.items() if i not in shown}
    assert not missing, f"{path.name}: cue -> (its panel, where it became current), never on the page: {missing}"
    # (an `at` cue whose time has no event of its own, as 300 s in leftover-flush, is reached
    # with the next event, together with that event's cues: only the last is current then)
    assert len(current) >= len(raw["cues"]) / 2, (path.name, current)
