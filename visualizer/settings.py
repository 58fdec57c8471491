"""Django settings for the kube-scheduler visualizer.

Everything a deployment changes comes from the environment:

    DJANGO_SECRET_KEY     secret key (a development default otherwise)
    DJANGO_DEBUG          "1" (default, development) or "0"
    DJANGO_ALLOWED_HOSTS  comma-separated (default: localhost,127.0.0.1,[::1],testserver)
    DATABASE_URL          the database, as a URL (dj-database-url): postgres://user:password@host:5432/name
                          (also postgresql://) for PostgreSQL (psycopg 3), sqlite:////abs/path.sqlite3
                          for SQLite; unset or empty: SQLite at DATABASE_PATH
    DATABASE_PATH         SQLite file when DATABASE_URL is unset (default: BASE_DIR/db.sqlite3)
    REDIS_URL             if set, Channels uses Redis; otherwise an in-process layer
    SCENARIO_FIXTURES_DIR directory of scenario files for the library (default: BASE_DIR/fixtures)
    DJANGO_HTTPS          "1" behind HTTPS: redirect to it, HSTS, secure cookies (default "0")
    DJANGO_HSTS_SECONDS   Strict-Transport-Security max-age with DJANGO_HTTPS=1 (default 31536000)
    LIVE_SESSION_IDLE_SECONDS  evict a live session unused this long from memory (default 900)
    LIVE_SESSIONS_MAX     live sessions kept in memory at most (default 50)
    SESSION_MEMORY_BUDGET_MB   a session's estimated memory beyond which it stops (default 1024)
    SCHEDULER_PLUGINS     out-of-tree plugins loaded at start (visualizer/plugins.py): .py paths or
                          module names, comma-separated
    SCHEDULER_EXTENDERS   the scheduler extenders sessions may call (engine/extender.py): the
                          allowed ``urlPrefix`` values, comma-separated; a scenario naming any
                          other is refused (docs/extenders.md). Read by the engine from the
                          environment, as the CLI reads it
    VISUALIZER_CLASS_MODE "1": class mode (scripts/run.sh --class): the machine's own host name and
                          addresses are allowed hosts too, and the join link uses one phones reach
    CLASS_HOST            in class mode, the address or name the join link uses by default

With DJANGO_DEBUG=0 the server refuses to start without DJANGO_SECRET_KEY. Production settings
(``manage.py check --deploy`` is clean with them): DJANGO_DEBUG=0, DJANGO_SECRET_KEY=<50+
random characters>, DJANGO_ALLOWED_HOSTS=<your host>, DJANGO_HTTPS=1 (see README.md).

"""
import ipaddress
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_DEBUG=0 (production) needs DJANGO_SECRET_KEY: set it to a long random string, e.g. "
            "the output of: python -c \"import secrets; print(secrets.token_urlsafe(50))\"")
    SECRET_KEY = "django-insecure-dev-only-key-do-not-use-in-production"

# Behind HTTPS (DJANGO_HTTPS=1): everything `manage.py check --deploy` asks for.
HTTPS = os.environ.get("DJANGO_HTTPS", "0") == "1"
if HTTPS:
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # a TLS-terminating proxy in front says so with this header
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # /healthz answers plain HTTP probes (load balancers, docker healthchecks)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get(
        "DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver"
    ).split(",")
    if host.strip()
]

# Class mode (`bash scripts/run.sh --class`, which sets VISUALIZER_CLASS_MODE=1 and serves on
# 0.0.0.0): phones on the same network join. The hosts allowed become the list above plus this
# machine's own host name and addresses (and CLASS_HOST), nothing wider; the presenter page's
# join link and QR code use one of CLASS_JOIN_ADDRESSES when it is opened by 127.0.0.1 or
# localhost (visualizer/classroom.py finds them without sending a packet).
CLASS_MODE = os.environ.get("VISUALIZER_CLASS_MODE", "0") == "1"
CLASS_HOST = os.environ.get("CLASS_HOST", "").strip()
CLASS_JOIN_ADDRESSES = []
if CLASS_MODE:
    from visualizer import classroom

    _machine = classroom.discover()
    ALLOWED_HOSTS = classroom.allowed_hosts(ALLOWED_HOSTS, _machine, CLASS_HOST)
    CLASS_JOIN_ADDRESSES = classroom.join_choices(_machine, CLASS_HOST)

INSTALLED_APPS = [
    # First, so that `manage.py runserver` is Daphne's (HTTP + WebSockets + static files).
    "daphne",
    # auth, contenttypes and sessions back Channels' AuthMiddlewareStack.
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "visualizer",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "visualizer.middleware.ContentSecurityPolicy",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "visualizer.middleware.TooLargeRequestAsFormError",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # last, so it sees the view's exceptions first: no debug page for a remote client
    "visualizer.middleware.DebugPagesOnlyForLocalClients",
]

