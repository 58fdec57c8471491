"""Reading untrusted files in a short-lived worker process with CPU-time and memory limits.

The parsers and converters are bounded (``engine.yamlload``, ``engine.limits``), but reading a
large file is still seconds of CPU and hundreds of MB, and a bug in a C extension (libyaml, the
json module) or a converter would take the whole server with it. So a server reads an upload or
a paste here: ``prepare(request)`` starts ``python -m engine.sandbox`` (a new interpreter, so
nothing of the server's memory is shared or exposed), sends the files on its standard input and
reads one JSON answer from its standard output. The worker

- sets its own limits before it reads anything: ``RLIMIT_AS`` (address space, so a runaway
  allocation is a ``MemoryError``), ``RLIMIT_CPU`` (``SIGXCPU``, then ``SIGKILL``) and an alarm
  for the wall time, so it ends even if the server that started it has gone;
- converts what needs converting (``engine.importers.import_files``, with the caller's object
  limit), then validates the scenario (``Scenario.from_text`` with that limit) and builds its
  scheduler (plugin and pluginConfig problems), with the plugin sources the server names (from
  its own configuration, never from the request);
- answers ``{"text": scenario text, "imported": bool}`` or ``{"problems": [...], "imported": bool}``.

The caller (``visualizer/uploads.py``) turns a limit that tripped, a crash or a timeout into a
clear problem (``LimitExceeded``, HTTP 413) and kills the worker when the client goes away.

Request (JSON on stdin): ``files`` ([[name, text]]), ``options`` (``test_case``, ``workload``),
``max_objects``, ``plugins`` (sources for ``engine.plugins.loader.load``), ``entry_points``
(bool), ``limits`` (``cpu_seconds``, ``memory_bytes``, ``wall_seconds``).
"""
from __future__ import annotations

import json
import os
import re
import sys

_JSON_START = re.compile(r"\s*[\[{]")

# Exit statuses of the worker besides 0 (an answer was written)
EXIT_MEMORY = 3        # MemoryError: RLIMIT_AS was reached
EXIT_CPU = 4           # SIGXCPU: RLIMIT_CPU was reached (the soft limit; SIGKILL follows at the hard one)
EXIT_WALL = 5          # SIGALRM: the wall-time alarm

# The environment the worker runs in: one thread for NumPy's BLAS (each thread reserves address
# space, which RLIMIT_AS counts), no bytecode files written by an untrusted-input process.
WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "PYTHONDONTWRITEBYTECODE": "1"}


def set_limits(cpu_seconds: float, memory_bytes: int, wall_seconds: float) -> None:
    """This process's own limits (called first thing in the worker)."""
    import resource
    import signal

    cpu = max(1, int(cpu_seconds + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (int(memory_bytes), int(memory_bytes)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXCPU, lambda *_: os._exit(EXIT_CPU))
    signal.signal(signal.SIGALRM, lambda *_: os._exit(EXIT_WALL))
    signal.alarm(max(1, int(wall_seconds + 0.999)))


def work(request: dict) -> dict:
    """What the worker does once its limits are set (also callable in-process, for tests)."""
    from .errors import EngineError, ScenarioError
    from .plugins import loader

    for spec in request.get("plugins") or []:
        try:
            loader.load(spec)
        except loader.PluginLoadError:
            pass            # the server reports its own load problems; a scenario using it fails below
    if request.get("entry_points"):
        loader.load_entry_points()
    files = [(str(n), str(t)) for n, t in request.get("files") or []]
    options = request.get("options") or {}
    max_objects = int(request.get("max_objects") or 0) or None
    imported = False
    try:
        from .importers import detect, parse_documents
        # the one file's documents (None when several files, or unreadable: the scenario
        # validator then says why, as it always did)
        docs = (parse_documents(files[0][0], files[0][1], []) or None) if len(files) == 1 else None
        imported = len(files) != 1 or (docs is not None and (len(docs) > 1 or detect(docs[0]) not in ("scenario", None)))
        data = None
        if imported:
            from .importers import dump_scenario, import_files
            kw = {"test_case": options.get("test_case") or None, "workload": options.get("workload") or None}
            if max_objects is not None:
                kw["max_objects"] = max_objects
            result = import_files(files, **kw)
            text, source = dump_scenario(result.scenario), ""
        else:
            text, source = (files[0][1] if files else ""), str(request.get("source") or "")
            # the scenario's data as just read, when YAML (the same loader as Scenario.from_text's);
            # JSON is read again, the YAML way, where the two may differ
            data = docs[0] if docs and not _JSON_START.match(text) else None
        validate(text, source or "<input>", max_objects, data=data)
    except ScenarioError as e:
        # "imported": whether the problems are the importer's (they name their files) or the
        # scenario validator's (places in the one scenario given)
        return {"problems": list(e.problems), "source": e.source, "imported": imported}
    except EngineError as e:
        return {"problems": [str(e)], "imported": imported}
    return {"text": text, "imported": imported}


def validate(text: str, source: str = "<input>", max_objects: int | None = None, data=None):
    """Parse and check a scenario, including building its scheduler (plugin and pluginConfig
    problems surface there); ScenarioError lists every problem found. Returns the Scenario.
    ``data``: the text's data already read by the same loader (problems found in it are looked
    for again in the text, for their lines and columns)."""
    from . import limits
    from .errors import EngineError, ScenarioError
    from .scenario import LOCATE_MAX_BYTES, Scenario
    from .stepper import Stepper

    if not isinstance(text, str) or not text.strip():
        raise ScenarioError(["the scenario is empty: paste or upload a scenario YAML"], source)
    max_objects = max_objects or limits.MAX_SCENARIO_OBJECTS
    scenario = None
    if data is not None:
        try:
            scenario = Scenario.from_dict(data, source, max_objects)
        except ScenarioError:
            if len(text) > LOCATE_MAX_BYTES:
                raise               # from_text would say the same, without lines and columns
            scenario = None         # from_text below says the same, with lines and columns
    if scenario is None:
        scenario = Scenario.from_text(text, source, max_objects)
    try:
        Stepper(scenario)
    except ScenarioError:
        raise
    except EngineError as e:
        raise ScenarioError([str(e)], source) from None
    return scenario


def main() -> int:
    raw = sys.stdin.buffer.read()
    try:
        request = json.loads(raw)
    except ValueError:
        return 2
    lim = request.get("limits") or {}
    set_limits(float(lim.get("cpu_seconds", 30)), int(lim.get("memory_bytes", 0)),
               float(lim.get("wall_seconds", 60)))
    del raw
    try:
        answer = work(request)
    except MemoryError:
        os._exit(EXIT_MEMORY)
    except RecursionError:
        answer = {"problems": ["the input is nested too deeply to read"]}
    out = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
