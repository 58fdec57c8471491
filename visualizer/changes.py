"""What changed: reloading a session's plugins, and comparing two configurations (issue 9).

- **Which code a session ran with.** A session records the out-of-tree plugin code its
  scenario uses (``plugin_code``: each plugin's module source and the digest of its file, from
  ``engine.plugins.loader``) when it is created. When the code loaded now is another (the
  server restarted after the file was edited, or another session reloaded it), the page says
  so (:func:`code_notes`) instead of presenting the new run as the old one.
- **Reload.** :func:`reload_session` loads the session's plugin modules again from their files
  (all or nothing: a file that does not import leaves the old code running and says why),
  replays the session (its scenario and recorded injections) with the new code to the same
  place, and keeps the run recorded with the old code as the **baseline**: the Session row
  stores the old code's digests and the comparison (``engine.compare``: pods whose outcome
  differs, the first divergent event and that cycle's plugin results side by side), which the
  page links to. In development (``settings.DEBUG``) a presenter's next control reloads by
  itself when one of the session's plugin files changed (:func:`maybe_auto_reload`).
- **Compare.** :func:`run_compare` runs the session's scenario (with its injections) under its
  own configuration and a variation of it (a feature gate toggled, a plugin disabled, a score
  weight changed, or a pasted ``scheduler:`` section), validated like an upload.

Plugin code is never accepted over HTTP: reload only re-reads files the server was configured
with (``SCHEDULER_PLUGINS``), and a pasted ``scheduler:`` section can only name plugins that
are already loaded.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading

from engine import yamlload
from django.conf import settings
from django.utils import timezone

from engine import US, Scenario, ScenarioError
from engine import compare as cmp
from engine.errors import EngineError
from engine.plugins import loader, registry
from visualizer import runner
from visualizer.models import Session
from visualizer.formatting import seconds
from visualizer.plugins import plugin_code  # noqa: F401 - what a session records; re-exported

MAX_COMPARE_SECONDS = 24 * 3600     # virtual seconds a comparison may cover
MAX_COMPARE_EVENTS = 100_000        # trace events per run of a comparison (bounded memory)
MAX_STORED_PODS = 1000              # changed pods kept in a session's reload record
MAX_SCHEDULER_TEXT = 64 * 1024      # bytes of a pasted scheduler: section
MAX_SCHEDULER_NODES = 20_000       # values in it, aliases expanded
_reload_lock = threading.Lock()
def ensure_configured_plugins() -> list:
    """Load the configured plugins (``visualizer.plugins.load_configured``: SCHEDULER_PLUGINS and
    the entry points, once per process) and keep the loaded files off the autoreloader.
    Returns the load problems."""
    from visualizer import plugins
    problems = plugins.load_configured()
    keep_plugins_off_autoreloader()
    return problems


def keep_plugins_off_autoreloader() -> None:
    """Plugin files are not Django code: ``runserver``'s autoreloader must not restart the
    server when one is edited (a restart would replay every open session with the new code,
    which is what reload exists to do visibly). Django watches modules whose spec has a
    location; a plugin module loaded from a file is marked as having none (its ``__file__``,
    tracebacks and source lookups are unaffected)."""
    for m in loader.loaded_modules():
        spec = getattr(m.module, "__spec__", None)
        if m.file and spec is not None and getattr(spec, "has_location", False):
            spec.has_location = False


def _short(path_or_source: str) -> str:
    return os.path.basename(path_or_source) if path_or_source else ""


def code_label(code: dict) -> str:
    """``GPUOnly from gpu_only.py@abc123, ...`` (or "in-tree plugins only")."""
    if not code:
        return "in-tree plugins only"
    return ", ".join(f"{name} from {c['file']}@{c['digest'][:8]}" for name, c in sorted(code.items()))


def code_notes(recorded: dict) -> list:
    """Why the code loaded now is not the code a session was recorded with, one sentence per
    plugin file ([] when it is the same): the plugins of one file share one sentence."""
    current = {lp.name: lp for lp in loader.loaded_plugins()}
    missing: dict = {}      # (file, recorded digest) -> [names no longer loaded]
    other: dict = {}        # (file, recorded digest, digest now) -> [names]
    for name, c in sorted((recorded or {}).items()):
        lp = current.get(name)
        key = (c.get("file") or c.get("source") or "", c.get("digest") or "")
        if lp is None:
            if registry.get(name) is None:
                missing.setdefault(key, []).append(name)
            continue
        if lp.digest != c.get("digest"):
            other.setdefault(key + (lp.digest,), []).append(name)
    notes = []
    for (file, digest, now), names in sorted(other.items()):
        notes.append(f"This session was recorded with {', '.join(names)} from {file}@{digest[:8]}; "
                     f"the server now runs @{now[:8]}. The run shown is replayed with the "
                     f"server's code: Reload plugins to adopt it as this session's code.")
    for (file, digest), names in sorted(missing.items()):
        what = f"no plugin {names[0]}" if len(names) == 1 else f"none of {', '.join(names)}"
        notes.append(f"This session was recorded with {', '.join(names)} from {file}@{digest[:8]}; "
                     f"the server has {what} loaded now.")
    return notes


# ---------------------------------------------------------------------- the source diff of a reload

MAX_DIFF_LINES = 400        # lines of a file's diff kept with the session (the rest: counted)
MAX_DIFF_LINE = 300         # characters of each diff line kept
DIFF_CONTEXT = 3


def source_diff(old_text, new_text) -> dict:
    """A unified diff (difflib) of one plugin file, old → new, as rows the page renders:
    ``{"kind": "hunk"|"add"|"del"|"ctx", "old": line number or None, "new": ..., "text"}``,
    at most MAX_DIFF_LINES rows (``hidden`` counts the rest), with the number of lines added
    and removed. ``unavailable`` says why there is no diff (a source text not kept)."""
    out = {"rows": [], "hidden": 0, "added": 0, "removed": 0, "identical": False, "unavailable": ""}
    if old_text is None or new_text is None:
        out["unavailable"] = ("the old source was not kept (larger than "
                              f"{loader.MAX_SOURCE_TEXT // 1024} KiB, not UTF-8, or changed while it was loaded)"
                              if old_text is None else "the new source could not be read")
        return out
    if old_text == new_text:
        out["identical"] = True
        return out
    import difflib
    old_no = new_no = 0
    rows = out["rows"]
    diff = difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), lineterm="", n=DIFF_CONTEXT)
    for i, line in enumerate(diff):
        if i < 2:
            continue                                  # the two file headers, --- and +++
        if line.startswith("@@"):
            head = line.split("@@")[1].split()
            old_no = int(head[0][1:].split(",")[0])
            new_no = int(head[1][1:].split(",")[0])
            row = {"kind": "hunk", "old": None, "new": None, "text": line}
        elif line.startswith("+"):
            out["added"] += 1
            row = {"kind": "add", "old": None, "new": new_no, "text": line[1:]}
            new_no += 1
        elif line.startswith("-"):
            out["removed"] += 1
            row = {"kind": "del", "old": old_no, "new": None, "text": line[1:]}
            old_no += 1
        else:
            row = {"kind": "ctx", "old": old_no, "new": new_no, "text": line[1:]}
            old_no += 1
            new_no += 1
        if len(rows) >= MAX_DIFF_LINES:
            out["hidden"] += 1
            continue
        if len(row["text"]) > MAX_DIFF_LINE:
            row["text"] = row["text"][:MAX_DIFF_LINE] + "…"
        rows.append(row)
    return out


def source_diffs(old_modules: dict, new_modules: dict) -> list:
    """One diff per reloaded plugin file (old module → new module), with the plugins it holds."""
    out = []
    for source in sorted(set(old_modules) | set(new_modules)):
        old, new = old_modules.get(source), new_modules.get(source)
        d = source_diff(getattr(old, "text", None), getattr(new, "text", None))
        names = sorted(set(getattr(old, "names", None) or []) | set(getattr(new, "names", None) or []))
        path = getattr(new, "file", None) or getattr(old, "file", None) or source
        d.update({"source": source, "file": os.path.basename(path), "plugins": names,
                  "old": (getattr(old, "digest", "") or "")[:8], "new": (getattr(new, "digest", "") or "")[:8]})
        out.append(d)
    return out


def session_sources(recorded: dict, scenario) -> list:
    """The plugin module sources a session uses: those recorded, and those of the plugins its
    scenario enables as loaded now."""
    sources = [c["source"] for c in (recorded or {}).values()]
    sources += [c["source"] for c in plugin_code(scenario).values()]
    loaded = {m.source for m in loader.loaded_modules()}
    return sorted({s for s in sources if s in loaded})


# ---------------------------------------------------------------------- reload

def _recorded_run(live) -> cmp.Run:
    """The session's run at its head, as the live engine recorded it."""
    st = live.head     # kept at the head while the page shows an earlier position
    return cmp.Run(label="", events=st.events[:st.position], state=st.engine.state(), clock_us=st.engine.now,
                   injections=[(i.position, i.time_us, i.verb, i.body) for i in live.injections], stepper=st)


