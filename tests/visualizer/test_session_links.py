"""Nobody gets stranded (issue 24): every page reached from a session page keeps that page's
role and leads back to it. From the presenter's page, *see what changed* and *Compare two
configurations…* open the presenter's pages (the presenter token in the link's address, never
as text), whose "back to the session" is the presenter's page again; from a follower's page
they open the follower's, and nothing a follower is shown (its pages, the frames its
WebSocket receives) carries the presenter token. The links in the shared panels are relative
(``changes/``, ``compare/``): the browser resolves them against the page's own URL."""
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from channels.testing import WebsocketCommunicator
from django.urls import resolve

from engine.plugins import loader
from visualizer import changes, runner
from visualizer.asgi import application

ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]

# the plugin and the scenario of test_changes.py (AvoidNode keeps pods off one node; reloaded
# with the other node avoided, both pods land elsewhere, so the page shows *see what changed*)
from tests.visualizer.test_changes import PLUGIN, SCENARIO  # noqa: E402

# the role each page of a session serves (visualizer/urls.py)
ROLES = {"session-presenter": "presenter", "session-changes": "presenter", "session-compare": "presenter",
         "pod-history-presenter": "presenter", "session-targets": "presenter",
         "session-report": "presenter", "session-report-history": "presenter",
         "follower-report": "follower", "follower-report-history": "follower",
         "session-follower": "follower", "follower-changes": "follower", "follower-compare": "follower",
         "pod-history-follower": "follower", "follower-targets": "follower"}


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "avoid_node.py"
    path.write_text(PLUGIN.format(node="n2"))
    loader.load(str(path))
    yield path
    loader.unload(str(path))


@pytest.fixture
def reloaded(plugin):
    """A session whose plugin was edited and reloaded: its page shows *see what changed*."""
    session = runner.create_session(SCENARIO, "")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    plugin.write_text(PLUGIN.format(node="n1"))
    changes.reload_session(session.pk)
    return session


class Anchors(HTMLParser):
    def __init__(self):
        super().__init__()
        self.anchors = []

    def handle_starttag(self, tag, attrs):
        if tag == "a" and dict(attrs).get("href") is not None:
            self.anchors.append(dict(attrs))


def anchors(html: str) -> list:
    parser = Anchors()
    parser.feed(html)
    return parser.anchors


def follow(page_url: str, html: str, hook: str) -> str:
    """The path the browser opens for the one link marked ``hook`` on the page at ``page_url``."""
    found = [a for a in anchors(html) if hook in a]
    assert len(found) == 1, f"{hook}: {len(found)} links on {page_url}"
    return urlsplit(urljoin("http://testserver" + page_url, found[0]["href"])).path


def role_of(path: str):
    return ROLES.get(resolve(path).url_name)


def get(client, path) -> str:
    response = client.get(path)
    assert response.status_code == 200, path
    return response.content.decode()


@pytest.mark.django_db
def test_from_the_presenter_page_changes_and_compare_keep_the_presenter_role(reloaded, client):
    session = reloaded
    home = f"/s/{session.presenter_token}/"
    page = get(client, home)
    assert session.presenter_token not in page.replace(f"/ws/s/{session.presenter_token}/", "")  # never as text

    changes_path = follow(home, page, "data-changes-link")
    assert changes_path == f"/s/{session.presenter_token}/changes/" and role_of(changes_path) == "presenter"
    changes_page = get(client, changes_path)
    assert 'data-changed-pod="default/a"' in changes_page
    assert follow(changes_path, changes_page, "data-back-to-session") == home

    compare_path = follow(home, page, "data-compare-link")
    assert compare_path == f"/s/{session.presenter_token}/compare/" and role_of(compare_path) == "presenter"
    assert follow(compare_path, get(client, compare_path), "data-back-to-session") == home
    # the form posts to its own address: the result page still leads back to the presenter
    result = client.post(compare_path, {"kind": "disable", "plugin": "AvoidNode", "until": "1"})
    assert result.status_code == 200 and "data-what-changed" in result.content.decode()
    assert follow(compare_path, result.content.decode(), "data-back-to-session") == home

    # every other page the presenter's page links to keeps the role too: only the join link
    # (for the room) and the downloads (either token serves them) name the follower's pages
    for a in anchors(page):
        path = urlsplit(urljoin("http://testserver" + home, a["href"])).path
        if "data-follower-link" in a or "download" in a or not path.startswith(("/s/", "/w/")):
            continue
        assert role_of(path) == "presenter", a


