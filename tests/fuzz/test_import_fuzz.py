"""Seeded fuzzing of the importers (issue 22, "One upload must never take the server down"):
real-looking files (kubectl dumps as a List, as JSON and one object per document, a
kube-scheduler-simulator export, a KubeSchedulerConfiguration, scheduler_perf configs with
their templates, a scenario), changed as data (wrong types anywhere, huge counts, deep values,
removed fields) and as text (cuts, junk, deep flow collections, keys given twice), go through
the CLI's code path, ``python -m engine import``. Every input must end with exit 0 or 2 (never
1, never a signal), a clear message and no traceback, within 10 s and 1 GiB. Hostile inputs
that would crash the interpreter if a bound were missing run in a subprocess under an address
space limit; the amplifying scheduler_perf configs also run with the web app's smaller limit.

The seed is ``FUZZ_SEED`` (default 2026); a failure names the seed and the case, and the input
is in the pytest temporary directory, to replay with ``python -m engine import``.
"""
import copy
import io
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
import tracemalloc
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutate  # noqa: E402

from engine import ScenarioError  # noqa: E402
from engine.cli import main  # noqa: E402
from engine.importers import FORMATS, dump_scenario, import_paths  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
IMPORTERS = ROOT / "tests/engine/importers"
PERF = IMPORTERS / "data/scheduler_perf"
SEED = int(os.environ.get("FUZZ_SEED", "2026"))
CASES = 400                    # mutated inputs (the loop also stops after MUTATED_SECONDS)
MUTATED_SECONDS = 45
KIND_WEIGHTS = {"kubectl": 3, "scheduler-perf": 4, "simulator": 1, "scheduler-config": 1, "scenario": 1}
CASE_SECONDS = 10              # one input, on a busy 2-core machine
CASE_PEAK_BYTES = 2**30        # memory one input may take (tracemalloc's peak; the address space in a subprocess)
WEB_MAX_OBJECTS = 20_000       # the limit the web app passes

sys.path.insert(0, str(IMPORTERS))
import make_dump  # noqa: E402
import test_import  # noqa: E402


# ------------------------------------------------------------------ seeds

class Seed:
    """One import: its main document and the other files given with it ({name: data})."""

    def __init__(self, kind, name, data, others=None, style="yaml"):
        self.kind, self.name, self.data = kind, name, data
        self.others = others or {}
        self.style = style      # yaml, json or documents (one object a document)


def _text(data, style):
    if style == "json":
        return json.dumps(data, indent=1, default=str)
    if style == "documents" and isinstance(data, dict) and isinstance(data.get("items"), list):
        return "---\n".join(mutate.dump(i) for i in data["items"])
    return mutate.dump(data)


def _templates_named(case):
    """The template files a scheduler_perf test case names that the test data holds."""
    names = set(re.findall(r"config/[\w/.-]+\.yaml", json.dumps(case)))
    return {n: yaml.safe_load((PERF / n).read_text()) for n in sorted(names) if (PERF / n).is_file()}


def perf_seeds():
    """Each test case of upstream's performance-config.yaml whose templates the test data holds,
    with one small workload (params cut to 10, so that an unchanged case imports in a fraction of
    a second), with its templates."""
    seeds = []
    for tc in yaml.safe_load((PERF / "config/performance-config.yaml").read_text()):
        named = set(re.findall(r"config/[\w/.-]+\.yaml", json.dumps(tc)))
        if any(not (PERF / n).is_file() for n in named) or "ResourceClaim" in tc["name"]:
            continue
        tc = copy.deepcopy(tc)
        wl = tc["workloads"][0]
        wl["params"] = {k: min(v, 10) if isinstance(v, int) else v for k, v in (wl.get("params") or {}).items()}
        tc["workloads"] = [wl]
        seeds.append(Seed("scheduler-perf", "config/performance-config.yaml", [tc], _templates_named(tc)))
    return seeds