def _map_position(events_a, position, events_b) -> int:
    """The shown position carried over to run B: at most as many events, none later than the
    event shown in A."""
    if position <= 0:
        return 0
    t = events_a[position - 1]["time"]
    new = 0
    for e in events_b[:position]:
        if e["time"] > t:
            break
        new += 1
    return new


def _summary(comparison: dict) -> dict:
    d = comparison["divergence"]
    return {"pods": len(comparison["pods"]), "identical": comparison["identical"],
            "cycle": d["cycle_a"] if d else None, "time": d["time"] if d else None}


def _bounded(comparison: dict) -> dict:
    """The comparison as stored with the session: at most MAX_STORED_PODS pod rows (the page
    says how many more differ)."""
    if len(comparison["pods"]) <= MAX_STORED_PODS:
        return comparison
    return dict(comparison, pods=comparison["pods"][:MAX_STORED_PODS],
                pods_hidden=len(comparison["pods"]) - MAX_STORED_PODS)


def reload_session(session_id, *, changed_only=False, only=None) -> dict:
    """Reload the session's plugin modules and replay it with the new code (module docstring).

    Returns {"note": text}. Raises runner.ControlError when there is nothing to reload or the
    new code does not load (the session then stays on the old code)."""
    with runner.open_live(session_id, write=True) as live:
        row = Session.objects.only("plugin_code", "version").get(pk=session_id)
        recorded = row.plugin_code or {}
        sources = session_sources(recorded, live.scenario)
        if changed_only:
            changed = set(loader.changed_sources() if only is None else only)
            sources = [s for s in sources if s in changed]
            if not sources:
                return {"note": ""}
        if not sources:
            raise runner.ControlError(["this session's scenario uses no plugin loaded from a file "
                                       "(SCHEDULER_PLUGINS): there is no plugin code to reload"],
                                      title="Nothing to reload")
        # After a restart with other code (or another session's reload), the live run is
        # already the server's code, not the code recorded: say so rather than compare as if.
        stale = bool(code_notes(recorded))
        running = plugin_code(live.scenario)
        old_modules = {m.source: m for m in loader.loaded_modules() if m.source in sources}
        old_plugins = {lp.name: lp for lp in loader.loaded_plugins() if lp.source in sources}
        baseline = _recorded_run(live)
        try:
            with _reload_lock:
                loader.reload(sources)
        except loader.PluginLoadError as e:
            raise runner.ControlError([f"{e.source}: {e.reason}",
                                       "the session still runs the code it was recorded with"],
                                      title="Reload failed: the plugin did not load") from None
        keep_plugins_off_autoreloader()
        try:
            position, time_us = cmp.head_of(baseline.stepper)
            # scheduler extenders: the recorded replies answer the calls that did not change
            transport = runner.extender_transport(live.scenario, live.extender.records if live.extender else [])
            new = cmp.drive(live.scenario, baseline.injections, position=position, time_us=time_us,
                            extender_transport=transport)
        except EngineError as e:
            _restore(sources, old_modules, old_plugins)
            problems = e.problems if isinstance(e, ScenarioError) else [str(e)]
            raise runner.ControlError(list(problems) + ["the session still runs the code it was recorded with"],
                                      title="Reload failed: the new code cannot build the scheduler") from None
        new_code = plugin_code(live.scenario)
        new_modules = {m.source: m for m in loader.loaded_modules() if m.source in sources}
        diffs = source_diffs(old_modules, new_modules)
        baseline.label = (f"replayed with the code this server ran, {code_label(running)} (the session was "
                          f"recorded with {code_label(recorded)}, which is no longer loaded)" if stale
                          else f"recorded with {code_label(recorded)}")
        new.label = f"reloaded: {code_label(new_code)}"
        comparison = cmp.compare(baseline, new)
        shown = new.position if live.at_head else _map_position(baseline.events, live.position, new.events)
        record = {"plugin_code": recorded, "new_plugin_code": new_code, "reloaded_at": timezone.now().isoformat(),
                  "kind": "reload", "summary": _summary(comparison), "comparison": _bounded(comparison),
                  "label_a": baseline.label, "label_b": new.label, "stale": stale, "diffs": diffs}
        fields = {"injections": [{"position": p, "timeUs": t, "verb": v, "body": b} for p, t, v, b in new.injections],
                  "high_water": new.position, "head_clock_us": new.clock_us, "position": shown,
                  "plugin_code": new_code, "baseline": record, "version": live.version + 1,
                  "extender_records": transport.records if transport is not None else [],
                  "updated_at": timezone.now()}
        if not Session.objects.filter(pk=session_id, version=live.version).update(**fields):
            raise runner.Conflict("the session was changed elsewhere (another server process); "
                                  "reload again", title="Changed elsewhere")
    s = record["summary"]
    if stale:
        note = (f"This session now runs {code_label(new_code)}. The code it was recorded with "
                f"({code_label(recorded)}) is no longer loaded, so its own run cannot be shown; "
                f"what changed is measured from the code this server ran before.")
    elif s["identical"]:
        note = f"Reloaded {', '.join(sorted(old_plugins)) or 'the plugins'}: nothing changed in this run."
    else:
        note = (f"Reloaded {', '.join(sorted(old_plugins)) or 'the plugins'}: {s['pods']} pod(s) with a different "
                f"outcome; the runs diverge" + (f" in cycle {s['cycle']}" if s["cycle"] is not None else "")
                + ". The run recorded with the old code is kept: see what changed.")
    return {"note": note}


