"""Issue 22's lesser points: a Content-Security-Policy on every response, /metrics restricted
by a setting, and a rejected upload not echoed back whole."""
import ipaddress

import pytest


@pytest.mark.django_db
def test_every_page_has_a_content_security_policy(client, settings):
    for path in ("/", "/docs/", "/healthz"):
        policy = client.get(path)["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "'unsafe-eval'" not in policy and "script-src 'self' 'unsafe-inline'" not in policy
    settings.CONTENT_SECURITY_POLICY = ""
    assert "Content-Security-Policy" not in client.get("/")


@pytest.mark.django_db
def test_metrics_can_be_restricted_to_networks(client, settings):
    assert client.get("/metrics").status_code == 200            # the default: anyone
    settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.0.0.0/8")]
    response = client.get("/metrics")                           # the test client is 127.0.0.1
    assert response.status_code == 403 and b"METRICS_ALLOWED_NETWORKS" in response.content
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="not an address").status_code == 403
    settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
    assert client.get("/metrics").status_code == 200


def test_the_setting_reads_networks_from_the_environment():
    import subprocess
    import sys
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='visualizer.settings'; django.setup(); "
            "from django.conf import settings; print([str(n) for n in settings.METRICS_ALLOWED_NETWORKS])")
    import os
    env = dict(os.environ, METRICS_ALLOWED_NETWORKS="127.0.0.1, 10.0.0.0/8")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "['127.0.0.1/32', '10.0.0.0/8']", out.stderr


@pytest.mark.django_db
def test_a_rejected_text_is_shown_again_only_while_small(client):
    small = "kind: Scenario\nmetadata: {name: x}\nobjects: 5\n"
    response = client.post("/sessions/", {"scenario": small})
    assert response.status_code == 400 and "objects: 5" in response.content.decode()
    page = len(response.content)
    big = small + "# " + "x" * 100_000 + "\n"
    response = client.post("/sessions/", {"scenario": big})
    body = response.content.decode()
    assert response.status_code == 400 and "<li data-problem>" in body
    assert "x" * 1000 not in body
    assert len(body) < page + 5_000          # the page with its problems, not the text again


def test_the_favicon_is_served(client):
    """Issue 24: every page load asked for /favicon.ico and got a 404."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg") and b"</svg>" in response.content
