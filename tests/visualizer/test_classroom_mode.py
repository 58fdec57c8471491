"""Class mode (issue 24, "Phones can join the class"): `scripts/run.sh --class`, the machine's
addresses (visualizer/classroom.py, every system call faked here: nothing is sent anywhere),
ALLOWED_HOSTS, and the presenter page's join link and QR code."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import segno

from visualizer import classroom

ROOT = Path(__file__).resolve().parents[2]

IP_ADDR_JSON = json.dumps([
    {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "addr_info": [
        {"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"},
        {"family": "inet6", "local": "::1", "prefixlen": 128, "scope": "host"}]},
    {"ifindex": 2, "ifname": "wlan0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "addr_info": [
        {"family": "inet", "local": "192.168.1.23", "prefixlen": 24, "scope": "global"},
        {"family": "inet6", "local": "fd00::23", "prefixlen": 64, "scope": "global"},
        {"family": "inet6", "local": "fe80::1234", "prefixlen": 64, "scope": "link"}]},
    {"ifindex": 3, "ifname": "eth1", "flags": ["BROADCAST", "MULTICAST"], "addr_info": [   # down
        {"family": "inet", "local": "10.9.9.9", "prefixlen": 24}]},
    {"ifindex": 4, "ifname": "docker0", "flags": ["UP"], "addr_info": [
        {"family": "inet", "local": "172.17.0.1", "prefixlen": 16},
        {"family": "inet", "prefixlen": 16},                     # no local: skipped
        "garbage"]},
])


# ---------------------------------------------------------------------- discovery, faked

def test_ip_addr_output_gives_the_addresses_of_the_links_that_are_up():
    assert classroom.parse_ip_addr(IP_ADDR_JSON) == [
        "127.0.0.1", "::1", "192.168.1.23", "fd00::23", "fe80::1234", "172.17.0.1"]


@pytest.mark.parametrize("text", ["", "not json", "{}", "[1, 2]", '[{"flags": "UP"}]',
                                  '[{"flags": ["UP"], "addr_info": {"local": "1.2.3.4"}}]',
                                  '[{"flags": ["UP"], "addr_info": [{"local": 7}]}]'])
def test_malformed_ip_addr_output_gives_nothing_and_no_error(text):
    assert classroom.parse_ip_addr(text) == []


def test_interface_addresses_run_ip_j_addr(monkeypatch):
    calls = []

    def fake_run(argv, **kwargs):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout=IP_ADDR_JSON, stderr="")

    monkeypatch.setattr(classroom.shutil, "which", lambda name: "/sbin/ip" if name == "ip" else None)
    monkeypatch.setattr(classroom.subprocess, "run", fake_run)
    assert "192.168.1.23" in classroom.interface_addresses()
    assert calls == [["/sbin/ip", "-j", "addr", "show"]]


def test_interface_addresses_without_ip_or_when_it_fails(monkeypatch):
    monkeypatch.setattr(classroom.shutil, "which", lambda name: None)
    assert classroom.interface_addresses() == []

    monkeypatch.setattr(classroom.shutil, "which", lambda name: "/sbin/ip")
    monkeypatch.setattr(classroom.subprocess, "run",
                        lambda argv, **kw: subprocess.CompletedProcess(argv, 1, stdout=IP_ADDR_JSON, stderr="x"))
    assert classroom.interface_addresses() == []

    def boom(argv, **kw):
        raise subprocess.TimeoutExpired(argv, 5)
    monkeypatch.setattr(classroom.subprocess, "run", boom)
    assert classroom.interface_addresses() == []


class FakeUdpSocket:
    """A socket whose connect() records its target; it has no send method at all, so the
    route probe provably sends nothing."""
    connected = []
    sources = {socket.AF_INET: "192.168.1.23", socket.AF_INET6: None}   # None: no IPv6 route

    def __init__(self, family, kind):
        assert kind == socket.SOCK_DGRAM
        self.family = family

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def connect(self, target):
        FakeUdpSocket.connected.append(target)
        if self.sources[self.family] is None:
            raise OSError(101, "Network is unreachable")

    def getsockname(self):
        return (self.sources[self.family], 40000)


def test_the_default_route_source_comes_from_a_udp_connect_that_sends_nothing(monkeypatch):
    FakeUdpSocket.connected = []
    monkeypatch.setattr(classroom.socket, "socket", FakeUdpSocket)
    assert classroom.default_route_addresses() == ["192.168.1.23"]
    # documentation addresses (RFC 5737, RFC 3849); connect() only picks a route
    assert FakeUdpSocket.connected == [("192.0.2.1", 9), ("2001:db8::1", 9)]


def test_the_host_names_addresses_and_a_resolver_failure(monkeypatch):
    def fake_getaddrinfo(name, port):
        if name != "lab-pc":
            raise socket.gaierror(-2, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.1.1", 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.168.1.23", 0)),
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fd00::23", 0, 0, 0))]

    monkeypatch.setattr(classroom.socket, "getaddrinfo", fake_getaddrinfo)
    assert classroom.resolved_addresses("lab-pc") == ["127.0.1.1", "192.168.1.23", "fd00::23"]
    assert classroom.resolved_addresses("elsewhere") == []
    assert classroom.resolved_addresses("") == []


def fake_machine(monkeypatch, *, name="lab-pc", route=("10.0.0.5",), interfaces=IP_ADDR_JSON,
                 resolved=("127.0.1.1", "192.168.1.23")):
    monkeypatch.setattr(classroom, "hostname", lambda: name)
    monkeypatch.setattr(classroom, "default_route_addresses", lambda: list(route))
    monkeypatch.setattr(classroom, "interface_addresses", lambda: classroom.parse_ip_addr(interfaces))
    monkeypatch.setattr(classroom, "resolved_addresses", lambda n: list(resolved) if n == name else [])


def test_discover_puts_the_default_route_first_ipv4_before_ipv6_without_loopback_or_link_local(monkeypatch):
    fake_machine(monkeypatch)
    machine = classroom.discover()
    assert machine.hostname == "lab-pc"
    assert machine.addresses == ["10.0.0.5", "192.168.1.23", "172.17.0.1", "fd00::23"]


def test_discover_on_a_machine_with_no_network(monkeypatch):
    fake_machine(monkeypatch, route=(), interfaces="[]", resolved=("127.0.1.1",))
    assert classroom.discover().addresses == []


def test_allowed_hosts_are_loopback_and_the_machines_own_names_only():
    machine = classroom.Machine("Lab-PC", ["192.168.1.23", "fd00::23"])
    hosts = classroom.allowed_hosts(["localhost", "127.0.0.1", "[::1]", "testserver"], machine, "lab-pc.local")
    assert hosts == ["localhost", "127.0.0.1", "[::1]", "testserver", "lab-pc", "192.168.1.23", "[fd00::23]",
                     "lab-pc.local"]
    assert "*" not in hosts and not any(h.startswith(".") for h in hosts)


@pytest.mark.parametrize("host, expected", [
    ("127.0.0.1:8000", True), ("localhost", True), ("[::1]:8000", True), ("app.localhost:80", True),
    ("127.0.1.1", True), ("192.168.1.23:8000", False), ("lab-pc", False), ("[fd00::23]:8000", False)])
def test_loopback_hosts(host, expected):
    assert classroom.is_loopback_host(classroom.split_host(host)[0]) is expected


# ---------------------------------------------------------------------- settings

PRINT_SETTINGS = """
import json, sys
from visualizer import classroom
classroom.hostname = lambda: "lab-pc"
classroom.default_route_addresses = lambda: ["192.168.1.23"]
classroom.interface_addresses = lambda: ["127.0.0.1", "192.168.1.23", "10.0.0.5", "fe80::1"]
classroom.resolved_addresses = lambda name: ["127.0.1.1"]
import django
django.setup()
from django.conf import settings
print(json.dumps([settings.ALLOWED_HOSTS, settings.CLASS_MODE, settings.CLASS_JOIN_ADDRESSES]))
"""


def settings_in_fresh_process(**env_changes):
    env = {k: v for k, v in os.environ.items()
           if k not in ("VISUALIZER_CLASS_MODE", "CLASS_HOST", "DJANGO_ALLOWED_HOSTS")}
    env.update(env_changes, DJANGO_SETTINGS_MODULE="visualizer.settings")
    result = subprocess.run([sys.executable, "-c", PRINT_SETTINGS], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=True, timeout=60)
    return json.loads(result.stdout)


def test_outside_class_mode_allowed_hosts_are_loopback_as_before():
    assert settings_in_fresh_process() == [["localhost", "127.0.0.1", "[::1]", "testserver"], False, []]


def test_class_mode_allows_the_machines_own_host_name_and_addresses():
    hosts, mode, choices = settings_in_fresh_process(VISUALIZER_CLASS_MODE="1")
    assert mode is True
    assert hosts == ["localhost", "127.0.0.1", "[::1]", "testserver", "lab-pc", "192.168.1.23", "10.0.0.5"]
    assert choices == ["192.168.1.23", "10.0.0.5"]


def test_class_host_is_allowed_and_offered_first():
    hosts, _, choices = settings_in_fresh_process(VISUALIZER_CLASS_MODE="1", CLASS_HOST="classroom.example",
                                                  DJANGO_ALLOWED_HOSTS="localhost,127.0.0.1")
    assert hosts == ["localhost", "127.0.0.1", "lab-pc", "192.168.1.23", "10.0.0.5", "classroom.example"]
    assert choices == ["classroom.example", "192.168.1.23", "10.0.0.5"]


# ---------------------------------------------------------------------- requests

@pytest.fixture
def class_mode(settings, monkeypatch):
    """Class mode on a machine called lab-pc with two LAN addresses and an IPv6 one."""
    fake_machine(monkeypatch, route=("192.168.1.23",),
                 interfaces=json.dumps([{"flags": ["UP"], "addr_info": [
                     {"local": "192.168.1.23"}, {"local": "10.0.0.5"}, {"local": "fd00::23"}]}]))
    machine = classroom.discover()
    settings.CLASS_MODE = True
    settings.ALLOWED_HOSTS = classroom.allowed_hosts(["localhost", "127.0.0.1", "[::1]"], machine)
    settings.CLASS_JOIN_ADDRESSES = classroom.join_choices(machine)
    return machine


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "lab-pc:8000",
                                  "192.168.1.23:8000", "10.0.0.5", "[fd00::23]:8000"])
def test_class_mode_serves_the_machines_own_names(client, class_mode, host):
    assert client.get("/healthz", HTTP_HOST=host).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "192.168.1.99:8000", "lab-pc.evil.example", "[fd00::99]"])
def test_class_mode_refuses_a_foreign_host_header(client, class_mode, host):
    assert client.get("/healthz", HTTP_HOST=host).status_code == 400


@pytest.fixture
def session(db, scenario_text):
    from visualizer import runner
    return runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")


def follower_link(html):
    return html.split("data-follower-link href=\"", 1)[1].split('"', 1)[0]


def qr_of(html):
    return html.split("data-follower-qr>", 1)[1].split("</svg>", 1)[0] + "</svg>"


def expected_qr(follower_url):
    """The QR code the join box shows for ``follower_url``: it encodes the short join link on
    the same host (/j/<the token's first 8 characters>/), which leads to the follower page."""
    base, token = follower_url.rstrip("/").rsplit("/w/", 1)
    short = f"{base}/j/{token[:8]}/"
    return segno.make(short, error="m").svg_inline(scale=5, border=2, dark="#111", light="#fff",
                                                   omitsize=True, title="QR code of the follower link")


def test_opened_on_127_0_0_1_the_join_link_and_qr_carry_the_lan_address(client, class_mode, session):
    html = client.get(f"/s/{session.presenter_token}/", HTTP_HOST="127.0.0.1:8000").content.decode()

    url = f"http://192.168.1.23:8000/w/{session.follower_token}/"
    assert follower_link(html) == url
    assert f">{url}</a>" in html
    assert qr_of(html) == expected_qr(url)
    assert qr_of(html) != expected_qr(f"http://127.0.0.1:8000/w/{session.follower_token}/")
    # the choice of address, and still never the presenter link
    assert "data-join-address" in html
    assert '<option value="192.168.1.23" selected>' in html
    assert '<option value="10.0.0.5">' in html and '<option value="fd00::23">' in html
    assert html.count(session.presenter_token) == 1   # only in the WebSocket path


def test_localhost_too(client, class_mode, session):
    html = client.get(f"/s/{session.presenter_token}/", HTTP_HOST="localhost:9000").content.decode()
    assert follower_link(html) == f"http://192.168.1.23:9000/w/{session.follower_token}/"


def test_the_presenter_picks_another_address_and_it_is_kept(client, class_mode, session):
    page = f"/s/{session.presenter_token}/"
    html = client.get(page, {"join": "10.0.0.5"}, HTTP_HOST="127.0.0.1:8000").content.decode()
    url = f"http://10.0.0.5:8000/w/{session.follower_token}/"
    assert follower_link(html) == url and qr_of(html) == expected_qr(url)
    assert '<option value="10.0.0.5" selected>' in html

    # the next visit without the parameter keeps it (the Django session)
    html = client.get(page, HTTP_HOST="127.0.0.1:8000").content.decode()
    assert follower_link(html) == url

    # IPv6 goes in brackets
    html = client.get(page, {"join": "fd00::23"}, HTTP_HOST="127.0.0.1:8000").content.decode()
    assert follower_link(html) == f"http://[fd00::23]:8000/w/{session.follower_token}/"


def test_an_address_that_is_not_the_machines_is_ignored(client, class_mode, session):
    html = client.get(f"/s/{session.presenter_token}/", {"join": "evil.example"},
                      HTTP_HOST="127.0.0.1:8000").content.decode()
    assert follower_link(html) == f"http://192.168.1.23:8000/w/{session.follower_token}/"
    assert "evil.example" not in html


def test_opened_by_a_lan_name_the_link_keeps_that_name(client, class_mode, session):
    html = client.get(f"/s/{session.presenter_token}/", HTTP_HOST="10.0.0.5:8000").content.decode()
    assert follower_link(html) == f"http://10.0.0.5:8000/w/{session.follower_token}/"

    html = client.get(f"/s/{session.presenter_token}/", HTTP_HOST="lab-pc:8000").content.decode()
    assert follower_link(html) == f"http://lab-pc:8000/w/{session.follower_token}/"
    assert '<option value="lab-pc" selected>' in html


def test_the_choice_keeps_presentation_mode(client, class_mode, session):
    html = client.get(f"/s/{session.presenter_token}/", {"present": "1"}, HTTP_HOST="127.0.0.1:8000").content.decode()
    assert '<input type="hidden" name="present" value="1">' in html


def test_one_address_is_shown_without_a_choice(client, class_mode, session, settings):
    settings.CLASS_JOIN_ADDRESSES = ["192.168.1.23"]
    html = client.get(f"/s/{session.presenter_token}/", HTTP_HOST="127.0.0.1:8000").content.decode()
    assert "<select name=\"join\">" not in html
    assert "join by <strong>192.168.1.23</strong>" in html


def test_no_lan_address_found_says_so(client, class_mode, session, settings):
    settings.CLASS_JOIN_ADDRESSES = []
    html = client.get(f"/s/{session.presenter_token}/", HTTP_HOST="127.0.0.1:8000").content.decode()
    assert follower_link(html) == f"http://127.0.0.1:8000/w/{session.follower_token}/"
    assert "data-join-unreachable" in html and "CLASS_HOST" in html


def test_the_follower_page_in_class_mode_has_no_join_box(client, class_mode, session):
    html = client.get(f"/w/{session.follower_token}/", HTTP_HOST="192.168.1.23:8000").content.decode()
    assert "data-join-address" not in html and "data-follower-link" not in html
    assert session.presenter_token not in html


def test_outside_class_mode_nothing_changes(client, session, settings):
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]
    assert settings.CLASS_MODE is False
    html = client.get(f"/s/{session.presenter_token}/", {"join": "10.0.0.5"},
                      HTTP_HOST="127.0.0.1:8000").content.decode()
    url = f"http://127.0.0.1:8000/w/{session.follower_token}/"
    assert follower_link(html) == url and qr_of(html) == expected_qr(url)
    assert "data-join-address" not in html and "data-join-unreachable" not in html
    assert client.get("/healthz", HTTP_HOST="192.168.1.23:8000").status_code == 400


