"""Django settings for the kube-scheduler visualizer.

Everything a deployment changes comes from the environment:

    DJANGO_SECRET_KEY     secret key (a development default otherwise)
    DJANGO_DEBUG          "1" (default, development) or "0"
    DJANGO_ALLOWED_HOSTS  comma-separated (default: localhost,127.0.0.1,[::1],testserver)
    DATABASE_PATH         SQLite file (default: BASE_DIR/db.sqlite3)
    REDIS_URL             if set, Channels uses Redis; otherwise an in-process layer
    SCENARIO_FIXTURES_DIR directory of scenario files for the library (default: BASE_DIR/fixtures)
    SCHEDULER_PLUGINS     out-of-tree plugins loaded at start (visualizer/plugins.py): .py paths or
                          module names, comma-separated
"""
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get(
    "DJANGO_SECRET_KEY",
    "django-insecure-dev-only-key-do-not-use-in-production",
)

DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"

ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get(
        "DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver"
    ).split(",")
    if host.strip()
]

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
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DATABASE_PATH", str(BASE_DIR / "db.sqlite3")),
    }
}

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
