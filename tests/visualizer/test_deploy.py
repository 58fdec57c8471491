"""The deployment of issue 27 (docker-compose.yml, deploy/): the compose file's services, health
checks and wiring, read with PyYAML; and the shipped nginx configuration (deploy/nginx.conf,
run by Debian's nginx through tests/proxy.py) in front of two Daphne processes sharing a
throw-away PostgreSQL and redis-server (tests/stack.py), all on loopback.

Docker itself is not run: `docker compose config` is checked only where the compose plugin is
installed (it needs no daemon).
"""
import contextlib
import http.client
import http.cookiejar
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import dj_database_url
import pytest
import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import proxy as proxy_module  # noqa: E402  (tests/proxy.py)
import stack as stack_module  # noqa: E402  (tests/stack.py)

COMPOSE = ROOT / "docker-compose.yml"
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
HEALTHCHECK = ROOT / "deploy" / "healthcheck.py"
FIXTURE = "01-activeq-order.yaml"
TIMEOUT = 15


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def interpolate(value: str, env: dict) -> str:
    """Compose's variable substitution, for the forms this file uses: ${VAR}, ${VAR:-default},
    ${VAR:?message} (an error when VAR is unset or empty)."""
    def one(match):
        name, op, arg = match.group(1), match.group(2), match.group(3) or ""
        got = env.get(name, "")
        if op == ":-":
            return got or arg
        if op == ":?" and not got:
            raise KeyError(f"{name}: {arg}")
        return got
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)([^}]*))?\}", one, value)


def environment(service: dict, env: dict) -> dict:
    return {k: interpolate(str(v), env) for k, v in service.get("environment", {}).items()}


def command_text(service: dict) -> str:
    command = service.get("command", "")
    return " ".join(command) if isinstance(command, list) else command


def healthcheck_text(service: dict) -> str:
    test = service["healthcheck"]["test"]
    return " ".join(test) if isinstance(test, list) else test


# --- docker-compose.yml -----------------------------------------------------------------------

def test_compose_has_the_services_of_a_deployment():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", "migrate", "web", "proxy"}
    assert services["postgres"]["image"].startswith("postgres:15")
    assert services["redis"]["image"].startswith("redis:7")
    assert re.fullmatch(r"nginx:1\.(2[7-9]|[3-9]\d)(\.\d+)?", services["proxy"]["image"]), \
        "the `resolve` parameter of deploy/nginx.conf needs open-source nginx 1.27.3 or later"
    for name in ("migrate", "web"):
        assert services[name]["build"]["context"] == "."
        assert services[name]["image"] == services["web"]["image"]      # one image for both


def test_every_long_running_service_has_a_health_check():
    services = compose()["services"]
    for name in ("postgres", "redis", "web", "proxy"):
        check = services[name].get("healthcheck")
        assert check and check.get("test") and not check.get("disable"), f"{name}: no healthcheck"
    assert "pg_isready" in healthcheck_text(services["postgres"])
    assert "redis-cli ping" in healthcheck_text(services["redis"])
    # the slim image has no curl: a script with the standard library
    web = healthcheck_text(services["web"])
    assert "python deploy/healthcheck.py" in web and "/healthz" in web
    assert HEALTHCHECK.is_file()
    # nginx's own endpoint, answered without a web process (the nginx image has curl)
    assert "/proxy-healthz" in healthcheck_text(services["proxy"])
    assert "location = /proxy-healthz" in NGINX_CONF.read_text()


def test_postgres_keeps_its_data_in_a_named_volume():
    data = compose()
    volumes = [v.split(":") for v in data["services"]["postgres"]["volumes"]]
    assert ["postgres-data", "/var/lib/postgresql/data"] in volumes
    assert "postgres-data" in data["volumes"]


def test_migrations_run_once_before_any_web_process():
    services = compose()["services"]
    migrate = services["migrate"]
    assert command_text(migrate) == "python manage.py migrate --noinput"
    assert migrate.get("restart", "no") == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    depends = services["web"]["depends_on"]
    assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert depends["postgres"]["condition"] == "service_healthy"
    assert depends["redis"]["condition"] == "service_healthy"
    assert "migrate" not in command_text(services["web"])


