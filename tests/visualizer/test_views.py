"""The scenario library page and the health check."""
import json
import textwrap

import pytest


@pytest.fixture
def fixtures_dir(tmp_path, settings):
    """An empty scenario directory that the library page reads instead of fixtures/."""
    directory = tmp_path / "fixtures"
    directory.mkdir()
    settings.SCENARIO_FIXTURES_DIR = directory
    return directory


def write(directory, filename, text):
    (directory / filename).write_text(textwrap.dedent(text), encoding="utf-8")


def test_library_lists_a_scenario_with_its_metadata(client, fixtures_dir):
    write(
        fixtures_dir,
        "backoff.yaml",
        """\
        kind: Scenario
        metadata:
          name: backoff-growth
          title: Backoff doubles per attempt
          description: A pod that never fits waits longer after each attempt.
        objects: []
        """,
    )

    response = client.get("/")

    assert response.status_code == 200
    assert [t.name for t in response.templates][:2] == ["visualizer/library.html", "base.html"]
    html = response.content.decode()
    assert 'data-scenario="backoff-growth"' in html
    assert "Backoff doubles per attempt" in html
    assert "A pod that never fits waits longer after each attempt." in html


def test_a_library_card_shows_the_first_paragraph_and_folds_the_full_narrative(client, fixtures_dir):
    write(
        fixtures_dir,
        "lesson.yaml",
        """\
        kind: Scenario
        metadata:
          name: lesson
          title: A long lesson
          description: |
            **Mechanism: the first paragraph.**

            Second paragraph, only in the full narrative.

            | pod | node |
            |---|---|
            | `a` | n1 |
        """,
    )
    write(fixtures_dir, "short.yaml", "kind: Scenario\nmetadata: {name: short, description: One paragraph only.}\n")

    html = client.get("/").content.decode()

    card = html[html.index('data-scenario="lesson"'):html.index('data-scenario="short"')]
    summary = card[card.index("data-summary"):card.index("<details")]
    assert "<strong>Mechanism: the first paragraph.</strong>" in summary
    assert "Second paragraph" not in summary
    narrative = card[card.index("<details"):card.index("</details>")]
    assert "<summary>Read the full narrative</summary>" in narrative
    assert "<p>Second paragraph, only in the full narrative.</p>" in narrative
    assert "<td><code>a</code></td>" in narrative
    # a description of one paragraph has nothing more to unfold
    short = html[html.index('data-scenario="short"'):]
    assert "One paragraph only." in short and "<details" not in short


def test_the_upload_form_comes_before_the_lessons(client, fixtures_dir):
    for n in range(5):
        write(fixtures_dir, f"{n}.yaml", f"kind: Scenario\nmetadata: {{name: s{n}, description: text}}\n")

    html = client.get("/").content.decode()

    assert html.index('data-form="scenario-upload"') < html.index('data-scenario="s0"')


def test_library_lists_scenarios_in_file_name_order(client, fixtures_dir):
    write(fixtures_dir, "b.yaml", "kind: Scenario\nmetadata: {name: second}\n")
    write(fixtures_dir, "a.yaml", "kind: Scenario\nmetadata: {name: first}\n")
    write(fixtures_dir, "notes.txt", "not a scenario")

    html = client.get("/").content.decode()

    assert html.index('data-scenario="first"') < html.index('data-scenario="second"')
    assert "notes.txt" not in html


def test_broken_yaml_shows_an_error_naming_the_file(client, fixtures_dir):
    write(fixtures_dir, "good.yaml", "kind: Scenario\nmetadata: {name: good}\n")
    write(fixtures_dir, "broken.yaml", "kind: Scenario\nmetadata: [unclosed\n")

    response = client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-scenario="good"' in html
    assert 'data-scenario-error="broken.yaml"' in html
    assert "broken.yaml: while parsing" in html


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- just\n- a list\n", "expected a mapping at the top level, got list"),
        ("kind: Scenario\nmetadata: {title: No name}\n", "metadata.name is required"),
    ],
)
def test_scenario_without_a_name_shows_an_error(client, fixtures_dir, text, message):
    write(fixtures_dir, "odd.yaml", text)

    html = client.get("/").content.decode()

    assert "data-scenario=" not in html
    assert f"odd.yaml: {message}" in html


