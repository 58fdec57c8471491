"""The headless CLI (SPEC.md §2).

    python -m engine run SCENARIO [--until SECONDS] [--state PATH|-] [--trace PATH|-] [--plugins P]...
    python -m engine validate SCENARIO [--plugins P]...
    python -m engine import FILE... [--format F] [-o SCENARIO] [--test-case T] [--workload W]
    python -m engine export SCENARIO [--until SECONDS] [--scenario PATH|-] [--state PATH|-]
                            [--trace PATH|-] [--results PATH|-] [--plugins P]...
    python -m engine compare SCENARIO [--plugins P]... [--until T] [--json]
        (--gate-b GATE=BOOL | --disable-b PLUGIN | --weight-b PLUGIN=W | --config-b FILE)...
    python -m engine explain FILE [--pod NS/NAME] [--until T] [--json] [--plugins P]...

``--plugins`` loads out-of-tree plugins (a ``.py`` file or a dotted module name declaring
``PLUGINS = {"Name": factory}``; see ``engine.plugins.loader``).

Exit 0 on success; 2 with a one-paragraph message on standard error for an invalid scenario,
arguments or plugin module; 3 when the run finished but out-of-tree plugin calls failed (a
summary on standard error); 1 for an internal error (a bug in the engine).
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback

from .errors import ScenarioError
from .quantity import parse_duration
from .trace import JsonLinesWriter, Trace

EXIT_PLUGIN_ERRORS = 3


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser():
    p = _ArgumentParser(prog="python -m engine",
                        description="A deterministic, steppable kube-scheduler v1.28, headless.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)
    r = sub.add_parser("run", help="run a scenario and write its final state and trace (with neither "
                                   "--state nor --trace: print a one-screen summary)")
    r.add_argument("scenario")
    r.add_argument("--until", help="stop once everything due at virtual times <= SECONDS happened")
    r.add_argument("--state", help="write the final state as JSON to PATH (- for standard output)")
    r.add_argument("--trace", help="write every trace event as JSON Lines to PATH (- for standard output)")
    rx = r.add_mutually_exclusive_group()
    rx.add_argument("--extender-record", metavar="FILE",
                    help="record every scheduler extender call's reply (or error) and latency to FILE (JSON)")
    rx.add_argument("--extender-replay", metavar="FILE",
                    help="answer every scheduler extender call from FILE (made by --extender-record); "
                         "never call an extender")
    v = sub.add_parser("validate", help="check a scenario and report every problem with its place")
    v.add_argument("scenario")
    from .importers import FORMATS
    im = sub.add_parser("import", help="convert a cluster dump, a simulator export, a scheduler_perf workload "
                                       "or a KubeSchedulerConfiguration into a scenario")
    im.add_argument("files", nargs="+", metavar="FILE")
    im.add_argument("--format", choices=FORMATS, help="read every file as this format (default: detected per document)")
    im.add_argument("-o", "--output", help="write the scenario to this file (default: standard output, "
                                           "the report then goes to standard error)")
    im.add_argument("--name", help="the scenario's metadata.name (default: from the first file or the workload)")
    im.add_argument("--test-case", help="scheduler_perf: the test case to import")
    im.add_argument("--workload", help="scheduler_perf: the workload (params) to import")
    im.add_argument("--op-interval", default="1s",
                    help="scheduler_perf: virtual time between an op that waits for its pods and the next (default 1s)")
    im.add_argument("--report-json", help="also write the report as JSON to this file")
    ex = sub.add_parser("export", help="run a scenario to a position and export the cluster there as a scenario, "
                                       "the state, the trace and kube-scheduler-simulator's result annotations")
    ex.add_argument("scenario")
    ex.add_argument("--until", help="the position: everything due at virtual times <= SECONDS happened "
                                    "(default: until idle)")
    ex.add_argument("--scenario", dest="out_scenario", metavar="PATH",
                    help="write the cluster at that position as a scenario (YAML) to PATH")
    ex.add_argument("--state", help="write the state JSON to PATH")
    ex.add_argument("--trace", help="write the trace up to that position as JSON Lines to PATH")
    ex.add_argument("--results", help="write the pods with kube-scheduler-simulator's result annotations "
                                      "(a v1 List, JSON) to PATH")

    c = sub.add_parser("compare", help="run a scenario under two scheduler configurations and say what changed")
    c.add_argument("scenario")
    c.add_argument("--until", help="compare at this virtual time (default: when both runs are idle)")
    c.add_argument("--gate-b", action="append", default=[], metavar="GATE=BOOL",
                   help="configuration B sets a feature gate, e.g. SchedulerQueueingHints=true")
    c.add_argument("--disable-b", action="append", default=[], metavar="PLUGIN",
                   help="configuration B runs without this plugin")
    c.add_argument("--weight-b", action="append", default=[], metavar="PLUGIN=WEIGHT",
                   help="configuration B gives this score plugin another weight (1-100)")
    c.add_argument("--config-b", metavar="FILE",
                   help="configuration B uses the scheduler: section of this YAML file (or the whole "
                        "file as that section)")
    c.add_argument("--profile-b", metavar="SCHEDULER_NAME",
                   help="apply --disable-b and --weight-b to this profile only (default: every profile)")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON")
    e = sub.add_parser("explain", help="run a scenario (or anything import reads) and say what happened to "
                                       "every pod pending at the start: bound where and why, or why still pending")
    e.add_argument("file", metavar="FILE")
    e.add_argument("--pod", metavar="NS/NAME", help="report on this pod only")
    e.add_argument("--until", help="stop once everything due at virtual times <= SECONDS happened "
                                   "(default: until idle)")
    e.add_argument("--json", action="store_true", help="print the report as JSON (fields: docs/cli.md)")
    for sp in (r, v, ex, c, e):
        sp.add_argument("--plugins", action="append", default=[], metavar="PATH_OR_MODULE",
                        help="load out-of-tree plugins from a .py file or a dotted module name that "
                             "defines PLUGINS = {\"Name\": factory} (repeatable)")
    return p


_BAD = object()


def _extender_transport(args):
    """The transport the engine calls scheduler extenders through (engine/extender.py): over
    HTTP to the urlPrefixes SCHEDULER_EXTENDERS allows, recorded with --extender-record, or
    answered from a record with --extender-replay. ``(transport, recorder or None)``, or
    ``(_BAD, None)`` after reporting an unreadable record."""
    import time
    from .extender import HTTPTransport, RecordingTransport, ReplayTransport, load_record
    replay = getattr(args, "extender_replay", None)
    if replay:
        try:
            with open(replay, encoding="utf-8") as fh:
                calls = load_record(fh.read())
        except (OSError, ValueError) as e:
            print(f"python -m engine: error: --extender-replay {replay}: {e}", file=sys.stderr)
            return _BAD, None
        return ReplayTransport(calls), None
    live = HTTPTransport(clock=time.perf_counter)
    if getattr(args, "extender_record", None):
        rec = RecordingTransport(live)
        return rec, rec
    return live, None


def _write_record(args, recorder) -> None:
    if recorder is not None:
        from .extender import dump_record
        with open(args.extender_record, "w", encoding="utf-8") as fh:
            fh.write(dump_record(recorder.records))


def _until(args):
    """``--until`` in virtual microseconds, None when absent, or ``_BAD`` after printing why."""
    if args.until is None:
        return None
    try:
        return parse_duration(args.until)
    except ValueError as e:
        print(f"python -m engine: error: --until: {e}", file=sys.stderr)
        return _BAD


def _os_error(e: OSError) -> int:
    """A file that cannot be read or written: exit 2 with the file and the reason."""
    where = f"{e.filename}: " if e.filename else ""
    print(f"python -m engine: error: {where}{e.strerror or e}", file=sys.stderr)
    return 2


def _internal_error(part: str, evidence: str) -> int:
    """A bug (exit 1): say so, with the traceback, and what to report it with."""
    print(f"python -m engine: internal error (a bug in the {part}; please report it with the {evidence}):",
          file=sys.stderr)
    traceback.print_exc()
    return 1


def _load_plugins(specs) -> bool:
    from .plugins.loader import PluginLoadError, load
    for spec in specs:
        try:
            load(spec)
        except PluginLoadError as e:
            print(f"python -m engine: error: --plugins {e.source}: {e.reason}", file=sys.stderr)
            return False
    return True


def summarize_plugin_errors(errors) -> str:
    """A few lines per distinct failure: plugin, extension point, error, how often, the first
    pod and cycle, and the plugin's own frames."""
    groups: dict = {}
    for err, pod, cycle in errors:
        k = (err.plugin, err.point, err.type, err.message)
        g = groups.get(k)
        if g is None:
            groups[k] = [1, err, pod, cycle]
        else:
            g[0] += 1
    lines = [f"python -m engine: {len(errors)} out-of-tree plugin call{'s' if len(errors) != 1 else ''} failed "
             f"(each became that call's Error status; the run went on):"]
    for (plugin, point, type_, message), (n, err, pod, cycle) in groups.items():
        first = f"first: pod {pod}" + (f", cycle {cycle}" if cycle else "") + (f", node {err.node}" if err.node else "")
        lines.append(f"  - {plugin} {point}: {type_}: {message} ({n}x; {first})")
        for fr in err.frames:
            lines.append(f"      {fr}")
    return "\n".join(lines)