def all_seeds():
    small = test_import.small_dump()
    realistic = make_dump.make_dump(7)
    realistic["items"] = realistic["items"][:60]
    by_kind = {}
    for item in small["items"]:
        by_kind.setdefault(item["kind"], []).append(item)
    simulator = {"pods": by_kind["Pod"], "nodes": by_kind["Node"], "priorityClasses": by_kind["PriorityClass"],
                 "pvcs": by_kind["PersistentVolumeClaim"], "namespaces": by_kind["Namespace"],
                 "schedulerConfig": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                     "profiles": [{"schedulerName": "default-scheduler"}]}}
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "podInitialBackoffSeconds": 2, "percentageOfNodesToScore": 50,
              "profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}],
                                                  "disabled": [{"name": "ImageLocality"}]},
                                        "filter": {"disabled": [{"name": "EBSLimits"}]}},
                            "pluginConfig": [{"name": "NodeResourcesFit",
                                              "args": {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                                       "kind": "NodeResourcesFitArgs",
                                                       "scoringStrategy": {"type": "MostAllocated"}}}]},
                           {"schedulerName": "volcano"}]}
    scenario = yaml.safe_load((ROOT / "fixtures/05-leftover-flush-60s.yaml").read_text())
    return [
        Seed("kubectl", "dump.yaml", small),
        Seed("kubectl", "dump.json", small, style="json"),
        Seed("kubectl", "objects.yaml", small, style="documents"),
        Seed("kubectl", "cluster-dump.yaml", realistic),
        Seed("simulator", "snapshot.json", simulator, style="json"),
        Seed("scheduler-config", "scheduler-config.yaml", config, {"dump.yaml": small}),
        Seed("scenario", "scenario.yaml", scenario),
    ] + perf_seeds()


# ------------------------------------------------------------------ running one import

def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def web_import(paths):
    """The web app's call (a smaller object limit), as an exit status: 0 imported, 2 refused."""
    err = io.StringIO()
    try:
        dump_scenario(import_paths(paths, max_objects=WEB_MAX_OBJECTS).scenario)
        return 0, "", ""
    except ScenarioError as e:
        err.write(e.describe())
        return 2, "", err.getvalue()


def check(code, err, elapsed, peak, where):
    assert code in (0, 2), f"{where}: exit {code}\n{err[-3000:]}"
    assert "Traceback" not in err and "internal error" not in err, f"{where}\n{err[-3000:]}"
    if code == 2:
        assert err.strip() and len(err) < 200_000, f"{where}: {err[:300]!r}"
    assert elapsed < CASE_SECONDS, f"{where}: {elapsed:.1f}s"
    assert peak < CASE_PEAK_BYTES, f"{where}: {peak / 2**20:.0f} MiB"


def run_in_process(args, where, runner=None):
    """The import, traced by tracemalloc (only the import: making the input runs at full speed)."""
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        code, _out, err = runner(args) if runner else cli("import", *args)
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    check(code, err, elapsed, peak, where)
    return code, err


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (CASE_PEAK_BYTES, CASE_PEAK_BYTES))


def run_subprocess(args, where):
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "engine", "import", *args], cwd=ROOT, capture_output=True,
                           text=True, timeout=CASE_SECONDS, preexec_fn=_limit_address_space)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}: still running after {CASE_SECONDS}s")
    # a negative status is a signal (a segfault, the address space limit's abort ...)
    check(r.returncode, r.stderr, time.perf_counter() - t0, 0, where)
    return r.returncode, r.stderr


# ------------------------------------------------------------------ mutated inputs

def mutated_case(seed, rng):
    """(main document's text, {other file: text}, what was done) for one mutated import."""
    others = {name: _text(data, "yaml") for name, data in seed.others.items()}
    # the document to change: the main one, or (scheduler_perf, a scheduler configuration's
    # dump) one of the others
    target = seed.name
    if seed.others and rng.random() < 0.3:
        target = rng.choice(sorted(seed.others))
    data = seed.data if target == seed.name else seed.others[target]
    style = seed.style if target == seed.name else "yaml"
    roll = rng.random()
    if roll < 0.45:
        text, how = _text(mutate.mutate_data(data, rng), style), "data"
    elif roll < 0.65:
        text, how = _text(mutate.inflate_counts(data, rng), style), "counts"
    elif roll < 0.75:
        text, how = mutate.duplicate_keys(_text(data, "yaml"), rng), "duplicate keys"
    else:
        text, how = mutate.mutate_text(_text(data, style), rng), "text"
    main = text if target == seed.name else _text(seed.data, seed.style)
    if target != seed.name:
        others[target] = text
    return main, others, f"{how} of {target}"


def write_case(tmp_path, i, seed, main, others):
    case = tmp_path / f"case-{SEED}-{i}"
    paths = []
    for name, text in [(seed.name, main)] + sorted(others.items()):
        p = case / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8", errors="surrogatepass")
        paths.append(str(p))
    return paths


