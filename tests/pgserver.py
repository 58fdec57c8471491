"""A throw-away PostgreSQL server for the tests: initdb into a temporary directory, started on
127.0.0.1 on a free port (its socket in that directory too, never /var/run), fsync off, trust
authentication for loopback only; stopped and removed after.

Used by scripts/test.sh (``python tests/pgserver.py start|stop``) to run the database tests of
the suite a second time against PostgreSQL, and by tests/visualizer/test_postgres.py (the
``PostgresServer`` context manager) when no DATABASE_URL points at one already.

PostgreSQL's initdb refuses to run as root: as root, the server runs as the unprivileged user
``nobody`` (runuser), which owns the directory. The binaries are PostgreSQL 15's (Debian's
``postgresql`` package: /usr/lib/postgresql/<version>/bin, or on the PATH).
"""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUPERUSER = "postgres"


def binary(name: str) -> str | None:
    for found in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return found
    return shutil.which(name)


def available() -> bool:
    return all(binary(n) for n in ("initdb", "pg_ctl", "postgres"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "nobody", "--"] + cmd


class PostgresServer:
    def __init__(self, root: str | None = None):
        self.root = Path(root or tempfile.mkdtemp(prefix="pgtest-"))
        self.data = self.root / "data"
        self.port = None

    @property
    def url(self) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def start(self, timeout=60) -> str:
        if os.geteuid() == 0:
            shutil.chown(self.root, "nobody")
        env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8")
        subprocess.run(_as_server_user([binary("initdb"), "-D", str(self.data), "-U", SUPERUSER,
                                        "--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions"]),
                       check=True, env=env, cwd=self.root, stdout=subprocess.DEVNULL)
        last = None
        for _attempt in range(5):        # a free port can be taken between the check and the bind
            self.port = _free_port()
            options = (f"-k {self.root} -h 127.0.0.1 -p {self.port} -c fsync=off -c synchronous_commit=off "
                       "-c full_page_writes=off -c max_connections=200")
            run = subprocess.run(_as_server_user([binary("pg_ctl"), "-D", str(self.data), "-l",
                                                  str(self.root / "log"), "-o", options, "-w", "-t", str(timeout),
                                                  "start"]), env=env, cwd=self.root, capture_output=True, text=True)
            if run.returncode == 0:
                return self.url
            last = run.stderr + run.stdout + self.log()
        raise RuntimeError(f"PostgreSQL did not start: {last}")

    def log(self) -> str:
        try:
            return (self.root / "log").read_text()[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(_as_server_user([binary("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w",
                                            "stop"]), cwd=self.root, capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


def main(argv) -> int:
    """``start``: print ``<directory> <url>`` of a new server; ``stop <directory>``: stop it."""
    if argv[:1] == ["start"]:
        server = PostgresServer()
        try:
            url = server.start()
        except Exception:
            server.stop()
            raise
        print(server.root, url)
        return 0
    if len(argv) == 2 and argv[0] == "stop":
        PostgresServer(argv[1]).stop()
        return 0
    print("usage: python tests/pgserver.py start | stop <directory>", file=sys.stderr)
    return 2


if __name__ == "__main__":
    time.tzset()
    sys.exit(main(sys.argv[1:]))