def _restore(sources, old_modules, old_plugins) -> None:
    """Put the old plugin code back after new code loaded but could not run the session."""
    for s in sources:
        loader.unload(s)
    for s, m in old_modules.items():
        loader._MODULES[s] = m
        loader.remember_running(m)
        for n in m.names:
            lp = old_plugins.get(n)
            if lp is not None:
                registry.register(n, lp.factory, origin=s)
                loader._PLUGINS[n] = lp


_auto_failed: dict = {}     # source -> digest of the file version whose automatic reload failed


def _file_digest(path) -> str:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()[:16]
    except OSError:
        return ""


def maybe_auto_reload(session_id) -> str:
    """In development (settings.DEBUG): reload the session first if one of its plugin files
    changed since it was loaded. Returns the note to show ("" when nothing was reloaded).

    A failed reload is reported once per saved version of the file, through runner.ControlError
    as a manual one (that control is not carried out); later controls go on with the old code
    until the file is saved again, so a half-edited file never blocks the session."""
    if not settings.DEBUG:
        return ""
    files = {m.source: m.file for m in loader.loaded_modules()}
    changed = [s for s in loader.changed_sources() if _auto_failed.get(s) != _file_digest(files.get(s))]
    if not changed:
        return ""
    try:
        return reload_session(session_id, changed_only=True, only=changed)["note"]
    except runner.ControlError:
        for s in changed:
            _auto_failed[s] = _file_digest(files.get(s))
        raise