def test_mutated_imports_through_the_cli(tmp_path):
    rng = random.Random(SEED)
    seeds = all_seeds()
    outcomes = {0: 0, 2: 0}
    kinds = {}
    started = time.perf_counter()
    kinds_list = sorted(KIND_WEIGHTS)
    for i in range(CASES):
        kind = rng.choices(kinds_list, [KIND_WEIGHTS[k] for k in kinds_list])[0]
        seed = rng.choice([s for s in seeds if s.kind == kind])
        main_text, others, how = mutated_case(seed, rng)
        paths = write_case(tmp_path, i, seed, main_text, others)
        args = paths + ["-o", str(tmp_path / "out.yaml")]
        if rng.random() < 0.1:
            args += ["--format", rng.choice(FORMATS)]
        if seed.kind == "scheduler-perf" and rng.random() < 0.1:
            args += [rng.choice(["--test-case", "--workload"]), rng.choice(["x", "SchedulingBasic", "500Nodes"])]
        where = f"seed {SEED} case {i} ({seed.kind} {seed.name}, {how}): python -m engine import {' '.join(args)}"
        code, _ = run_in_process(args, where)
        outcomes[code] += 1
        kinds.setdefault(seed.kind, {0: 0, 2: 0})[code] += 1
        if time.perf_counter() - started > MUTATED_SECONDS:
            break
    # the mutations reach both imports that go through and refusals, in every format
    assert outcomes[0] > 20 and outcomes[2] > 50, outcomes
    assert set(kinds) == {"kubectl", "simulator", "scheduler-config", "scheduler-perf", "scenario"}, kinds
    assert kinds["scheduler-perf"][0] > 5 and kinds["kubectl"][0] > 5, kinds
    print(f"import fuzz: {sum(outcomes.values())} inputs in {time.perf_counter() - started:.0f}s, {outcomes}, {kinds}")


# ------------------------------------------------------------------ hostile inputs

DEEP = 30_000
HOSTILE_TEXTS = {
    # nesting that libyaml's recursive composer (or json's) would follow down the C stack
    "deep-flow.yaml": "a: " + "[" * DEEP + "]" * DEEP + "\n",
    "deep-bom.json": "\ufeff" + '{"a": ' + "[" * DEEP + "]" * DEEP + "}",
    "deep-json.json": '{"kind": "List", "items": ' + "[" * DEEP + "]" * DEEP + "}",
    "deep-maps.yaml": "a: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n",
    "deep-block.yaml": "".join(" " * i + "- \n" for i in range(0, 2 * 3000, 2)),
    "alias-bomb.yaml": "kind: List\nitems: []\n" + mutate.alias_bomb(9, 9),
}


def perf_config(ops):
    return yaml.safe_dump([{"name": "Hostile", "workloadTemplate": ops, "workloads": [{"name": "w", "params": {}}]}])


BIG_TEMPLATE = yaml.safe_dump({"apiVersion": "v1", "kind": "Node",
                               "metadata": {"generateName": "big-", "labels": {f"l{i}": "x" for i in range(1000)}},
                               "status": {"capacity": {"cpu": "4", "pods": "110"}}})
# scheduler_perf configs of a few hundred bytes that asked for unbounded work
AMPLIFYING = {
    "namespaces.yaml": (perf_config([{"opcode": "createNamespaces", "count": 10**12}]), {}),
    "pod-sets.yaml": (perf_config([{"opcode": "createPodSets", "count": 10**8, "namespacePrefix": "ns",
                                    "createPodsOp": {"opcode": "createPods", "count": 1}}]), {}),
    "empty-pod-sets.yaml": (perf_config([{"opcode": "createPodSets", "count": 10**8,
                                          "createPodsOp": {"opcode": "createPods", "count": 0}}]), {}),
    "nodes.yaml": (perf_config([{"opcode": "createNodes", "count": 10**12}]), {}),
    "churn.yaml": (perf_config([{"opcode": "createNodes", "count": 1},
                                {"opcode": "churn", "mode": "create", "intervalMilliseconds": 1,
                                 "templatePaths": ["config/churn/node-default.yaml"]},
                                {"opcode": "sleep", "duration": "250h"}]),
                   {"config/churn/node-default.yaml": (PERF / "config/churn/node-default.yaml").read_text()}),
    "big-template.yaml": (perf_config([{"opcode": "createNodes", "count": 150_000, "nodeTemplatePath": "big.yaml"}]),
                          {"big.yaml": BIG_TEMPLATE}),
}
# within the CLI's limit (200,000 objects), refused by the web app's (20,000) before one is made:
# 157 bytes asked for 199,000 nodes
WEB_ONLY = {"199k-nodes.yaml": perf_config([{"opcode": "createNodes", "count": 199_000}])}


def test_hostile_texts_in_a_subprocess_with_an_address_space_limit(tmp_path):
    for name, text in HOSTILE_TEXTS.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        code, err = run_subprocess([str(path)], f"hostile {name} ({path})")
        assert code == 2, f"{name}: {err[:500]}"