def test_library_without_scenarios_says_so(client, fixtures_dir):
    response = client.get("/")

    assert response.status_code == 200
    assert "No scenario files yet" in response.content.decode()


def test_healthz(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.content == b"ok"


def test_static_css_is_served(client):
    response = client.get("/static/css/app.css")

    assert response.status_code == 200
    assert b"".join(response.streaming_content).startswith(b"/* The kube-scheduler visualizer's stylesheet")


# ---------------------------------------------------------------------- sessions

from visualizer.models import Session  # noqa: E402


@pytest.mark.django_db
def test_library_entries_have_a_start_button_posting_the_fixture(client, scenarios_dir):
    html = client.get("/").content.decode()

    assert 'data-scenario="too-big"' in html
    assert html.count('data-action="start"') == len(list(scenarios_dir.glob("*.yaml")))
    assert 'name="fixture" value="too-big.yaml"' in html
    assert 'data-form="scenario-upload"' in html and 'name="scenario"' in html


@pytest.mark.django_db
def test_library_renders_descriptions_as_safe_markdown(client, scenarios_dir):
    html = client.get("/").content.decode()

    assert "<code>small</code> fits on <strong>n1</strong>" in html
    assert "&lt;b&gt;HTML&lt;/b&gt; in a narrative is shown as text" in html


@pytest.mark.django_db
def test_starting_a_fixture_creates_a_session_and_redirects_the_presenter(client, scenarios_dir):
    response = client.post("/sessions/", {"fixture": "too-big.yaml"})

    session = Session.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/s/{session.presenter_token}/"
    assert session.source == "too-big.yaml"
    assert session.scenario_text == (scenarios_dir / "too-big.yaml").read_text()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["nope.yaml", "../settings.py", "/etc/passwd"])
def test_only_library_files_can_be_started(client, scenarios_dir, name):
    response = client.post("/sessions/", {"fixture": name})

    assert response.status_code == 404
    assert Session.objects.count() == 0
    assert f"{name}: no such scenario in the library" in response.content.decode()


@pytest.mark.django_db
def test_a_pasted_scenario_starts_a_session(client, scenario_text):
    response = client.post("/sessions/", {"scenario": scenario_text("backoff.yaml")})

    session = Session.objects.get()
    assert response["Location"] == f"/s/{session.presenter_token}/"
    assert session.title == "Backoff doubles per attempt"
    assert session.source == ""


@pytest.mark.django_db
def test_an_uploaded_file_starts_a_session(client, scenarios_dir):
    with open(scenarios_dir / "preemption.yaml", "rb") as f:
        response = client.post("/sessions/", {"scenario_file": f})

    assert response.status_code == 302
    assert Session.objects.get().scenario_name == "preemption"


@pytest.mark.django_db
def test_an_invalid_scenario_shows_every_problem_with_its_place_and_creates_nothing(client):
    text = (
        "kind: Scenario\n"
        "metadata: {name: Broken_Example}\n"
        "simulation: {bindDuration: 2 seconds}\n"
        "objects:\n"
        "  - {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, resources: {requests: {cpu: 12x}}}]}}\n"
    )

    response = client.post("/sessions/", {"scenario": text})

    assert response.status_code == 400
    assert Session.objects.count() == 0
    html = response.content.decode()
    assert html.count("data-problem") == 3
    assert "metadata.name: &quot;Broken_Example&quot; must match" in html
    assert "simulation.bindDuration: &quot;2 seconds&quot; is not a duration" in html
    assert "objects[0].spec.containers[0].resources.requests.cpu: &quot;12x&quot; is not a quantity" in html
    assert "Broken_Example}" in html  # the pasted text is kept for fixing


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "problem"), [
    ("", "the scenario is empty"),
    ("kind: Scenario\nmetadata: [unclosed\n", "line 3, column 1: not valid YAML"),
])
def test_empty_or_unreadable_scenarios_are_refused(client, text, problem):
    response = client.post("/sessions/", {"scenario": text})

    assert response.status_code == 400
    assert problem in response.content.decode()
    assert Session.objects.count() == 0


