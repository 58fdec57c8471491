"""PostgreSQL (DATABASE_URL=postgres://...) as well as the embedded SQLite.

scripts/test.sh runs the suite's database tests a second time with DATABASE_URL pointing at a
throw-away PostgreSQL server (tests/pgserver.py): every test of tests/visualizer but the browser
ones then creates sessions, steps, injects, travels, rebuilds after ``runner.reset()``, posts
the report's what-ifs, follows join links and exports on PostgreSQL. The tests run in both runs: settings, a migration of a fresh PostgreSQL database (its own
throw-away server), and what could differ between the backends (jsonb's key order, LIKE's case).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from visualizer import runner
from visualizer.models import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pgserver  # noqa: E402  (tests/pgserver.py)

ROOT = Path(__file__).resolve().parents[2]

def on_postgres() -> bool:
    return connection.vendor == "postgresql"


def settings_databases(env: dict) -> dict:
    code = ("import json, django; django.setup(); from django.conf import settings; "
            "d = settings.DATABASES['default']; print(json.dumps({k: d[k] for k in ('ENGINE', 'NAME', 'HOST', 'PORT', 'USER')}))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_PATH")},
                              "DJANGO_SETTINGS_MODULE": "visualizer.settings", **env})
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_database_url_selects_the_database_and_sqlite_stays_the_default(tmp_path):
    assert settings_databases({}) == {"ENGINE": "django.db.backends.sqlite3", "NAME": str(ROOT / "db.sqlite3"),
                                      "HOST": "", "PORT": "", "USER": ""}
    assert settings_databases({"DATABASE_PATH": str(tmp_path / "a.sqlite3")})["NAME"] == str(tmp_path / "a.sqlite3")
    assert settings_databases({"DATABASE_URL": "", "DATABASE_PATH": "/x/b.sqlite3"})["NAME"] == "/x/b.sqlite3"
    for scheme in ("postgres", "postgresql"):
        assert settings_databases({"DATABASE_URL": f"{scheme}://user@db.example:5433/viz"}) == {
            "ENGINE": "django.db.backends.postgresql", "NAME": "viz", "HOST": "db.example", "PORT": 5433,
            "USER": "user"}
    assert settings_databases({"DATABASE_URL": f"sqlite:///{tmp_path}/c.sqlite3"})["NAME"] == f"{tmp_path}/c.sqlite3"


def test_an_unknown_database_url_scheme_names_the_variable():
    run = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "DJANGO_SETTINGS_MODULE": "visualizer.settings",
                                                     "DATABASE_URL": "nosuchdb://h/x"})
    assert run.returncode != 0
    assert "DATABASE_URL: Scheme 'nosuchdb://' is unknown" in run.stderr


@pytest.mark.skipif(not pgserver.available(), reason="PostgreSQL's initdb/pg_ctl are not installed")
def test_migrations_run_on_a_fresh_postgresql_database():
    """manage.py migrate (what scripts/run.sh and the Dockerfile run) on an empty PostgreSQL
    database, then `migrate --check` finds nothing left to apply or to make."""
    with pgserver.PostgresServer() as server:
        env = {**os.environ, "DATABASE_URL": server.url}
        for args in (["migrate", "--noinput"], ["migrate", "--check"], ["makemigrations", "--check", "--dry-run"]):
            run = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True,
                                 timeout=120, env=env)
            assert run.returncode == 0, (args, run.stdout, run.stderr)
        import psycopg
        with psycopg.connect(server.url.replace("postgres://", "postgresql://")) as conn:
            columns = dict(conn.execute("select column_name, data_type from information_schema.columns "
                                        "where table_name = 'visualizer_session'").fetchall())
    assert columns["injections"] == "jsonb" and columns["head_clock_us"] == "bigint"


# --------------------------------------------------------------- on PostgreSQL (scripts/test.sh)

@pytest.mark.django_db
def test_the_postgresql_run_really_uses_postgresql():
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        pytest.skip("DATABASE_URL does not point at PostgreSQL")
    assert on_postgres()
    with connection.cursor() as cursor:
        cursor.execute("select version()")
        assert cursor.fetchone()[0].startswith("PostgreSQL")


NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n2", "labels": {"zone": "b", "a": "1", "disk-type": "ssd", "Z": "z"}},
        "status": {"allocatable": {"pods": "110", "memory": "8Gi", "cpu": "8"}}}


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "late", "namespace": "default", "labels": {"zz": "1", "app": "web", "B": "x"}},
       "spec": {"nodeSelector": {"zone": "b", "a": "1"},
                "containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi", "cpu": "1"}}}]}}


@pytest.mark.django_db
def test_a_session_with_injections_rebuilds_exactly_with_its_keys_in_order(scenario_text, client):
    """PostgreSQL keeps JSONField values as jsonb, which reorders an object's keys: a session
    rebuilt from its row (after a restart, on another process) must still be the live one,
    key order included (what the page renders), not only equal as sorted JSON."""
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    runner.control(session.pk, {"action": "run-until", "until": 1})
    runner.control(session.pk, {"action": "inject", "form": "yaml", "verb": "create", "manifest": json.dumps(NODE)})
    runner.control(session.pk, {"action": "inject", "form": "yaml", "verb": "create", "manifest": json.dumps(POD)})
    runner.control(session.pk, {"action": "run-until", "until": 3})

    def view():
        with runner.open_live(session.pk) as live:
            return json.dumps({"state": live.stepper.state(), "events": live.revealed()})   # key order kept

    page = reverse("session-presenter", args=[session.presenter_token])
    live_view, live_page = view(), client.get(page).content
    runner.reset()
    assert view() == live_view
    assert client.get(page).content == live_page
    stored = Session.objects.get(pk=session.pk).injections
    assert [i["body"]["metadata"]["name"] for i in stored] == ["n2", "late"]


@pytest.mark.django_db
def test_a_join_code_is_matched_case_sensitively_on_any_database(scenario_text, client):
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    Session.objects.filter(pk=session.pk).update(follower_token="abcdEFGH" + "x" * 35)
    assert client.get("/j/abcdEFGH/").status_code == 302
    assert client.get("/j/ABCDefgh/").status_code == 404
    assert client.get("/j/abcdefgh/").status_code == 404


@pytest.mark.django_db
def test_a_manifest_with_a_nul_character_is_refused_alike_on_both_databases(scenario_text):
    """jsonb cannot hold \\u0000 (PostgreSQL raises DataError); SQLite could: the form refuses it
    on both, with the reason, and the session is unchanged."""
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    manifest = 'kind: Pod\nmetadata: {name: nul, namespace: default, annotations: {x: "a\\0b"}}\nspec: {containers: []}\n'
    with pytest.raises(runner.ControlError) as info:
        runner.control(session.pk, {"action": "inject", "form": "yaml", "verb": "create", "manifest": manifest})
    assert "NUL character" in str(info.value.problems)
    assert Session.objects.get(pk=session.pk).injections == []
    fine = 'kind: Pod\nmetadata: {name: ok, namespace: default, annotations: {x: "a\\\\u0000b"}}\nspec: {containers: []}\n'
    runner.control(session.pk, {"action": "inject", "form": "yaml", "verb": "create", "manifest": fine})
    assert Session.objects.get(pk=session.pk).injections[0]["body"]["metadata"]["annotations"] == {"x": "a\\u0000b"}


@pytest.mark.django_db
def test_an_extender_reply_holding_a_nul_character_is_stored_and_read_back_exactly(scenario_text):
    """What a scheduler extender answered is recorded as it came (a replay must see the same
    reply), NUL characters included, which PostgreSQL's jsonb cannot hold as text."""
    from visualizer import runner
    from visualizer.models import Session
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    records = [{"call": 0, "extender": 0, "verb": "filter", "url": "http://127.0.0.1:1/filter", "request": "ab",
                "status": 200, "body": '{"NodeNames": ["n1"]}\x00\x00garbage \u00e9', "error": None,
                "timedOut": False, "latency": 0.01},
               {"call": 1, "body": "plain", "error": "x\x00y", "nested": [{"$other": "\x00"}]}]
    Session.objects.filter(pk=session.pk).update(extender_records=records)
    assert Session.objects.get(pk=session.pk).extender_records == records
    row = Session.objects.get(pk=session.pk)
    row.extender_records = records[::-1]
    row.save()
    assert Session.objects.get(pk=session.pk).extender_records == records[::-1]