def _variation(args):
    """The Variation the --*-b flags describe, or a list of problems."""
    from . import yamlload

    from .compare import Variation
    var, probs = Variation(profile=args.profile_b), []
    for g in args.gate_b:
        name, sep, value = g.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            probs.append(f"--gate-b {g}: expected GATE=true or GATE=false")
        else:
            var.gates[name.strip()] = value.strip().lower() == "true"
    var.disable = [d.strip() for d in args.disable_b]
    for w in args.weight_b:
        name, sep, value = w.partition("=")
        try:
            var.weights[name.strip()] = int(value) if sep else None
        except ValueError:
            var.weights[name.strip()] = None
        if var.weights[name.strip()] is None:
            probs.append(f"--weight-b {w}: expected PLUGIN=WEIGHT with an integer weight")
    if args.config_b:
        try:
            with open(args.config_b, encoding="utf-8") as fh:
                data = yamlload.load_data(fh.read(yamlload.MAX_BYTES + 1))
        except yamlload.YAMLLoadError as e:
            probs.append(f"--config-b {args.config_b}: {e}")
            data = None
        except UnicodeDecodeError:
            probs.append(f"--config-b {args.config_b}: the file is not UTF-8 text")
            data = None
        if isinstance(data, dict) and "scheduler" in data:
            data = data["scheduler"]
        var.scheduler = data if data is not None else {}
    if not probs and var.is_empty():
        probs.append("compare needs a configuration B: give --gate-b, --disable-b, --weight-b or --config-b")
    return var, probs