def test_starting_a_session_needs_a_post(client):
    assert client.get("/sessions/").status_code == 405


@pytest.fixture
def session(db, scenario_text):
    from visualizer import runner
    return runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")


def test_presenter_page_has_every_hook(client, session):
    from visualizer import runner
    runner.control(session.pk, {"action": "step-event"})   # the first step loads the cluster

    response = client.get(f"/s/{session.presenter_token}/")

    assert response.status_code == 200
    html = response.content.decode()
    for hook in ('data-queue="activeQ"', 'data-queue="backoffQ"', 'data-queue="unschedulablePods"',
                 'data-node="n1"', "data-clock", 'data-action="step-event"', 'data-action="step-point"',
                 'data-action="step-cycle"', 'data-action="play"', 'data-action="pause"', 'data-action="back"',
                 'data-form="run-until"', 'data-panel="preemption"', "data-follower-link", "data-copy-presenter-link",
                 "data-follower-qr"):
        assert hook in html, hook
    assert f'ws-connect="/ws/s/{session.presenter_token}/"' in html
    # a projected page never prints the link that controls the session
    assert html.count(session.presenter_token) == 1   # only in the WebSocket path it connects to
    assert f"/w/{session.follower_token}/" in html
    assert "A pod too big for the cluster" in html
    assert "<code>big</code> asks for 4 CPUs" in html


def test_before_the_first_step_the_page_says_how_to_start(client, session):
    html = client.get(f"/s/{session.presenter_token}/").content.decode()

    assert "Nothing has happened yet" in html
    assert 'data-node="' not in html


def test_follower_page_watches_without_controls_or_the_presenter_link(client, session):
    response = client.get(f"/w/{session.follower_token}/")

    assert response.status_code == 200
    html = response.content.decode()
    assert f'ws-connect="/ws/w/{session.follower_token}/"' in html
    assert session.presenter_token not in html
    assert 'data-action="step-event"' not in html and "data-follower-link" not in html
    assert 'data-queue="activeQ"' in html


def test_a_token_opens_only_its_own_page(client, session):
    assert client.get(f"/s/{session.follower_token}/").status_code == 404
    assert client.get(f"/w/{session.presenter_token}/").status_code == 404
    assert client.get("/s/not-a-token/").status_code == 404


def test_the_page_shows_where_the_session_is(client, session):
    from visualizer import runner
    runner.control(session.pk, {"action": "run-until", "until": "1"})

    html = client.get(f"/s/{session.presenter_token}/").content.decode()

    assert '<span class="clock" data-clock>1</span>' in html
    assert 'data-pod="default/small" data-phase="Running"' in html
    unschedulable = html.split('data-queue="unschedulablePods"')[1].split("</ol>")[0]
    assert 'data-pod="default/big"' in unschedulable
    assert "NodeResourcesFit" in unschedulable


def test_metrics_expose_the_servers_figures(client, session):
    response = client.get("/metrics")

    assert response.status_code == 200
    text = response.content.decode()
    assert "visualizer_sessions 1.0" in text
    assert "visualizer_open_websockets" in text
    assert "visualizer_frames_pushed_total" in text


# ---------------------------------------------------------------------- the served docs

@pytest.mark.parametrize(("url", "heading"), [
    ("/docs/scenario-format/", "The scenario file"),
    ("/docs/lessons/", "lesson"),
    ("/docs/writing-plugins/", "plugin"),
])
def test_the_docs_are_served_as_html(client, url, heading):
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1 id=" in html and heading.lower() in html.lower()
    assert 'href="/docs/' in html                     # links between pages point to the app
    assert "<script" not in html.split("<main", 1)[1]  # the sanitized page has no script


def test_doc_links_become_app_paths_and_anchors_match_headings(client):
    html = client.get("/docs/ui-tour/").content.decode()
    assert 'href="/docs/scenario-format/' in html or 'href="/docs/lessons/' in html
    assert 'src="/docs/images/' in html
    assert client.get("/docs/images/queues.png")["Content-Type"] == "image/png"
    for anchor in ("presenter-and-follower-links", "timeline-and-time-travel"):
        assert f'id="{anchor}"' in html and f'href="#{anchor}"' in html