def test_web_is_scalable_and_reached_only_through_the_proxy():
    services = compose()["services"]
    web = services["web"]
    assert "ports" not in web, "web publishes no port (several replicas could not share it)"
    assert "container_name" not in web, "a fixed container name prevents --scale web=N"
    command = command_text(web)
    assert command.startswith("daphne ") and "-b 0.0.0.0 -p 8000" in command
    assert "visualizer.asgi:application" in command
    assert "--proxy-headers" in command                # the client's address from X-Forwarded-For
    # nginx's upstream is the service's name and daphne's port
    assert re.search(r"^\s*server web:8000 resolve\b", NGINX_CONF.read_text(), re.MULTILINE)
    proxy = services["proxy"]
    assert proxy["depends_on"]["web"]["condition"] == "service_healthy"
    published = [interpolate(str(p), {}) for p in proxy["ports"]]
    assert published == ["8000:80"]
    assert re.search(r"^\s*listen 80;", NGINX_CONF.read_text(), re.MULTILINE)
    assert "./deploy/nginx.conf:/etc/nginx/nginx.conf:ro" in proxy["volumes"]


def test_web_settings_for_production():
    services = compose()["services"]
    env = environment(services["web"], {"DJANGO_SECRET_KEY": "k" * 50})
    assert env["DJANGO_DEBUG"] == "0"
    assert env["DJANGO_SECRET_KEY"] == "k" * 50
    with pytest.raises(KeyError, match="DJANGO_SECRET_KEY"):     # required, as before
        environment(services["web"], {})
    assert env["DJANGO_ALLOWED_HOSTS"].split(",")[0] == "localhost"
    assert environment(services["web"], {"DJANGO_SECRET_KEY": "k", "DJANGO_ALLOWED_HOSTS": "a.example"})[
        "DJANGO_ALLOWED_HOSTS"] == "a.example"
    # migrate runs with the same settings (the same database)
    assert environment(services["migrate"], {"DJANGO_SECRET_KEY": "k"}) == \
        environment(services["web"], {"DJANGO_SECRET_KEY": "k"})


@pytest.mark.parametrize("password", [None, "s3cret"])
def test_database_and_redis_urls_name_the_services(password):
    services = compose()["services"]
    env = {"DJANGO_SECRET_KEY": "k"} | ({"POSTGRES_PASSWORD": password} if password else {})
    web = environment(services["web"], env)
    postgres = environment(services["postgres"], env)
    database = dj_database_url.parse(web["DATABASE_URL"])
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["HOST"], database["PORT"]) == ("postgres", 5432)
    assert database["USER"] == postgres["POSTGRES_USER"]
    assert database["PASSWORD"] == postgres["POSTGRES_PASSWORD"] == (password or "visualizer")
    assert database["NAME"] == postgres["POSTGRES_DB"]
    redis = urllib.parse.urlsplit(web["REDIS_URL"])
    assert (redis.scheme, redis.hostname, redis.port or 6379) == ("redis", "redis", 6379)


def test_the_proxy_lets_every_request_the_app_accepts_through():
    size = re.search(r"^\s*client_max_body_size (\d+)m;", NGINX_CONF.read_text(), re.MULTILINE)
    assert size, "deploy/nginx.conf sets client_max_body_size in MiB"
    limit = int(size.group(1)) * 1048576
    from visualizer.views import MAX_UPLOAD_BYTES
    assert limit >= settings.DATA_UPLOAD_MAX_MEMORY_SIZE >= MAX_UPLOAD_BYTES


def _docker_compose() -> str | None:
    if shutil.which("docker") is None:
        return "docker is not installed"
    try:
        version = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`docker compose version` failed: {e}"
    if version.returncode != 0:
        return "the docker compose plugin is not installed here (`docker compose version` fails)"
    return None