@pytest.mark.django_db
def test_from_a_follower_page_only_follower_pages_are_reached(reloaded, client):
    session = reloaded
    home = f"/w/{session.follower_token}/"
    page = get(client, home)
    assert session.presenter_token not in page

    changes_path = follow(home, page, "data-changes-link")
    assert changes_path == f"/w/{session.follower_token}/changes/" and role_of(changes_path) == "follower"
    changes_page = get(client, changes_path)
    assert session.presenter_token not in changes_page
    assert follow(changes_path, changes_page, "data-back-to-session") == home

    compare_path = follow(home, page, "data-compare-link")
    assert compare_path == f"/w/{session.follower_token}/compare/" and role_of(compare_path) == "follower"
    compare_page = get(client, compare_path)
    assert session.presenter_token not in compare_page
    assert follow(compare_path, compare_page, "data-back-to-session") == home
    result = client.post(compare_path, {"kind": "disable", "plugin": "AvoidNode", "until": "1"}).content.decode()
    assert "data-what-changed" in result and session.presenter_token not in result
    assert follow(compare_path, result, "data-back-to-session") == home

    for a in anchors(page):
        path = urlsplit(urljoin("http://testserver" + home, a["href"])).path
        if path.startswith(("/s/", "/w/")):
            assert role_of(path) in ("follower", None) and session.presenter_token not in path, a
    report_path = follow(home, page, "data-report-link")
    assert report_path == f"/w/{session.follower_token}/report/" and role_of(report_path) == "follower"
    report_page = get(client, report_path)
    assert session.presenter_token not in report_page and "data-whatif" not in report_page
    assert follow(report_path, report_page, "data-back-to-session") == home
    history = get(client, f"/w/{session.follower_token}/history/?pod=default/a")
    assert session.presenter_token not in history
    assert f'href="{home}"' in history


def in_thread(fn):
    from asgiref.sync import sync_to_async
    return sync_to_async(fn, thread_sensitive=False)


async def drain(comm, into: list, quiet=0.5) -> None:
    """Everything ``comm`` receives until it has been quiet for ``quiet`` seconds."""
    while not await comm.receive_nothing(timeout=quiet):
        into.append(await comm.receive_from())


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_no_frame_sent_to_a_follower_carries_the_presenter_token(plugin):
    session = await in_thread(runner.create_session)(SCENARIO, "")
    p = WebsocketCommunicator(application, f"/ws/s/{session.presenter_token}/", headers=ORIGIN)
    f = WebsocketCommunicator(application, f"/ws/w/{session.follower_token}/", headers=ORIGIN)
    assert (await p.connect())[0] and (await f.connect())[0]
    to_follower, to_presenter = [], []
    await f.send_json_to({"action": "view", "find": "n1"})      # the follower's own view
    await f.send_json_to({"action": "filter", "pod": "default/a"})    # and its own event log
    for action in ({"action": "step-event"}, {"action": "step-cycle"},
                   {"action": "run-until", "until": "1"}, {"action": "back"}):
        await p.send_json_to(action)
        await drain(p, to_presenter)
        await drain(f, to_follower)
    plugin.write_text(PLUGIN.format(node="n1"))                     # a reload: the summary's link
    await p.send_json_to({"action": "reload-plugins"})
    await drain(p, to_presenter)
    await drain(f, to_follower)
    await p.disconnect()
    await f.disconnect()

    frames = "\n".join(to_follower)
    assert "data-reload-summary" in frames and 'href="changes/" data-changes-link' in frames
    assert 'href="compare/" data-compare-link' in frames
    assert session.presenter_token not in frames
    # the frames are role-neutral: the presenter's own frames name no token either
    assert not any(session.presenter_token in m or session.follower_token in m for m in to_presenter)
    assert not any(session.follower_token in m for m in to_follower)