def test_amplifying_scheduler_perf_configs_are_refused(tmp_path):
    for name, (text, templates) in AMPLIFYING.items():
        case = tmp_path / name.replace(".yaml", "")
        paths = []
        for fname, ftext in [(name, text)] + list(templates.items()):
            p = case / fname
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(ftext, encoding="utf-8")
            paths.append(str(p))
        where = f"amplifying {name} ({paths[0]})"
        code, err = run_in_process(paths + ["-o", str(tmp_path / "out.yaml")], where)
        assert code == 2 and ("cluster objects; at most 200,000 are allowed" in err
                              or "values in all; at most 20,000,000 are allowed" in err), f"{where}: {err[:500]}"
        code, err = run_in_process(paths, where + " (web limit)", runner=web_import)
        assert code == 2 and "are allowed" in err, f"{where}: {err[:500]}"
    for name, text in WEB_ONLY.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        code, err = run_in_process([str(path)], f"{name} ({path}) with the web limit", runner=web_import)
        assert code == 2 and "at most 20,000 are allowed" in err, err[:500]
    # and through a subprocess, which an endless loop could not hang
    path = tmp_path / "namespaces.yaml"
    path.write_text(AMPLIFYING["namespaces.yaml"][0], encoding="utf-8")
    code, err = run_subprocess([str(path)], f"amplifying namespaces.yaml ({path})")
    assert code == 2 and "1,000,000,000,000 namespaces" in err, err


# ------------------------------------------------------------------ the same inputs through the upload form

WEB_CASES = 60                 # mutated uploads (each starts a worker process: about 0.5 s)
WEB_SECONDS = 60
WEB_CASE_SECONDS = 20          # one upload, answer included (the worker's own CPU limit is 30 s)


def _upload(client, files):
    from django.core.files.uploadedfile import SimpleUploadedFile
    uploads = [SimpleUploadedFile(name, text.encode("utf-8", "surrogatepass"), content_type="application/yaml")
               for name, text in files]
    started = time.perf_counter()
    response = client.post("/sessions/", {"scenario_file": uploads})
    return response, time.perf_counter() - started


@pytest.mark.django_db
def test_the_same_inputs_uploaded_get_an_answer_and_the_server_stays_up(client):
    """Issue 22: the web upload of the fuzz's inputs (mutated files with their templates, the
    hostile texts, the amplifying configs) answers 302 (a session), 400 or 413, each in bounded
    time, with the problems listed, never a 500; the worker process takes any crash (this test
    process, the server here, is still running at the end) and a session is still started."""
    from visualizer.models import Session
    rng = random.Random(SEED + 1)
    seeds = all_seeds()
    kinds_list = sorted(KIND_WEIGHTS)
    cases = []
    for i in range(WEB_CASES):
        kind = rng.choices(kinds_list, [KIND_WEIGHTS[k] for k in kinds_list])[0]
        seed = rng.choice([s for s in seeds if s.kind == kind])
        main_text, others, how = mutated_case(seed, rng)
        cases.append((f"mutated {i} ({seed.kind} {seed.name}, {how})", [(seed.name, main_text)] + sorted(others.items())))
    cases += [(f"hostile {name}", [(name, text)]) for name, text in HOSTILE_TEXTS.items()]
    cases += [(f"amplifying {name}", [(name, text)] + list(templates.items()))
              for name, (text, templates) in AMPLIFYING.items()]
    cases += [(f"web only {name}", [(name, text)]) for name, text in WEB_ONLY.items()]
    statuses = {}
    started = time.perf_counter()
    for where, files in cases:
        if where.startswith("mutated") and time.perf_counter() - started > WEB_SECONDS:
            continue            # past the time box: the hostile and amplifying cases still run
        response, took = _upload(client, files)
        body = response.content.decode("utf-8", "replace")
        assert response.status_code in (302, 400, 413), f"seed {SEED + 1} {where}: HTTP {response.status_code}\n{body[-2000:]}"
        assert took < WEB_CASE_SECONDS, f"seed {SEED + 1} {where}: {took:.1f} s"
        if response.status_code != 302:
            assert "<li data-problem>" in body, f"{where}: no problem listed"
            assert "Traceback" not in body, where
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
    assert statuses.get(400, 0) > 10 and statuses.get(302, 0) > 3, statuses
    before = Session.objects.count()
    response, _ = _upload(client, [("preemption.yaml", (ROOT / "docs/examples/preemption.yaml").read_text())])
    assert response.status_code == 302 and Session.objects.count() == before + 1
    print(f"web import fuzz: {len(cases)} uploads in {time.perf_counter() - started:.0f}s, {statuses}")