# ---------------------------------------------------------------------- scripts/run.sh

def run_sh(*args, **env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("ADDR", "PORT", "VISUALIZER_CLASS_MODE")}
    env.update(env_changes, RUN_SH_DRY_RUN="1")
    return subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("args, env, mode, addr", [
    ((), {}, "", "127.0.0.1:8000"),
    (("--class",), {}, "1", "0.0.0.0:8000"),
    (("--class",), {"PORT": "9001"}, "1", "0.0.0.0:9001"),
    ((), {"PORT": "9001"}, "", "127.0.0.1:9001"),
    (("--class",), {"ADDR": "127.0.0.1:7000"}, "1", "127.0.0.1:7000"),
    ((), {"ADDR": "0.0.0.0:8000"}, "", "0.0.0.0:8000"),
])
def test_run_sh_class_flag(args, env, mode, addr):
    result = run_sh(*args, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"VISUALIZER_CLASS_MODE={mode}",
                                          f".venv/bin/python manage.py runserver {addr}"]


def test_run_sh_refuses_an_unknown_argument():
    result = run_sh("--klass")
    assert result.returncode == 2
    assert "unknown argument: --klass" in result.stderr and "--class" in result.stderr


# ---------------------------------------------------------------------- a phone's WebSocket

@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_phones_socket_by_the_lan_address_is_accepted_and_a_foreign_origin_refused(class_mode, scenario_text):
    """The follower page opened by the LAN address connects its socket from that origin: the
    origin check (AllowedHostsOriginValidator, built from ALLOWED_HOSTS as visualizer/asgi.py
    builds it at start) admits the machine's addresses and nothing else."""
    from asgiref.sync import sync_to_async
    from channels.auth import AuthMiddlewareStack
    from channels.routing import URLRouter
    from channels.security.websocket import AllowedHostsOriginValidator
    from channels.testing import WebsocketCommunicator

    from visualizer import runner
    from visualizer.routing import websocket_urlpatterns

    application = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    session = await sync_to_async(runner.create_session, thread_sensitive=False)(
        scenario_text("too-big.yaml"), "too-big.yaml")
    path = f"/ws/w/{session.follower_token}/"

    for origin, accepted in (("http://192.168.1.23:8000", True), ("http://[fd00::23]:8000", True),
                             ("http://evil.example", False)):
        comm = WebsocketCommunicator(application, path, headers=[
            (b"origin", origin.encode()), (b"host", b"192.168.1.23:8000")])
        connected, _ = await comm.connect()
        assert connected is accepted, origin
        if connected:
            frame = await comm.receive_from(timeout=5)
            assert frame   # the snapshot a follower gets on connecting
        await comm.disconnect()


def test_the_short_join_link_leads_to_the_follower_page_only(client, session):
    """/j/<code>/: the short link the join box shows large (and its QR encodes) redirects to the
    follower page; an unknown, a wrong-case or a wrong-length code is a 404, and the short link
    never leads to the presenter's page."""
    html = client.get(f"/s/{session.presenter_token}/").content.decode()
    code = session.follower_token[:8]
    assert f'data-join-short><a href="http://testserver/j/{code}/">testserver<wbr>/j/{code}/</a>' in html
    response = client.get(f"/j/{code}/")
    assert response.status_code == 302 and response["Location"] == f"/w/{session.follower_token}/"
    assert client.get(f"/j/{session.presenter_token[:8]}/").status_code == 404
    assert client.get(f"/j/{code[:7]}/").status_code == 404
    swapped = code.swapcase()
    if swapped != code:
        assert client.get(f"/j/{swapped}/").status_code == 404