def _compare(args, scenario) -> int:
    from .compare import compare_scenarios, format_text, vary
    until = _until(args)
    if until is _BAD:
        return 2
    variation, probs = _variation(args)
    if probs:
        for p in probs:
            print(f"python -m engine: error: {p}", file=sys.stderr)
        return 2
    try:
        from .scheduler import Engine
        Engine(scenario, Trace(enabled=False))
    except ScenarioError as e:
        e.source = args.scenario
        print(e.describe(), file=sys.stderr)
        return 2
    try:
        scenario_b = vary(scenario, variation, source=f"{args.scenario} (B: {variation.describe()})")
    except ScenarioError as e:
        print(e.describe(), file=sys.stderr)
        return 2
    result, _ra, _rb = compare_scenarios(scenario, scenario_b, time_us=until,
                                         labels=("as written", variation.describe()),
                                         extender_transports=(_extender_transport(args)[0],
                                                              _extender_transport(args)[0]))
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(result))
    return 0


def _open(path):
    if path == "-":
        return sys.stdout, False
    return open(path, "w", encoding="utf-8"), True


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "import":
        return _import(args)
    if args.command == "export":
        if not _load_plugins(args.plugins):
            return 2
        return _export(args)
    if args.command == "explain":
        if not _load_plugins(args.plugins):
            return 2
        return _explain(args)
    try:
        if not _load_plugins(args.plugins):
            return 2
        from .scenario import Scenario
        try:
            scenario = Scenario.from_path(args.scenario)
        except ScenarioError as e:
            print(e.describe(), file=sys.stderr)
            return 2
        if args.command == "compare":
            return _compare(args, scenario)
        if args.command == "validate":
            # The scheduler profiles (plugins, pluginConfig) are checked when the engine is
            # built, so validate builds one too: a scenario that `run` would refuse is invalid.
            from .scheduler import Engine
            try:
                Engine(scenario, Trace(enabled=False))
            except ScenarioError as e:
                e.source = args.scenario
                print(e.describe(), file=sys.stderr)
                return 2
            print(f"{args.scenario}: valid ({len(scenario.objects)} objects, {len(scenario.actions)} actions)")
            return 0
        until = _until(args)
        if until is _BAD:
            return 2
        if args.state == "-" and args.trace == "-":
            print("python -m engine: error: --state and --trace cannot both be standard output", file=sys.stderr)
            return 2
        from .scheduler import Engine
        trace = Trace(enabled=False)
        trace_fh = None
        to_close = []
        collector = None
        if not args.state and not args.trace:
            # the one-screen summary (engine.explain.format_summary): the trace is streamed
            # through explain's Collector, which keeps only what the report needs
            from .explain import Collector
            collector = Collector()
            trace.add_sink(collector)
        try:
            if args.trace:
                trace_fh, close = _open(args.trace)
                if close:
                    to_close.append(trace_fh)
                trace.add_sink(JsonLinesWriter(trace_fh))
            transport, recorder = _extender_transport(args)
            if transport is _BAD:
                return 2
            try:
                engine = Engine(scenario, trace, transport)
            except ScenarioError as e:
                e.source = args.scenario
                print(e.describe(), file=sys.stderr)
                return 2
            from .extender import ExtenderReplayError
            try:
                engine.run(until)
            except ExtenderReplayError as e:
                print(f"python -m engine: error: --extender-replay {args.extender_replay}: {e}", file=sys.stderr)
                return 2
            finally:
                _write_record(args, recorder)
            plugin_errors = engine.plugin_errors()
            if collector is not None:
                from .explain import build_report, format_summary
                sys.stdout.write(format_summary(build_report(scenario, engine, collector, until, which="all")))
                sys.stdout.flush()
            if args.state:
                fh, close = _open(args.state)
                try:
                    json.dump(engine.state(), fh, indent=2)
                    fh.write("\n")
                finally:
                    if close:
                        fh.close()
        finally:
            for fh in to_close:
                fh.close()
            if trace_fh is sys.stdout:
                sys.stdout.flush()
        if plugin_errors:
            print(summarize_plugin_errors(plugin_errors), file=sys.stderr)
            return EXIT_PLUGIN_ERRORS
        return 0
    except OSError as e:
        return _os_error(e)
    except Exception:  # pragma: no cover - a bug
        return _internal_error("engine", "scenario")


