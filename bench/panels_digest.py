"""One sha256 per scenario of every panel the session page renders, to prove a refactoring of
the presenters (issue 23: one module per panel) byte-identical.

    .venv/bin/python bench/panels_digest.py [--max-steps 600] [NAME ...]

For every lesson in fixtures/*.yaml, every scenario among docs/examples/*.yaml (a file the
runner refuses, such as broken.yaml, is listed as skipped), one built here with more nodes
than NODE_CARD_LIMIT and more pods than a queue page (the node overview, queue and matrix
pages) and the two scenarios of tests/visualizer/plugin_sources.py whose plugins raise (their
errors in the Filter matrix, the score table and the log), a session is opened through
``visualizer.runner`` in a temporary SQLite database and stepped as a presenter would: five
single events (a unit revealed in part), then by extension point to the end (at most
``--max-steps`` steps). The plugins they name are loaded as the server loads them, through
SCHEDULER_PLUGINS. It stops at every cue that becomes reached, at every 7th step and at the
end, then travels back to a few positions (the time travel path). At each stop it renders:

- every panel (``presenters.render_panels(live)``),
- the view panels with two page views (queue and matrix pages, the outcome filter; the node
  search, label filter, colour and selected node),
- the log with a type filter and with a pod filter,
- the targets' datalists, and the status panel once,

and feeds the bytes to the scenario's sha256 (the session's random link tokens and the
temporary directory replaced by placeholders). It prints one line per scenario (name, digest,
stops) and the sha256 of those lines as the total. Run it before and after a change: the
totals must be equal (``--dump DIR`` writes what was digested, to diff two runs).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# the page views rendered at each stop (normalize_view keeps only what it knows)
VIEWS = ({"page-activeQ": 2, "page-backoffQ": 1, "page-unschedulablePods": 1, "page-matrix": 1,
          "outcome": "filtered"},
         {"outcome": "feasible", "find": "n0", "label": "zone=z1", "colour": "memory", "node": "n01"})

# the example plugins the lessons and examples name: Coscheduling (lesson 20), GPUOnly (gpu*.yaml)
PLUGINS = ("coscheduling.py", "gpu_only.py")


def large_scenario() -> str:
    """More nodes than NODE_CARD_LIMIT (the overview), more pods than a queue page, some that
    never fit (unschedulablePods, a Filter matrix with filtered-out rows)."""
    objects = []
    for i in range(120):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": f"n{i:02d}", "labels": {"zone": f"z{i % 3}",
                                                             **({"disk": "ssd"} if i % 5 == 0 else {})}},
                "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}}}
        if i % 10 == 9:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        if i % 17 == 3:
            node.setdefault("spec", {})["unschedulable"] = True
        objects.append(node)
    for i in range(40):
        cpu = "3" if i % 9 == 4 else "1"
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:02d}"},
                        "spec": {"priority": i % 4 * 100,
                                 "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu,
                                                                                         "memory": "1Gi"}}}]}})
    return json.dumps({"kind": "Scenario", "metadata": {"name": "large-digest"}, "objects": objects})


def sources() -> list:
    """[(name, text, source path)] of the scenarios digested, in a fixed order."""
    from tests.visualizer.plugin_sources import SCORE_BUGS, ZONES
    out = []
    for path in sorted((ROOT / "fixtures").glob("*.yaml")) + sorted((ROOT / "docs" / "examples").glob("*.yaml")):
        out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"), str(path)))
    out.append(("<large-digest>", large_scenario(), "<large-digest>"))
    out += [("<zone-pin>", ZONES, "<zone-pin>"), ("<score-bugs>", SCORE_BUGS, "<score-bugs>")]
    return out


def digest(name: str, text: str, source: str, max_steps: int, dump=None, tmp=""):
    from visualizer import presenters, runner
    from visualizer.errors import ControlError

    try:
        runner.validate_scenario(text, source)
    except Exception as exc:   # not a scenario (broken.yaml): named, not digested
        return None, f"skipped: {type(exc).__name__}"
    session = runner.create_session(text, source)
    h = hashlib.sha256()
    stops = 0

    # the session's link tokens are random, and so is the temporary directory the buggy
    # plugins' tracebacks name: written as placeholders, so that two runs compare
    tokens = ((session.presenter_token, "{presenter-token}"), (session.follower_token, "{follower-token}"),
              (tmp, "{tmp}"))

    def feed(label, value):
        value = str(value)
        for token, placeholder in tokens:
            value = value.replace(token, placeholder)
        data = label.encode() + b"\0" + value.encode() + b"\0"
        h.update(data)
        if dump is not None:
            dump.write(data.replace(b"\0", b"\n"))

    def render(live, why):
        nonlocal stops
        stops += 1
        feed("stop", f"{why} {live.position} {live.high_water}")
        for pid, html in presenters.render_panels(live):
            feed(pid, html)
        for view in VIEWS:
            for pid, html in presenters.render_panels(live, names=presenters.VIEW_PANELS,
                                                      view=presenters.normalize_view(view)):
                feed(pid, html)
        pods = sorted(live.stepper.engine.pods)
        for log_filter in ({"type": "PluginResult"}, {"pod": pods[len(pods) // 2] if pods else "none"}):
            for pid, html in presenters.render_panels(live, names=("log",), log_filter=log_filter):
                feed(pid, html)
        version, html = presenters.targets_html(live)
        feed("targets", version + html)

    def reached(live) -> int:
        return len(presenters.context(live, names=("narrative",))["narrative"]["cues"])

    with runner.open_live(session.pk) as live:
        render(live, "start")
        cues = reached(live)
    steps = 0
    while steps < max_steps:
        kind = "step-event" if steps < 5 else "step-point"
        try:
            result = runner.control(session.pk, {"action": kind})
        except ControlError as exc:   # a budget or limit: the end of this run
            feed("control", exc)
            break
        steps += 1
        with runner.open_live(session.pk) as live:
            now = reached(live)
            ended = bool(result["note"]) or live.finished
            if now != cues or steps % 7 == 0 or ended or steps == max_steps:
                render(live, f"cue {now}" if now != cues else ("end" if ended else f"step {steps}"))
            cues = now
        if ended:
            break
    with runner.open_live(session.pk) as live:
        high = live.high_water
    for target in sorted({high // 3, high // 2, (2 * high) // 3, 1, 0}):   # travelling back
        runner.control(session.pk, {"action": "jump", "position": target})
        with runner.open_live(session.pk) as live:
            render(live, f"jump {target}")
    runner.control(session.pk, {"action": "step-point"})
    with runner.open_live(session.pk) as live:
        render(live, "after jump")
    return h.hexdigest(), f"{stops} stops, {steps} steps"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-steps", type=int, default=600)
    ap.add_argument("--dump", type=Path, help="also write every byte digested to DUMP/<scenario>.txt "
                    "(to diff two runs that differ)")
    ap.add_argument("names", nargs="*", help="digest only these (substrings of the names)")
    args = ap.parse_args(argv)
    tmp = tempfile.TemporaryDirectory(prefix="panels-digest-")
    os.environ["DATABASE_PATH"] = str(Path(tmp.name) / "db.sqlite3")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "visualizer.settings")
    # loaded at start as the server loads them: the example plugins, and the buggy ones (errors
    # in Filter, Score and PreFilter)
    from tests.visualizer.plugin_sources import SCORE_BUG, ZONE_PIN, write_plugin
    buggy = [write_plugin(tmp.name, "zone_pin.py", ZONE_PIN), write_plugin(tmp.name, "score_bug.py", SCORE_BUG)]
    os.environ["SCHEDULER_PLUGINS"] = ",".join([str(ROOT / "docs" / "examples" / f) for f in PLUGINS]
                                               + [str(b) for b in buggy])
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    from visualizer import presenters
    total = hashlib.sha256()
    for name, text, source in sources():
        if args.names and not any(n in name for n in args.names):
            continue
        dump = None
        if args.dump is not None:
            args.dump.mkdir(parents=True, exist_ok=True)
            dump = open(args.dump / (name.strip("<>").replace("/", "_") + ".txt"), "wb")
        try:
            value, note = digest(name, text, source, args.max_steps, dump, tmp.name)
        finally:
            if dump is not None:
                dump.close()
        line = f"{name}  {value or '-'}  ({note})"
        print(line, flush=True)
        total.update(line.encode() + b"\n")
    status = presenters.status("error", "A <title>", ["problem & one", "two"])
    total.update(status.encode())
    print(f"status  {hashlib.sha256(status.encode()).hexdigest()}")
    print(f"TOTAL  {total.hexdigest()}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
