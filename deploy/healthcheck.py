"""Health check of one web process (docker-compose.yml's `web` healthcheck; the slim image has
no curl): GET /healthz, exit 0 when it answers "ok", 1 otherwise.

    python deploy/healthcheck.py [URL]        # default http://127.0.0.1:8000/healthz

The request names a host Django accepts: the first plain name of DJANGO_ALLOWED_HOSTS
("localhost" when there is none, e.g. "*"), since a probe as 127.0.0.1 would get 400 from a
server that allows only its public name. Standard library only.
"""
import os
import sys
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8000/healthz"


def probe_host(allowed_hosts: str) -> str:
    """The host to send: the first entry of DJANGO_ALLOWED_HOSTS that names one host
    (".example.org" allows example.org too; "*" names none)."""
    for entry in allowed_hosts.split(","):
        entry = entry.strip()
        if entry.startswith("."):
            entry = entry[1:]
        if entry and "*" not in entry:
            return entry
    return "localhost"


def main(argv) -> int:
    url = argv[1] if len(argv) > 1 else DEFAULT_URL
    host = probe_host(os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost"))
    request = urllib.request.Request(url, headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read(64)
    except OSError as e:
        print(f"healthcheck: {url} (Host: {host}): {e}", file=sys.stderr)
        return 1
    if body.strip() != b"ok":
        print(f"healthcheck: {url} answered {body!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