def _import(args) -> int:
    """``python -m engine import``: write the scenario, print the report (SPEC-style exits)."""
    try:
        from .importers import dump_scenario, import_paths
        try:
            interval = parse_duration(args.op_interval)
        except ValueError as e:
            print(f"python -m engine: error: --op-interval: {e}", file=sys.stderr)
            return 2
        try:
            result = import_paths(args.files, args.format, test_case=args.test_case, workload=args.workload,
                                  name=args.name, op_interval=interval)
        except ScenarioError as e:
            print(e.describe(), file=sys.stderr)
            return 2
        text = dump_scenario(result.scenario)
        report_fh = sys.stdout
        if args.output and args.output != "-":
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
            report_fh = sys.stderr
        print(result.report.text(), file=report_fh)
        if args.output and args.output != "-":
            print(f"wrote {args.output} ({len(result.scenario.get('objects') or [])} objects, "
                  f"{len(result.scenario.get('actions') or [])} actions)", file=report_fh)
        if args.report_json:
            with open(args.report_json, "w", encoding="utf-8") as fh:
                json.dump(result.report.as_dict(), fh, indent=2)
                fh.write("\n")
        return 0
    except OSError as e:
        return _os_error(e)
    except Exception:  # pragma: no cover - a bug
        return _internal_error("importer", "files")