def test_docker_compose_config_accepts_the_file():
    reason = _docker_compose()
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, DJANGO_SECRET_KEY="k" * 50)
    result = subprocess.run(["docker", "compose", "-f", str(COMPOSE), "config", "-q"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# --- deploy/healthcheck.py ----------------------------------------------------------------------

@pytest.mark.parametrize("allowed, host", [
    ("localhost,127.0.0.1,[::1]", "localhost"),
    ("scheduler.example.org", "scheduler.example.org"),
    (" .example.org , other", "example.org"),
    ("*", "localhost"),
    ("", "localhost"),
])
def test_the_health_check_names_an_allowed_host(allowed, host):
    sys.path.insert(0, str(HEALTHCHECK.parent))
    try:
        import healthcheck
    finally:
        sys.path.remove(str(HEALTHCHECK.parent))
    assert healthcheck.probe_host(allowed) == host


# --- deploy/nginx.conf, run by nginx in front of two Daphne processes ---------------------------

def _missing() -> str | None:
    return proxy_module.available() or stack_module.available()


needs_stack = pytest.mark.skipif(_missing() is not None, reason=f"{_missing()} (needed to run the proxy)")


@pytest.fixture(scope="module")
def deployment():
    with stack_module.Stack(processes=2) as stack, proxy_module.NginxProxy(stack.urls) as proxy:
        yield stack, proxy


def get(url, timeout=TIMEOUT, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def post_json(url, body, timeout=60):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def create_session(proxy):
    status, _, body = post_json(f"{proxy.url}/api/sessions", {"fixture": FIXTURE})
    assert status == 201, body[:2000]
    return json.loads(body)


def first_frame(proxy, path, origin=None):
    from websockets.sync.client import connect
    with connect(f"{proxy.ws_url}{path}", origin=origin or proxy.url, open_timeout=TIMEOUT,
                 close_timeout=2) as ws:
        return ws.recv(timeout=TIMEOUT)


def served(stack, what: str) -> list[int]:
    """How many requests each web process logged (Daphne's access log, in its log file)."""
    return [w.tail(n=10**8).count(what) for w in stack.web]


@needs_stack
def test_health_checks_through_the_proxy(deployment):
    stack, proxy = deployment
    assert get(f"{proxy.url}/healthz")[::2] == (200, b"ok")
    assert get(f"{proxy.url}/proxy-healthz")[::2] == (200, b"ok\n")
    # deploy/healthcheck.py, as the web service's healthcheck runs it, against one process
    env = dict(os.environ, DJANGO_ALLOWED_HOSTS="localhost,127.0.0.1")
    run = subprocess.run([sys.executable, str(HEALTHCHECK), f"{stack.urls[0]}/healthz"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    # a host the process does not allow: Django answers 400, the check fails
    env["DJANGO_ALLOWED_HOSTS"] = "scheduler.example.org"
    run = subprocess.run([sys.executable, str(HEALTHCHECK), f"{stack.urls[0]}/healthz"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 1 and "400" in run.stderr


@needs_stack
def test_library_page_and_static_files_through_the_proxy(deployment):
    _, proxy = deployment
    status, headers, body = get(f"{proxy.url}/")
    assert status == 200, body[:2000]
    page = body.decode()
    assert "Content-Security-Policy" in headers
    assert FIXTURE in page
    styles = re.findall(r'href="(/static/[^"]+\.css)"', page)
    assert styles
    status, headers, _ = get(f"{proxy.url}{styles[0]}")
    assert status == 200 and headers["Content-Type"].startswith("text/css")


@needs_stack
def test_a_session_through_the_proxy_and_its_socket(deployment):
    _, proxy = deployment
    created = create_session(proxy)
    # the links name the proxy's address, port included (nginx passes the browser's Host on)
    assert created["follower_url"].startswith(f"{proxy.url}/w/")
    assert created["presenter_api"].startswith(f"{proxy.url}/api/s/")
    status, _, body = get(created["follower_url"])
    assert status == 200 and b"panel-header" in body
    frame = first_frame(proxy, f"/ws/w/{created['follower_token']}/")
    assert 'data-panel="header"' in frame and 'data-position="0"' in frame


@needs_stack
def test_the_socket_origin_check_holds_behind_the_proxy(deployment):
    from websockets.exceptions import InvalidStatus
    _, proxy = deployment
    token = create_session(proxy)["follower_token"]
    with pytest.raises(InvalidStatus) as refused:
        first_frame(proxy, f"/ws/w/{token}/", origin="http://elsewhere.example")
    assert refused.value.response.status_code == 403


@needs_stack
def test_the_library_form_and_its_csrf_check_through_the_proxy(deployment):
    _, proxy = deployment
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{proxy.url}/", timeout=TIMEOUT).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "fixture": FIXTURE}).encode()
    # a browser's POST carries its Origin: Django compares it with the Host nginx passed on
    request = urllib.request.Request(f"{proxy.url}/sessions/", data=form, headers={"Origin": proxy.url})
    with opener.open(request, timeout=60) as response:
        assert response.status == 200
        assert response.url.startswith(f"{proxy.url}/s/")
    # another origin is refused
    request = urllib.request.Request(f"{proxy.url}/sessions/", data=form,
                                     headers={"Origin": "http://elsewhere.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(request, timeout=TIMEOUT)
    assert refused.value.code == 403


@needs_stack
def test_request_sizes_through_the_proxy(deployment):
    _, proxy = deployment
    # past the app's limit (6 MiB) but within nginx's: the app's own JSON answer
    body = json.dumps({"text": "x" * (7 * 1048576), "filename": "big.yaml"}).encode()
    status, headers, answer = post_json(f"{proxy.url}/api/sessions", body)
    assert status == 413 and headers["Content-Type"].startswith("application/json")
    assert json.loads(answer)["title"] == "Too large"
    # past nginx's: refused by nginx before the app sees it
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=TIMEOUT)
    try:
        connection.putrequest("POST", "/api/sessions")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(9 * 1048576))
        connection.endheaders()
        response = connection.getresponse()        # nginx answers on the headers alone
        assert response.status == 413
        assert not response.getheader("Content-Type", "").startswith("application/json")
    finally:
        connection.close()


@needs_stack
def test_frames_reach_sockets_on_both_processes_through_the_proxy(deployment):
    """Round-robin: the two sockets land on different processes; a control sent through the
    proxy (to either) reaches both (Redis)."""
    from websockets.sync.client import connect
    stack, proxy = deployment
    created = create_session(proxy)
    path = f"/ws/w/{created['follower_token']}/"
    before = served(stack, f"WSCONNECT {path}")
    with contextlib.ExitStack() as opened:
        sockets = [opened.enter_context(connect(f"{proxy.ws_url}{path}", origin=proxy.url,
                                                open_timeout=TIMEOUT, close_timeout=2))
                   for _ in range(2)]
        for ws in sockets:
            assert 'data-position="0"' in ws.recv(timeout=TIMEOUT)
        stack_module.wait_for(lambda: sum(served(stack, f"WSCONNECT {path}")) - sum(before) == 2,
                              "both sockets in the web processes' logs", timeout=10)
        after = served(stack, f"WSCONNECT {path}")
        assert [a - b for a, b in zip(after, before)] == [1, 1], "the proxy did not spread the sockets"
        status, _, body = post_json(f"{created['presenter_api']}control", {"action": "step-cycle"})
        assert status == 200, body[:2000]
        for ws in sockets:
            deadline = time.monotonic() + TIMEOUT
            while True:
                message = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
                if re.search(r'data-position="[1-9]', message):
                    break


@needs_stack
def test_requests_spread_over_both_processes_and_fail_over():
    """Its own stack: one web process is killed. nginx spreads requests over both, then skips the
    dead one (proxy_next_upstream): every request is still answered, by the other."""
    with stack_module.Stack(processes=2) as stack, proxy_module.NginxProxy(stack.urls) as proxy:
        before = served(stack, '"GET /healthz"')
        for _ in range(20):
            assert get(f"{proxy.url}/healthz")[::2] == (200, b"ok")
        stack_module.wait_for(lambda: sum(served(stack, '"GET /healthz"')) - sum(before) == 20,
                              "20 requests in the web processes' logs", timeout=10)
        spread = [a - b for a, b in zip(served(stack, '"GET /healthz"'), before)]
        assert spread == [10, 10], spread

        stack.kill(0)
        assert not stack.alive(0)
        before = served(stack, '"GET /healthz"')
        for _ in range(10):
            assert get(f"{proxy.url}/healthz")[::2] == (200, b"ok")
        created = create_session(proxy)              # a POST too: refused connections are retried
        assert 'data-position="0"' in first_frame(proxy, f"/ws/w/{created['follower_token']}/")
        stack_module.wait_for(lambda: served(stack, '"GET /healthz"')[1] - before[1] == 10,
                              "the survivor's log", timeout=10)
        assert "Connection refused" in proxy.error_log(n=10**6)
