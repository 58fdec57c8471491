"""A session of a scenario with Namespace objects (docs/examples/namespaces.yaml) opens, steps,
takes an injected Namespace update, and rebuilds the same from the database."""
import json
from pathlib import Path

import pytest

from visualizer import runner

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[2] / "docs/examples/namespaces.yaml"


def view(session_id):
    with runner.open_live(session_id) as live:
        return live.stepper.state(), live.revealed()


def test_a_namespace_session_steps_and_the_relabel_binds_at_the_flush(client):
    session = runner.create_session(EXAMPLE.read_text(encoding="utf-8"), "namespaces.yaml")
    runner.control(session.pk, {"action": "step-cycle"})
    state, _ = view(session.pk)
    assert state["pods"]["shop/web"]["queue"] == "unschedulablePods"
    runner.control(session.pk, {"action": "run-until", "until": "29"})
    state, events = view(session.pk)
    assert [e["kind"] for e in events if e["type"] == "Action"] == ["Namespace"]
    assert state["pods"]["shop/web"]["nodeName"] is None          # no Namespace event moves it
    runner.control(session.pk, {"action": "run-until", "until": "30"})
    state, _ = view(session.pk)
    assert state["pods"]["shop/web"]["nodeName"] == "n2"
    assert client.get(f"/s/{session.presenter_token}/").status_code == 200


def test_an_injected_namespace_update_is_read_by_the_next_cycle():
    text = EXAMPLE.read_text(encoding="utf-8").replace("  - at: 2s\n", "  - at: 60s\n")
    session = runner.create_session(text, "namespaces.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "data", "labels": {"team": "devops"}}}
    runner.control(session.pk, {"action": "inject", "form": "yaml", "verb": "update", "manifest": json.dumps(manifest)})
    runner.control(session.pk, {"action": "run-until", "until": "30"})
    live_view = json.dumps(view(session.pk))
    state, _ = view(session.pk)
    assert state["pods"]["shop/web"]["nodeName"] == "n2"
    runner.reset()
    assert json.dumps(view(session.pk)) == live_view