def test_the_library_and_the_upload_form_link_the_docs(client, fixtures_dir):
    html = client.get("/").content.decode()
    upload = html.split('id="upload"', 1)[1].split("</aside>", 1)[0]
    for page in ("scenario-format", "lessons", "writing-plugins"):
        assert f'href="/docs/{page}/"' in upload
    assert 'href="/docs/"' in html


@pytest.mark.parametrize("url", ["/docs/nope/", "/docs/..%2Fsettings/", "/docs/examples/..%2F..%2Fmanage.py",
                                 "/docs/images/x.svg", "/docs/engine/scheduler.py", "/docs/examples/nope.yaml"])
def test_nothing_outside_docs_is_served(client, url):
    assert client.get(url).status_code == 404


def test_the_examples_and_images_folders_are_listed(client):
    examples = client.get("/docs/examples/").content.decode()
    assert 'href="/docs/examples/gpu.yaml"' in examples
    images = client.get("/docs/images/").content.decode()
    assert 'href="/docs/images/queues.png"' in images


def test_an_example_is_served_as_text(client):
    response = client.get("/docs/examples/gpu.yaml")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert "kind: Scenario" in response.content.decode()


def test_the_presenter_page_shows_a_qr_code_of_the_follower_link(client, session):
    import segno

    html = client.get(f"/s/{session.presenter_token}/").content.decode()
    qr = html.split("data-follower-qr>", 1)[1].split("</svg>", 1)[0] + "</svg>"
    # the short join link (/j/<code>/, which leads to the follower page), encoded, and nothing
    # else; drawn from its viewBox so the join overlay can make it as large as it likes
    join_url = f"http://testserver/j/{session.follower_token[:8]}/"
    expected = segno.make(join_url, error="m").svg_inline(scale=5, border=2, dark="#111", light="#fff",
                                                           omitsize=True, title="QR code of the follower link")
    assert qr == expected and 'viewBox="0 0 ' in qr
    assert 'class="segno"' in qr and "<script" not in qr


def test_the_names_the_fields_offer_are_fetched_not_pushed_in_frames(client, session):
    """The targets panel carries a version only; /s|w/<token>/targets/ gives the datalists of
    the pods and nodes there are at the moment shown, for presenters and followers alike."""
    import re
    from visualizer import presenters, runner
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    with runner.open_live(session.pk) as live:
        panels = dict(presenters.render_panels(live))
        pods = sorted(live.stepper.state()["pods"])
        nodes = sorted(live.stepper.engine.nodes)
    panel = panels["panel-targets"]
    assert "<option" not in panel and len(panel) < 400
    version = re.search(r'data-targets="([0-9a-f]+)"', panel).group(1)
    for url in (f"/s/{session.presenter_token}/targets/", f"/w/{session.follower_token}/targets/"):
        response = client.get(url, {"v": version})
        assert response.status_code == 200 and response["X-Targets-Version"] == version
        html = response.content.decode()
        assert re.findall(r'<datalist id="pod-keys">(.*?)</datalist>', html) == [
            "".join(f'<option value="{k}"></option>' for k in pods)]
        assert re.findall(r'<datalist id="node-names">(.*?)</datalist>', html) == [
            "".join(f'<option value="{n}"></option>' for n in nodes)]
        assert pods and nodes
    # a stale version: the names as they are now, with their version
    response = client.get(f"/s/{session.presenter_token}/targets/", {"v": "0123"})
    assert response["X-Targets-Version"] == version
    # the version follows the names: a pod more, another version
    runner.control(session.pk, {"action": "inject", "form": "yaml", "verb": "create", "manifest": json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "pause"}]}})})
    with runner.open_live(session.pk) as live:
        later = dict(presenters.render_panels(live))["panel-targets"]
    assert re.search(r'data-targets="([0-9a-f]+)"', later).group(1) != version
    assert "default/late" in client.get(f"/w/{session.follower_token}/targets/").content.decode()
    assert client.get("/s/nope/targets/").status_code == 404
