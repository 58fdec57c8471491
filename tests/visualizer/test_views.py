"""The scenario library page and the health check."""
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
    assert b"".join(response.streaming_content).startswith(b"/* Site-wide styles")
