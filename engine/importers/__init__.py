"""Import: clusters and workloads from elsewhere as a scenario (one converter, formats detected).

    from engine.importers import import_files
    result = import_files([("dump.yaml", text)])     # raises ScenarioError if it cannot
    result.scenario        # a scenario mapping (kind: Scenario), already validated
    result.report.text()   # what was kept, dropped and why

Formats (``FORMATS``), detected per document unless one is forced:

- ``kubectl``: ``kubectl get nodes,pods,pdb,priorityclasses,... -A -o yaml`` (or ``-o json``): a
  ``List`` (``items``), or objects one per document or file (``kube.py``);
- ``simulator``: kube-scheduler-simulator's export JSON (``pods``, ``nodes``, ``pvs``, ``pvcs``,
  ``storageClasses``, ``priorityClasses``, ``schedulerConfig``, ``namespaces``);
- ``scheduler-perf``: a scheduler_perf ``performance-config.yaml`` with the node and pod
  templates its ops name (``schedperf.py``);
- ``scheduler-config``: a ``KubeSchedulerConfiguration``, which becomes the scenario's
  ``scheduler`` (``schedconfig.py``);
- ``scenario``: a scenario (for instance one ``python -m engine export`` wrote), taken as is.

Everything that cannot be understood is refused with its place (``dump.yaml: items[3].kind:
...``, ``dump.json: line 7, column 3: not valid JSON (...)``), as the scenario validator
refuses, and the finished scenario goes through that validator too, its problems mapped back
to the files they came from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import yaml

from .. import limits, yamlload
from ..errors import ScenarioError
from ..quantity import US
from .kube import Converter, check_object, latest_timestamp, makes_object, rfc3339, typed
from .report import ImportReport
from .schedconfig import convert_scheduler_config, profile_names
from .schedperf import PerfConverter, looks_like_perf_config

FORMATS = ("kubectl", "simulator", "scheduler-perf", "scheduler-config", "scenario")
SIMULATOR_KEYS = {"pods", "nodes", "pvs", "pvcs", "storageClasses", "priorityClasses", "schedulerConfig",
                  "namespaces"}
SIMULATOR_KINDS = {"pods": "Pod", "nodes": "Node", "pvs": "PersistentVolume", "pvcs": "PersistentVolumeClaim",
                   "storageClasses": "StorageClass", "priorityClasses": "PriorityClass", "namespaces": "Namespace",
                   "pdbs": "PodDisruptionBudget"}
MAX_DOCUMENTS = 100_000

__all__ = ["FORMATS", "ImportReport", "ImportResult", "detect", "dump_scenario", "import_files", "import_paths",
           "parse_documents"]


@dataclass
class ImportResult:
    scenario: dict
    report: ImportReport
    # a scheduler_perf workload: its measured pods (createPods ops with collectMetrics: true),
    # as (virtual time in microseconds, namespace) pairs; [] for every other format
    measured: list = field(default_factory=list)




def _shares_values(doc) -> bool:
    """Whether a parsed document uses one mapping or list twice (YAML aliases): a dump never
    does, and walking or copying shared values is how a small file can ask for unbounded time."""
    seen = set()
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, (dict, list)):
            if id(v) in seen:
                return True
            seen.add(id(v))
            stack.extend(v.values() if isinstance(v, dict) else v)
    return False


def parse_documents(name, text, problems):
    """The documents of one file, or None (problem recorded). Read through the engine's one
    bounded entry point for untrusted text (``yamlload.load_documents``: size, nesting, values
    with aliases expanded, documents), JSON by the json module."""
    if not text.strip():
        problems.append(f"{name}: the file is empty")
        return None
    try:
        docs = yamlload.load_documents(text, max_documents=MAX_DOCUMENTS, json_first=True)
    except yamlload.YAMLLoadError as e:
        problems.append(f"{name}: {e}".replace(": not valid YAML (", ": not valid YAML or JSON (", 1))
        return None
    if not docs:
        problems.append(f"{name}: the file holds no document")
        return None
    if any(_shares_values(d) for d in docs):
        problems.append(f"{name}: uses YAML aliases (*name), which are not accepted in an import")
        return None
    return docs


def detect(doc) -> str | None:
    """The format of one parsed document, or None."""
    if looks_like_perf_config(doc):
        return "scheduler-perf"
    if not isinstance(doc, dict):
        return None
    kind = doc.get("kind")
    if kind == "Scenario":
        return "scenario"
    if kind == "KubeSchedulerConfiguration":
        return "scheduler-config"
    if isinstance(kind, str) and kind:
        return "kubectl"
    if doc and set(doc) & SIMULATOR_KEYS and not ({"apiVersion", "metadata", "spec"} & set(doc)):
        return "simulator"
    return None


def _what(doc) -> str:
    if isinstance(doc, dict):
        return "a mapping without kind" if "kind" not in doc else f"kind {doc.get('kind')!r}"
    if isinstance(doc, list):
        return "a list that is not a scheduler_perf config (test cases with a workloadTemplate)"
    return f"a {type(doc).__name__} ({str(doc)[:40]!r})"


def _kube_items(doc, where, problems):
    """[(manifest, origin)] of a kubectl document (an object or a List)."""
    kind = doc.get("kind")
    if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and "items" in doc):
        items = doc.get("items")
        if items is None:
            return []
        if not isinstance(items, list):
            problems.append(f"{where}.items: is not a list")
            return []
        out = []
        for i, it in enumerate(items):
            place = f"{where}.items[{i}]"
            if not isinstance(it, dict):
                problems.append(f"{place}: {_what(it)} is not a Kubernetes object")
                continue
            if kind != "List" and "kind" not in it:
                it = dict(it, kind=kind[:-4])   # a PodList's items may leave out their kind
            out.extend(_kube_items_one(it, place, problems))
        return out
    return _kube_items_one(doc, where, problems)


def _kube_items_one(m, place, problems):
    k = m.get("kind")
    if not isinstance(k, str) or not k:
        problems.append(f"{place}.kind: is required (a Kubernetes object has a kind)")
        return []
    n = len(problems)
    md = typed(m, "metadata", dict, place, problems)
    name = typed(md, "name", str, f"{place}.metadata", problems)
    ns = typed(md, "namespace", str, f"{place}.metadata", problems)
    if len(problems) != n:
        return []
    if not name:
        problems.append(f"{place}.metadata.name: is required")
        return []
    if k.endswith("List"):
        return _kube_items(m, place, problems)
    origin = f"{place} ({k} {ns + '/' if ns else ''}{name})"
    if not check_object(m, origin, problems):
        return []
    return [(m, origin)]


def _simulator_items(doc, where, problems, report):
    out = []
    for key, val in doc.items():
        if key == "schedulerConfig":
            continue
        kind = SIMULATOR_KINDS.get(key)
        if kind is None:
            report.ignore("simulator export", str(key))
            continue
        if val is None:
            continue
        if not isinstance(val, list):
            problems.append(f"{where}.{key}: is not a list")
            continue
        for i, it in enumerate(val):
            place = f"{where}.{key}[{i}]"
            if not isinstance(it, dict):
                problems.append(f"{place}: {_what(it)} is not a {kind}")
                continue
            it = dict(it)
            it.setdefault("kind", kind)
            out.extend(_kube_items_one(it, place, problems))
    return out


def _slug(text):
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:60].strip("-") or "imported"


def import_files(files, fmt=None, *, test_case=None, workload=None, name=None, op_interval=US,
                 resolve_path=None, max_objects: int = limits.MAX_SCENARIO_OBJECTS) -> ImportResult:
    """Convert ``files`` (``[(name, text)]``) into a validated scenario and its report.

    ``fmt`` forces every document's format (one of ``FORMATS``; a KubeSchedulerConfiguration
    is always read as one). ``test_case``/``workload`` choose in a scheduler_perf config;
    ``resolve_path(path)`` may return the text of a template the config names that is not
    among ``files`` (the CLI reads it from disk), or None. ``max_objects`` bounds the cluster
    objects of the scenario (objects plus the objects its actions create): a dump that holds
    more, or a scheduler_perf workload whose counts ask for more, is refused before a single
    object is converted or generated.
    """
    problems: list = []
    report = ImportReport()
    if fmt is not None and fmt not in FORMATS:
        raise ScenarioError([f"--format: {fmt!r} is not one of {', '.join(FORMATS)}"], "import")
    if not files:
        raise ScenarioError(["no file to import"], "import")
    parsed = []   # (file name, doc index, doc, format)
    for fname, text in files:
        docs = parse_documents(fname, text, problems)
        if docs is None:
            continue
        for j, doc in enumerate(docs):
            where = fname if len(docs) == 1 else f"{fname}: document {j + 1}"
            f = detect(doc)
            if fmt is not None and f != "scheduler-config":
                f = fmt
            parsed.append((fname, where, doc, f))
    if problems:
        raise ScenarioError(problems, "import")

    measured: list = []
    perf = [p for p in parsed if p[3] == "scheduler-perf"]
    scenarios = [p for p in parsed if p[3] == "scenario"]
    configs = [p for p in parsed if p[3] == "scheduler-config"]
    if scenarios:
        if len(parsed) != 1:
            raise ScenarioError([f"{scenarios[0][1]}: a scenario is imported alone (it is already complete)"], "import")
        _, where, doc, _ = scenarios[0]
        report.formats[where] = "scenario"
        if not isinstance(doc, dict) or doc.get("kind") != "Scenario":
            raise ScenarioError([f"{where}: kind: must be \"Scenario\" (read as a scenario)"], "import")
        _validate(doc, lambda p: f"{where}: {p}", max_objects)
        for kind, n in _count_kinds(doc).items():
            for _ in range(n):
                report.keep(kind)
        return ImportResult(doc, report)

    scheduler = None
    for _, where, doc, _ in configs:
        report.formats[where] = "scheduler-config (KubeSchedulerConfiguration)"
        if scheduler is not None:
            problems.append(f"{where}: a second scheduler configuration (only one is used)")
            continue
        scheduler = convert_scheduler_config(doc, where, report, problems)
    for _, where, doc, f in parsed:
        if f == "simulator" and isinstance(doc, dict) and doc.get("schedulerConfig") is not None:
            if scheduler is not None:
                problems.append(f"{where}.schedulerConfig: a second scheduler configuration (only one is used)")
            else:
                scheduler = convert_scheduler_config(doc["schedulerConfig"], f"{where}.schedulerConfig",
                                                     report, problems)

    objects, actions, meta = [], [], {}
    sim = {}
    if perf:
        if len(perf) > 1:
            problems.append(f"{perf[1][1]}: only one scheduler_perf config can be imported at a time")
            raise ScenarioError(problems, "import")
        fname, where, doc, _ = perf[0]
        report.formats[where] = "scheduler-perf"
        templates = {}
        for f2, w2, d2, _f in parsed:
            if d2 is not doc and not (_f == "scheduler-config"):
                templates[f2] = d2
                report.formats[w2] = "scheduler-perf template"

        def resolve(path):
            want = PurePosixPath(str(path))
            for f2, d2 in templates.items():
                p2 = PurePosixPath(f2.replace("\\", "/"))
                if p2.parts[-len(want.parts):] == want.parts or p2.name == want.name:
                    return d2, None
            if resolve_path is not None:
                text = resolve_path(str(path))
                if text is not None:
                    ps = []
                    docs = parse_documents(str(path), text, ps)
                    if ps:
                        return None, "; ".join(ps)
                    return docs[0], None
            return None, f"the template {path} was not given (add it to the files imported)"

        pc = PerfConverter(doc, where, resolve, report, problems, test_case, workload, op_interval, max_objects)
        if not pc.convert():
            raise ScenarioError(problems, "import")
        objects = pc.objects
        actions = pc.actions
        action_origins = pc.action_origins
        meta = {"name": name or pc.name, "title": pc.title}
        measured = list(pc.measured)
        start = None
    else:
        items = []
        for fname, where, doc, f in parsed:
            if f == "scheduler-config":
                continue
            if f == "kubectl":
                report.formats[where] = "kubectl"
                if not isinstance(doc, dict):
                    problems.append(f"{where}: {_what(doc)} is not a Kubernetes object or List")
                    continue
                items.extend(_kube_items(doc, where, problems))
            elif f == "simulator":
                report.formats[where] = "simulator (kube-scheduler-simulator export)"
                if not isinstance(doc, dict) or not set(doc) & SIMULATOR_KEYS:
                    problems.append(f"{where}: {_what(doc)} is not a kube-scheduler-simulator export "
                                    f"(a mapping with {', '.join(sorted(SIMULATOR_KEYS))})")
                    continue
                items.extend(_simulator_items(doc, where, problems, report))
            elif f == "scheduler-perf":
                problems.append(f"{where}: {_what(doc)} is not a scheduler_perf config")
            else:
                problems.append(f"{where}: cannot tell what this is: {_what(doc)}; expected a Kubernetes "
                                f"object or List (kubectl get -o yaml/json), a kube-scheduler-simulator "
                                f"export, a scheduler_perf config, a KubeSchedulerConfiguration or a Scenario")
        if problems:
            raise ScenarioError(problems, "import")
        # the size of the cluster, before any object is converted (engine/limits.py)
        n_objects = sum(1 for m, _ in items if makes_object(m))
        if n_objects > max_objects:
            names = ", ".join(dict.fromkeys(f for f, _, _, f2 in parsed if f2 in ("kubectl", "simulator")))
            raise ScenarioError([f"{names}: {limits.too_many_objects(n_objects, max_objects)}"], "import")
        start = latest_timestamp(m for m, _ in items)
        conv = Converter(report, profile_names(scheduler))
        objects, actions = conv.convert_all(items, start)
        action_origins = []
        if not objects and scheduler is None:
            dropped = ", ".join(f"{sum(v.values())} {k}" for k, v in sorted(report.dropped.items()))
            raise ScenarioError([f"{files[0][0]}: nothing the scheduler reads was found (no Node, Pod, PriorityClass "
                                 f"or PodDisruptionBudget); dropped: {dropped or 'nothing'}"], "import")
        first = files[0][0]
        meta = {"name": name or _slug(PurePosixPath(first.replace("\\", "/")).stem),
                "title": f"Imported from {', '.join(f for f, _ in files)}"}
        if start is not None:
            sim["startTime"] = rfc3339(start)
    if problems:
        raise ScenarioError(problems, "import")

    scenario = {"kind": "Scenario", "metadata": {"name": meta["name"], "title": meta["title"],
                                                  "description": ""}}
    if scheduler is not None:
        scenario["scheduler"] = scheduler
    if sim:
        scenario["simulation"] = sim
    scenario["objects"] = [m for m, _ in objects]
    if actions:
        scenario["actions"] = actions
    origins = [o for _, o in objects]

    def place_of(p):
        m = re.match(r"objects\[(\d+)\](.*)", p)
        if m and int(m.group(1)) < len(origins):
            return f"{origins[int(m.group(1))]}{m.group(2)}"
        m = re.match(r"actions\[(\d+)\](?:\.create\b)?(.*)", p)   # what a create action makes
        if m and int(m.group(1)) < len(action_origins):
            return f"{action_origins[int(m.group(1))]}{m.group(2)}"
        return f"imported scenario: {p}"

    scenario["metadata"]["description"] = (
        f"{meta['title']} by `python -m engine import`.\n\n" + report.markdown())
    _validate(scenario, place_of, max_objects)
    return ImportResult(scenario, report, measured)


def _count_kinds(doc):
    out = {}
    for o in doc.get("objects") or []:
        if isinstance(o, dict):
            out[o.get("kind")] = out.get(o.get("kind"), 0) + 1
    return out


def _validate(scenario, place_of, max_objects=limits.MAX_SCENARIO_OBJECTS):
    """The scenario validator and the engine's profile checks; problems mapped to their files."""
    from ..scenario import Scenario
    from ..scheduler import Engine
    try:
        sc = Scenario.from_dict(scenario, "import", max_objects)
        Engine(sc)
    except ScenarioError as e:
        raise ScenarioError([place_of(p) for p in e.problems], "import") from None