# ---------------------------------------------------------------------- the session page's panel

def context(live) -> dict:
    """The "what changed" panel: the code the session runs, a notice when the server runs other
    code than the session was recorded with, and the last reload's summary."""
    recorded = getattr(live, "plugin_code", None) or {}
    baseline = getattr(live, "baseline", None)
    # Relative links, resolved by the browser against the page's own URL: /s/<presenter
    # token>/changes/ on the presenter's page, /w/<follower token>/changes/ on a follower's.
    # Each page keeps its role (their "back to the session" is ../), and the panel, which the
    # WebSocket sends alike to every page of the session, names no token at all: a follower's
    # frame never carries the presenter token, and a projected page never prints it.
    return {"changes_url": "changes/", "compare_url": "compare/",
            "code": code_label(recorded) if recorded else "", "uses_plugins": bool(recorded),
            "notes": code_notes(recorded),
            "baseline": None if not baseline else {
                "summary": baseline.get("summary", {}), "label_a": baseline.get("label_a", ""),
                "label_b": baseline.get("label_b", ""), "reloaded_at": baseline.get("reloaded_at", "")}}


# ---------------------------------------------------------------------- compare two configurations

VARIATION_KINDS = ("gate", "disable", "weight", "scheduler")


def parse_variation(data, scenario) -> cmp.Variation:
    """The variation a compare form describes (``kind`` and its fields), or ScenarioError
    listing every problem with the form field it concerns."""
    kind = (data.get("kind") or "").strip()
    profile = (data.get("profile") or "").strip() or None
    var = cmp.Variation(profile=profile)
    probs = []
    if kind == "gate":
        gate = (data.get("gate") or "SchedulerQueueingHints").strip()
        current = scenario.simulation.feature_gates.get(gate)
        if current is None:
            probs.append(f"gate: {gate!r} is not a feature gate the engine models")
        else:
            var.gates[gate] = not current
    elif kind == "disable":
        plugin = (data.get("plugin") or "").strip()
        if not plugin:
            probs.append("plugin: choose the plugin to run without")
        var.disable = [plugin] if plugin else []
    elif kind == "weight":
        plugin = (data.get("weight_plugin") or data.get("plugin") or "").strip()
        raw = (data.get("weight") or "").strip()
        if not plugin:
            probs.append("plugin: choose the score plugin whose weight changes")
        try:
            weight = int(raw)
        except ValueError:
            probs.append(f"weight: {raw!r} is not a whole number from 1 to 100")
            weight = None
        if plugin and weight is not None:
            var.weights[plugin] = weight
    elif kind == "scheduler":
        text = data.get("scheduler") or ""
        if len(text.encode("utf-8", "replace")) > MAX_SCHEDULER_TEXT:
            probs.append(f"scheduler: the text is larger than {MAX_SCHEDULER_TEXT // 1024} KiB")
        else:
            try:
                # bounded like every text from the page (yamlload): nesting, values, aliases
                section = yamlload.load_data(text, max_nodes=MAX_SCHEDULER_NODES) if text.strip() else None
            except yamlload.YAMLLoadError as e:
                probs.append(f"scheduler: {e}")
                section = None
            else:
                if section is None:
                    probs.append("scheduler: paste a scheduler: section (KubeSchedulerConfiguration fields)")
                elif isinstance(section, dict) and set(section) == {"scheduler"}:
                    section = section["scheduler"]
            if section is not None:
                var.scheduler = section
    else:
        probs.append(f"kind: {kind!r} is not one of {', '.join(VARIATION_KINDS)}")
    if probs:
        raise ScenarioError(probs, "configuration B")
    return var