ROOT_URLCONF = "visualizer.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ],
        },
    },
]

ASGI_APPLICATION = "visualizer.asgi.application"

# DATABASE_URL selects the database (PostgreSQL for a deployment with several processes); without
# it, the embedded SQLite file of `bash scripts/run.sh`. Sessions are short rows updated with a
# version check (visualizer/runner.py LiveSession.persist), so nothing depends on the backend;
# the suite runs on both (scripts/test.sh, tests/visualizer/test_postgres.py).
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if DATABASE_URL:
    import dj_database_url

    try:
        _database = dj_database_url.parse(DATABASE_URL)
    except Exception as e:   # an unknown scheme: say which variable, not just the library's words
        raise ImproperlyConfigured(f"DATABASE_URL: {e}") from None
else:
    _database = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DATABASE_PATH", str(BASE_DIR / "db.sqlite3")),
    }
DATABASES = {"default": _database}

# There is no default channel layer: configure one explicitly. The in-memory layer works
# within one process only (the engine must then run inside the Daphne process).
# Both layers default to capacity 100 and drop messages silently beyond it.
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # An explicit socket_timeout keeps idle consumers alive (channels_redis#422).
                "hosts": [{"address": REDIS_URL, "socket_timeout": 10}],
                "capacity": 1000,
            },
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": 1000},
        }
    }

# Scenario files listed by the library page.
SCENARIO_FIXTURES_DIR = Path(
    os.environ.get("SCENARIO_FIXTURES_DIR", str(BASE_DIR / "fixtures"))
)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"  # filled by `manage.py collectstatic` (the Dockerfile)
# Serve straight from STATICFILES_DIRS too, so static files work without collectstatic
# (tests, a bare `daphne` run with DJANGO_DEBUG=0).
WHITENOISE_USE_FINDERS = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy of every response (visualizer.middleware.ContentSecurityPolicy): the
# pages load scripts, styles, images and sockets from this origin only and run no inline
# script; style attributes (bar widths) are allowed. Empty: no header.
CONTENT_SECURITY_POLICY = os.environ.get(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'")
# Who may read /metrics: comma-separated networks (CIDR), e.g. "127.0.0.0/8,10.0.0.0/8" for a
# Prometheus inside the cluster; empty (the default): anyone who reaches the server.
METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network(n.strip(), strict=False)
                            for n in os.environ.get("METRICS_ALLOWED_NETWORKS", "").split(",") if n.strip()]
DEFAULT_EXCEPTION_REPORTER = "visualizer.middleware.LocalOnlyExceptionReporter"

# Request sizes: a pasted scenario may be as large as an uploaded file (visualizer.views
# MAX_UPLOAD_BYTES, 5 MiB); a larger request gets the upload form's error list, not Django's
# RequestDataTooBig page (visualizer.views.start_session).
DATA_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024

# Live sessions in this process (visualizer.runner): idle ones are evicted from memory and
# rebuilt from the database on the next visit; a session whose estimated size would pass the
# budget stops with a message on its page.
LIVE_SESSION_IDLE_SECONDS = float(os.environ.get("LIVE_SESSION_IDLE_SECONDS", "900"))
LIVE_SESSIONS_MAX = int(os.environ.get("LIVE_SESSIONS_MAX", "50"))
SESSION_MEMORY_BUDGET_MB = float(os.environ.get("SESSION_MEMORY_BUDGET_MB", "1024"))
# Cluster objects one session may hold (its objects plus those its actions create; engine
# limits.MAX_SCENARIO_OBJECTS bounds a scenario file at 200,000): an upload or an import that
# would make more is refused before anything is generated.
SESSION_MAX_OBJECTS = int(os.environ.get("SESSION_MAX_OBJECTS", "20000"))
# Every uploaded or pasted text is read, converted and checked in a worker process with these
# limits (visualizer/uploads.py, engine/sandbox.py): past one, the form says so (HTTP 413).
UPLOAD_WORKER_CPU_SECONDS = float(os.environ.get("UPLOAD_WORKER_CPU_SECONDS", "30"))
UPLOAD_WORKER_MEMORY_MB = float(os.environ.get("UPLOAD_WORKER_MEMORY_MB", "1024"))
UPLOAD_WORKER_TIMEOUT_SECONDS = float(os.environ.get("UPLOAD_WORKER_TIMEOUT_SECONDS", "60"))