def import_paths(paths, fmt=None, **kw) -> ImportResult:
    """``import_files`` on files on disk; scheduler_perf templates a config names are looked for
    among ``paths`` and then on disk beside the config, as upstream resolves them (relative to
    the scheduler_perf directory, the config directory's parent)."""
    from pathlib import Path
    files = []
    problems = []
    for p in paths:
        try:
            files.append((str(p), Path(p).read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            problems.append(f"{p}: the file is not UTF-8 text")
        except OSError as e:
            problems.append(f"{p}: cannot read the file: {e.strerror or e}")
    if problems:
        raise ScenarioError(problems, "import")
    bases = []
    for p in paths:
        d = Path(p).resolve().parent
        bases += [d.parent, d]

    def resolve_path(rel):
        for b in bases:
            try:
                q = b / rel
                if q.is_file():
                    return q.read_text(encoding="utf-8")
            except (OSError, ValueError):     # a name too long, a NUL byte, not UTF-8 ...
                return None
        return None
    return import_files(files, fmt, resolve_path=resolve_path, **kw)


class _ScenarioDumper(yaml.SafeDumper):
    """Leaves in flow style (a dump of thousands of pods stays readable), multi-line text as
    ``|`` blocks, no anchors."""

    def ignore_aliases(self, data):
        return True


def _repr_str(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


def _repr_dict(dumper, data):
    block = any(isinstance(v, str) and "\n" in v for v in data.values())
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=False if block else None)


_ScenarioDumper.add_representer(str, _repr_str)
_ScenarioDumper.add_representer(dict, _repr_dict)


def dump_scenario(scenario: dict) -> str:
    """A scenario mapping as YAML: block style, leaves in flow style, keys in their order."""
    return yaml.dump(scenario, Dumper=_ScenarioDumper, sort_keys=False, default_flow_style=None,
                     allow_unicode=True, width=120)