def parse_until(raw) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ScenarioError([f"until: {raw!r} is not a number of seconds"], "configuration B") from None
    if value != value or value < 0 or value > MAX_COMPARE_SECONDS:
        raise ScenarioError([f"until: {raw!r} must be from 0 to {MAX_COMPARE_SECONDS} seconds"],
                            "configuration B")
    return int(round(value * US))


def run_compare(session_id, variation: cmp.Variation, until_us=None) -> dict:
    """Run the session's scenario and injections under its own configuration (A) and with
    ``variation`` (B), both until ``until_us`` (None: until idle); the comparison, labelled."""
    row = Session.objects.get(pk=session_id)
    scenario = Scenario.from_text(row.scenario_text, row.source or "<input>")
    scenario_b = cmp.vary(scenario, variation)
    injections = [(int(i["position"]), int(i["timeUs"]), i["verb"], i["body"]) for i in row.injections]
    label_a = "as the scenario is written"
    label_b = variation.describe()
    records = row.extender_records or []       # scheduler extenders: the session's replies first
    ra = cmp.drive(scenario, injections, time_us=until_us, label=label_a, max_events=MAX_COMPARE_EVENTS,
                   extender_transport=runner.extender_transport(scenario, records))
    rb = cmp.drive(scenario_b, injections, time_us=until_us, label=label_b, max_events=MAX_COMPARE_EVENTS,
                   extender_transport=runner.extender_transport(scenario_b, records))
    return cmp.compare(ra, rb)


