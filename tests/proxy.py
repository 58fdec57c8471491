"""The shipped reverse proxy, deploy/nginx.conf, run by Debian's nginx on loopback: a throw-away
nginx process on a free port of 127.0.0.1 in front of the given web processes (e.g.
tests/stack.py's), for tests. Nothing leaves the machine.

    with Stack(processes=2) as stack, NginxProxy(stack.urls) as proxy:
        proxy.url          # "http://127.0.0.1:40123"
        proxy.ws_url       # "ws://127.0.0.1:40123"

The configuration is deploy/nginx.conf itself, rendered for loopback by replacing only:

- the upstream's ``server web:8000 <parameters>;`` line: one ``server 127.0.0.1:<port>
  <parameters>;`` line per web process, without ``resolve`` (Debian's nginx 1.22 lacks it in
  open source, and there is no DNS name to follow here);
- ``listen 80;``: ``listen 127.0.0.1:<free port>;``;
- ``pid``, ``error_log`` and ``access_log``: files in the directory;
- and the temporary directories (request bodies, proxied responses...) are set inside the
  directory, at the top of ``http {``.

Each replacement must match exactly as described, or rendering fails: a change to the shipped
file that the test could no longer follow is an error, not a silently different configuration.
Every location, header and timeout is the shipped one.

As root, nginx's worker processes run as ``nobody``: the default directory (a new temporary
directory, made world-readable) suits that; a directory of your own must be reachable by it.
"""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "deploy" / "nginx.conf"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack import free_port, wait_for  # noqa: E402  (tests/stack.py)

TEMP_DIRECTORIES = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).is_file()), None)


def available() -> str | None:
    """None when nginx can run here, else what is missing."""
    if binary() is None:
        return "nginx is not installed (`bash scripts/test.sh` installs Debian's)"
    return None


def _replace_once(pattern: str, replacement, text: str, what: str) -> str:
    new, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if count != 1:
        raise ValueError(f"deploy/nginx.conf: expected exactly one {what}, found {count}")
    return new


def render(upstreams: list[str], port: int, directory: Path, source: str | None = None) -> str:
    """deploy/nginx.conf for loopback (see the module's docstring). ``upstreams``: URLs like
    ``http://127.0.0.1:41231`` of the web processes."""
    text = CONFIG.read_text(encoding="utf-8") if source is None else source
    directory = Path(directory)
    addresses = []
    for url in upstreams:
        parsed = urllib.parse.urlsplit(url)
        if parsed.hostname is None or parsed.port is None:
            raise ValueError(f"an upstream needs a host and a port: {url!r}")
        addresses.append(f"{parsed.hostname}:{parsed.port}")
    if not addresses:
        raise ValueError("no upstream")

    def servers(match):
        indent, parameters = match.group(1), match.group(2).split()
        if "resolve" not in parameters:
            raise ValueError("deploy/nginx.conf: the web server line has no `resolve`")
        kept = " ".join(p for p in parameters if p != "resolve")
        return "\n".join(f"{indent}server {a}{' ' + kept if kept else ''};" for a in addresses)

    text = _replace_once(r"^([ \t]*)server[ \t]+web:8000\b([^;\n]*);", servers, text,
                         "`server web:8000 ...;` line")
    text = _replace_once(r"^([ \t]*)listen[ \t]+80;", rf"\g<1>listen 127.0.0.1:{port};", text,
                         "`listen 80;` line")
    text = _replace_once(r"^pid[ \t]+[^;\n]+;", f"pid {directory / 'nginx.pid'};", text, "`pid` line")
    text = _replace_once(r"^error_log[ \t]+[^;\n]+;", f"error_log {directory / 'error.log'} info;",
                         text, "`error_log` line")
    text = _replace_once(r"^([ \t]*)access_log[ \t]+/dev/stdout;", rf"\g<1>access_log {directory / 'access.log'};",
                         text, "`access_log /dev/stdout;` line")
    temp = "".join(f"    {name}_temp_path {directory / 'temp' / name};\n" for name in TEMP_DIRECTORIES)
    text = _replace_once(r"^http[ \t]*\{\n", lambda m: m.group(0) + temp, text, "`http {` line")
    return text


class NginxProxy:
    """deploy/nginx.conf run by nginx on a free loopback port in front of ``upstreams``
    (see the module's docstring)."""

    def __init__(self, upstreams: list[str], directory: str | Path | None = None):
        self.upstreams = list(upstreams)
        self.own_directory = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="nginx-"))
        self.port = free_port()
        self.process = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def config(self) -> Path:
        return self.directory / "nginx.conf"

    def error_log(self, n=4000) -> str:
        try:
            return (self.directory / "error.log").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def access_log(self) -> str:
        try:
            return (self.directory / "access.log").read_text(errors="replace")
        except OSError:
            return ""

    def start(self, timeout=20.0) -> "NginxProxy":
        nginx = binary()
        if nginx is None:
            raise RuntimeError(available())
        if self.own_directory:
            self.directory.chmod(0o755)      # the workers (nobody, as root) write temp files here
        (self.directory / "temp").mkdir(exist_ok=True)
        self.config.write_text(render(self.upstreams, self.port, self.directory), encoding="utf-8")
        command = [nginx, "-p", str(self.directory), "-c", str(self.config),
                   "-e", str(self.directory / "error.log"), "-g", "daemon off;"]
        check = subprocess.run(command[:-2] + ["-t", "-q"], capture_output=True, text=True, timeout=30)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t refused the rendered deploy/nginx.conf:\n{check.stderr}"
                               f"{self.error_log()}")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited ({self.process.returncode}):\n{self.error_log()}")
            with urllib.request.urlopen(f"{self.url}/proxy-healthz", timeout=1) as r:
                return r.status == 200
        try:
            wait_for(ready, f"nginx on port {self.port}", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)      # fast shutdown: open sockets are closed
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self.own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> "NginxProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
