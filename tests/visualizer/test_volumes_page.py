"""Volumes on the page: a pod's claims in its history, and the volume plugins' Filter
reasons in the Filter matrix (they come as PluginResults like any plugin's)."""
import re
from pathlib import Path

import pytest

from visualizer import runner

EXAMPLE = Path(__file__).resolve().parents[2] / "docs/examples/volumes.yaml"


@pytest.mark.django_db
def test_a_pods_claims_and_the_volume_filter_reasons(client):
    session = runner.create_session(EXAMPLE.read_text(encoding="utf-8"), "volumes.yaml")
    url = f"/s/{session.presenter_token}/history/"
    runner.control(session.pk, {"action": "step-event"})       # db enters activeQ
    # before its cycle the claim is listed (its state shows at the end of an engine step)
    fragment = client.get(url, {"pod": "default/db"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-claim="data"' in fragment and "volume <code>data</code> → claim <code>data</code>" in fragment
    runner.control(session.pk, {"action": "step-cycle"})       # db's cycle
    runner.control(session.pk, {"action": "step-cycle"})       # its binding (PreBind binds the claim)
    fragment = client.get(url, {"pod": "default/db"}, HTTP_HX_REQUEST="true").content.decode()
    assert "node(s) didn&#x27;t find available persistent volumes to bind" in fragment or \
        "node(s) didn't find available persistent volumes to bind" in fragment
    assert 'data-plugin="VolumeBinding"' in fragment
    assert re.search(r"<strong data-claim-phase>Bound</strong> to PV <code>pv-b</code>", fragment)
    # the session page's Filter matrix shows the same reasons
    page = client.get(f"/s/{session.presenter_token}/").content.decode()
    assert "VolumeBinding" in page