def form_choices(scenario) -> dict:
    """What the compare form offers for this scenario."""
    try:
        profiles = cmp.profile_plugins(scenario)
    except EngineError:
        profiles = {}
    gates = [{"name": k, "on": bool(v)} for k, v in sorted(scenario.simulation.feature_gates.items())]
    all_plugins = sorted({n for p in profiles.values() for n in p["all"]})
    score_plugins = sorted({n for p in profiles.values() for n in p["score"]})
    return {"gates": gates, "profiles": sorted(profiles), "plugins": all_plugins, "score_plugins": score_plugins}


# ---------------------------------------------------------------------- for the templates

def _event_view(e, changed_fields) -> dict | None:
    if e is None:
        return None
    fields = []
    for k, v in e.items():
        if k in ("seq", "type", "time"):
            continue
        if not isinstance(v, str):
            v = json.dumps(v, ensure_ascii=False)      # as the trace writes it: null, true, [..]
        fields.append({"name": k, "value": v, "changed": k in changed_fields})
    return {"type": e["type"], "time": seconds(e["time"]), "fields": fields}


def present(result: dict) -> dict:
    """A comparison with what the "what changed" partial iterates over (the stored comparison
    itself is left as it is)."""
    out = dict(result)
    out["a"] = dict(result["a"], time=seconds(result["a"]["time"]))
    out["b"] = dict(result["b"], time=seconds(result["b"]["time"]))
    for key in ("divergence", "effect"):
        if result.get(key):
            out[key] = _present_divergence(result[key])
    return out


def _present_divergence(d: dict) -> dict:
    if d:
        d = dict(d)
        d["time"] = seconds(d["time"])
        d["where_a"] = cmp.where_text(d.get("cycle_a"), d.get("relation_a"))
        d["where_b"] = cmp.where_text(d.get("cycle_b"), d.get("relation_b"))
        d["events"] = [("a", _event_view(d.get("a"), d.get("fields") or [])),
                       ("b", _event_view(d.get("b"), d.get("fields") or []))]
        if d.get("side_by_side"):
            s = dict(d["side_by_side"])
            s["sides"] = [(side, dict(c, time=seconds(c["time"])) if c else None)
                          for side, c in (("a", s.get("a")), ("b", s.get("b")))]
            d["side_by_side"] = s
    return d