def _export(args) -> int:
    """``python -m engine export``: the cluster at a position, in four forms."""
    outs = [o for o in (args.out_scenario, args.state, args.trace, args.results) if o]
    if not outs:
        print("python -m engine: error: export: give at least one of --scenario, --state, --trace, --results",
              file=sys.stderr)
        return 2
    if outs.count("-") > 1:
        print("python -m engine: error: only one output can be standard output", file=sys.stderr)
        return 2
    try:
        from .export import annotated_pods, scenario_at
        from .importers import dump_scenario
        from .scenario import Scenario
        from .scheduler import Engine
        until = _until(args)
        if until is _BAD:
            return 2
        try:
            scenario = Scenario.from_path(args.scenario)
            events = []
            trace = Trace(enabled=False)
            trace.add_sink(events.append)
            engine = Engine(scenario, trace, _extender_transport(args)[0])
        except ScenarioError as e:
            e.source = args.scenario
            print(e.describe(), file=sys.stderr)
            return 2
        engine.run(until)

        def write(path, text):
            if path == "-":
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
        if args.out_scenario:
            write(args.out_scenario, dump_scenario(scenario_at(engine)))
        if args.state:
            write(args.state, json.dumps(engine.state(), indent=2) + "\n")
        if args.trace:
            write(args.trace, "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n"
                                      for e in events))
        if args.results:
            write(args.results, json.dumps(annotated_pods(engine, events), indent=2) + "\n")
        return 0
    except OSError as e:
        return _os_error(e)
    except Exception:  # pragma: no cover - a bug
        return _internal_error("exporter", "scenario")


def _explain(args) -> int:
    """``python -m engine explain``: FILE is read as ``import`` reads it (a scenario stays as it
    is; a dump, an export, a workload becomes a scenario), then run and reported on."""
    try:
        from .explain import explain_run, format_text
        from .importers import import_paths
        from .scenario import Scenario
        until = _until(args)
        if until is _BAD:
            return 2
        try:
            result = import_paths([args.file])      # reported as `import` reports them
            if "scenario" in result.report.formats.values():
                scenario = Scenario.from_path(args.file)     # its problems with line and column
            else:
                scenario = Scenario.from_dict(result.scenario, args.file)
        except ScenarioError as e:
            print(e.describe(), file=sys.stderr)
            return 2
        try:
            report, engine = explain_run(scenario, until, extender_transport=_extender_transport(args)[0])
        except ScenarioError as e:
            e.source = args.file
            print(e.describe(), file=sys.stderr)
            return 2
        if args.pod:
            report["pods"] = [p for p in report["pods"] if p["pod"] == args.pod]
            if not report["pods"]:
                print(f"python -m engine: error: --pod {args.pod}: no such pod pending at the start of "
                      f"{args.file} (give NAMESPACE/NAME of a pod without spec.nodeName)", file=sys.stderr)
                return 2
            report["total"] = 1
            report["counts"] = {o: int(report["pods"][0]["outcome"] == o) for o in report["counts"]}
        if args.json:
            json.dump(report, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(format_text(report))
        plugin_errors = engine.plugin_errors()
        if plugin_errors:
            sys.stdout.flush()
            print(summarize_plugin_errors(plugin_errors), file=sys.stderr)
            return EXIT_PLUGIN_ERRORS
        return 0
    except OSError as e:
        return _os_error(e)
    except Exception:  # pragma: no cover - a bug
        return _internal_error("engine", "file")
