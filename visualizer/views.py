"""HTTP views: the library, starting a session, the session page, health and metrics.

Thin on purpose: sessions are created and read through ``visualizer.runner``, and the page's
panels come from ``visualizer.presenters`` (the same partials the WebSocket pushes).
"""
import re
from pathlib import Path

from django.conf import settings
from asgiref.sync import sync_to_async
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
import segno

from engine import Scenario, ScenarioError
from engine.errors import EngineError
from visualizer import classroom, history, markdown, metrics, plugins, presenters, runner, uploads
from visualizer.models import Session
from visualizer.scenarios import find_entry, list_scenarios

EVENT_TYPES = ("Action", "ActionSkipped", "BindFailed", "Bound", "CycleEnd", "CycleSkipped", "CycleStart",
               "FilterStopped", "HostSelected", "NominatedNodeEvaluated", "Nomination", "PluginResult",
               "PluginError", "PodDeleted", "PodRemoved", "PreemptionCandidate", "PreemptionDryRunStop",
               "PreemptionIneligible", "PreemptionNodeResult", "PreemptionPick", "QueueTransition",
               "ReprieveFits", "ReprieveStart", "ReprieveStep")
MAX_UPLOAD_BYTES = 5 * 1024 * 1024
MAX_ECHO_CHARS = 64 * 1024          # a rejected text is shown again in the form up to this size


def library(request, problems=(), pasted="", status=200):
    """The scenario library: one entry per scenario file in SCENARIO_FIXTURES_DIR, and the
    upload form (with the problems of a rejected scenario)."""
    scenarios = list_scenarios(settings.SCENARIO_FIXTURES_DIR)
    return render(request, "visualizer/library.html",
                  {"scenarios": scenarios, "problems": list(problems), "pasted": pasted,
                   "plugins": plugins.loaded(), "plugin_problems": plugins.problems()}, status=status)


@require_POST
def start_session(request):
    """Start a session from a library fixture (``fixture``) or uploaded or pasted text
    (``scenario_file``, several allowed, or ``scenario``): a scenario, or anything
    ``python -m engine import`` reads (a kubectl dump, a simulator export, a scheduler_perf
    config with its templates, a KubeSchedulerConfiguration), converted with the same report.
    Anything invalid shows every problem and starts nothing."""
    fixture = request.POST.get("fixture")
    pasted = ""
    if fixture:
        path = find_entry(settings.SCENARIO_FIXTURES_DIR, fixture)
        if path is None:
            return library(request, [f"{fixture}: no such scenario in the library"], status=404)
        text, source = path.read_text(encoding="utf-8"), fixture
        files = None
    elif request.FILES.getlist("scenario_file"):
        files = []
        uploaded = request.FILES.getlist("scenario_file")
        if sum(u.size for u in uploaded) > MAX_UPLOAD_BYTES:
            return library(request, [f"{', '.join(u.name for u in uploaded)}: larger than "
                                     f"{MAX_UPLOAD_BYTES // 1048576} MiB"], status=413)
        for upload in uploaded:
            try:
                files.append((upload.name, upload.read().decode("utf-8")))
            except UnicodeDecodeError:
                return library(request, [f"{upload.name}: the file is not UTF-8 text"], status=400)
        source = ""
        pasted = files[0][1] if len(files) == 1 else ""
    else:
        text = pasted = request.POST.get("scenario", "")
        source = ""
        files = [("pasted text", text)]
    # an echo of the text in the form again, only while it is small enough to edit there
    pasted = pasted if len(pasted) <= MAX_ECHO_CHARS else ""
    try:
        if files is not None:
            # a stranger's text: read, converted and checked in a worker process with limits
            text, imported = uploads.prepare(files, test_case=request.POST.get("test_case") or None,
                                             workload=request.POST.get("workload") or None)
            source = "" if imported else source
        session = runner.create_session(text, source)
        if files is not None and imported and _report_first(text, source):
            # an imported cluster with pending pods: the operator's question first (why is it
            # pending?); the report links to the session page
            return redirect("session-report", token=session.presenter_token)
    except uploads.LimitExceeded as e:
        return library(request, e.problems, pasted=pasted, status=413)
    except ScenarioError as e:
        return library(request, e.problems, pasted=pasted, status=400)
    except uploads.ClientGone:
        return HttpResponse(status=499)
    return redirect("session-presenter", token=session.presenter_token)


REPORT_FIRST_MAX_NODES = 200      # an import larger than this opens on the session page (bench/report.py)


def _report_first(text, source) -> bool:
    """Whether an import opens on its pending-pods report: it has pods pending at the start
    (a cluster dump; a scheduler_perf workload creates its pods later) and is small enough for
    the report's run to answer at once."""
    from engine.explain import pending_at_start
    scenario = runner.parsed_scenario(text, source or "<input>")
    nodes = sum(1 for kind, _ in scenario.objects if kind == "Node")
    return nodes <= REPORT_FIRST_MAX_NODES and bool(pending_at_start(scenario))


def request_too_large(request, length):
    """The upload form with an error for a request over DATA_UPLOAD_MAX_MEMORY_SIZE (HTTP 413)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return library(request, [f"the scenario is too large: {length:,} bytes were sent, the limit is "
                             f"{limit:,} bytes ({limit / 1048576:g} MiB)"], status=413)


def _qr_svg(url: str) -> str:
    """The QR code of ``url`` as inline SVG (segno; error correction M survives a projector)."""
    qr = segno.make(url, error="m")
    # omitsize: a viewBox instead of a fixed size, so the page can draw it as large as the
    # join overlay allows
    return mark_safe(qr.svg_inline(scale=5, border=2, dark="#111", light="#fff", omitsize=True,
                                   title="QR code of the follower link"))


EXPORTS = {
    "scenario.yaml": "application/yaml",
    "state.json": "application/json",
    "trace.jsonl": "application/jsonl",
    "results.json": "application/json",
}


def session_export(request, token, what):
    """The session at the position it shows, as a scenario, the state, the revealed trace or
    the pods with kube-scheduler-simulator's result annotations (a download; either link)."""
    if what not in EXPORTS:
        raise Http404(f"no export called {what}")
    session = (Session.objects.filter(presenter_token=token).first()
               or get_object_or_404(Session, follower_token=token))
    with runner.open_live(session.pk) as live:
        if what == "trace.jsonl":
            # streamed in chunks: a large cluster's session has tens of millions of events
            events, n = live.stepper.events, live.stepper.position
            body = None
        else:
            body = runner.export(live, what)
    if body is None:
        response = StreamingHttpResponse(_trace_lines(events, n), content_type=EXPORTS[what])
    else:
        response = HttpResponse(body, content_type=EXPORTS[what])
    response["Content-Disposition"] = f'attachment; filename="{session.scenario_name}-{what}"'
    return response


async def _trace_lines(events, n):
    """The first ``n`` of ``events`` as JSON Lines, a chunk at a time. The events are the
    session's own (append-only: a later step or travel never changes the first ``n``); the
    chunks are written on the thread that runs the engines, never beside one."""
    chunk = runner.EXPORT_CHUNK_EVENTS
    for start in range(0, n, chunk):
        yield await sync_to_async(runner.trace_lines)(events, start, min(n, start + chunk))


def _join(request, path):
    """The follower link for ``path`` and, in class mode on a presenter's page, what the join
    box shows: the address phones use and the machine's others to pick from
    (visualizer.classroom). Outside class mode: the link on the page's own host, as always."""
    if not settings.CLASS_MODE:
        return request.build_absolute_uri(path), None
    choices = list(settings.CLASS_JOIN_ADDRESSES)
    picked = request.GET.get("join")
    if isinstance(picked, str) and picked in choices:
        request.session[classroom.SESSION_KEY] = picked      # kept for the next visit
    else:
        picked = request.session.get(classroom.SESSION_KEY)
    host = classroom.join_host(request.get_host(), choices, picked)
    if host is None:
        url = request.build_absolute_uri(path)
        host = classroom.split_host(request.get_host())[0]
    else:
        url = classroom.join_url(request.scheme, request.get_host(), path, host)
    unreachable = classroom.is_loopback_host(host)
    if not unreachable and host not in choices:
        choices.insert(0, host)          # opened by another of the machine's names: that one
    return url, {"host": host, "choices": choices, "unreachable": unreachable,
                 "present": request.GET.get("present", "")}


JOIN_CODE_LENGTH = 8


def join_code(follower_token: str) -> str:
    """The join link's short code: the follower token's first characters (48 bits of its
    randomness; the link only ever leads to the read-only page)."""
    return follower_token[:JOIN_CODE_LENGTH]


def join_short(request, code):
    """``/j/<code>/``: the short link the join box shows large, for a room to type; it leads
    to the follower page of the one session whose follower token starts with ``code``."""
    if len(code) != JOIN_CODE_LENGTH:
        raise Http404("no such join code")
    matches = list(Session.objects.filter(follower_token__startswith=code).values_list("follower_token", flat=True)[:2])
    # __startswith is LIKE: case-blind for ASCII on SQLite, case-sensitive on PostgreSQL; the tokens
    # are case-sensitive (base64url), so the match is checked again in Python on both
    if len(matches) != 1 or not matches[0].startswith(code):
        raise Http404("no such join code")
    return redirect("session-follower", token=matches[0])


def _session_page(request, session, role):
    follower_path = reverse("session-follower", args=[session.follower_token])
    short_path = reverse("join-short", args=[join_code(session.follower_token)])
    if role == "presenter":
        follower_url, join = _join(request, follower_path)
        # the same host as the follower link (class mode picks the one phones reach)
        short_url = follower_url[: -len(follower_path)] + short_path
    else:
        follower_url, join = request.build_absolute_uri(follower_path), None
        short_url = request.build_absolute_uri(short_path)
    try:
        with runner.open_live(session.pk) as live:
            ctx = presenters.context(live)
    except EngineError as e:
        # e.g. the session runs an out-of-tree plugin this server was started without, or a
        # plugin the session was recorded with is not loaded (visualizer.changes)
        from visualizer import changes
        return render(request, "visualizer/session_unavailable.html", {
            "session": session, "problems": getattr(e, "problems", None) or [str(e)],
            "notes": changes.code_notes(session.plugin_code or {}),
            "plugins": plugins.loaded(), "plugin_problems": plugins.problems()}, status=503)
    ctx.update({
        "role": role,
        "ws_path": f"/ws/{'s' if role == 'presenter' else 'w'}/"
                   f"{session.presenter_token if role == 'presenter' else session.follower_token}/",
        "follower_url": follower_url,
        "join": join,   # class mode: the address phones use, and the machine's others
        # The presenter link is never printed (a projected page would hand control to the
        # room): a button copies it. The follower link comes with a QR code for phones.
        "follower_qr": _qr_svg(short_url) if role == "presenter" else "",
        # the short link, large and without its scheme, for a room to read and type
        "join_url": short_url,
        # it breaks only between the host and /j/<code>/, never inside the code
        "join_text_host": short_url.split("://", 1)[-1][: -len(short_path)],
        "join_text_path": short_path,
        # A pod's history is read-only: the follower token's URL serves both roles.
        "history_url": reverse("pod-history-follower", args=[session.follower_token]),
        "speeds": runner.SPEEDS,
        "colour_resources": presenters.HEAT_RESOURCES,
        "event_types": EVENT_TYPES,
        "exports": list(EXPORTS),
        "export_token": session.follower_token,   # same download; never print the presenter token
        # relative, as changes/ and compare/: the presenter's page never prints its token
        "report_url": "report/",
    })
    return render(request, "visualizer/session.html", ctx)


def _pod_history(request, session, role, token):
    """A pod's history (``?pod=namespace/name``), as an htmx fragment for the session page's
    history panel, or as a page of its own.  Presenters and followers alike: it only reads."""
    pod = request.GET.get("pod", "")
    if not isinstance(pod, str) or not pod.strip() or len(pod) > history.MAX_POD_KEY:
        ctx = {"history": {"pod": pod[:history.MAX_POD_KEY], "problem": "Name a pod: ?pod=namespace/name"}}
        status = 400
    else:
        pod = pod.strip()
        try:
            with runner.open_live(session.pk) as live:
                ctx = {"history": history.pod_history(live, pod)}
            status = 200 if ctx["history"]["found"] else 404
        except EngineError as e:
            ctx = {"history": {"pod": pod, "problem": f"This session cannot be rebuilt here: {e}"}}
            status = 503
    view = "session-presenter" if role == "presenter" else "session-follower"
    ctx["session_url"] = reverse(view, args=[token])
    if request.htmx:   # htmx swaps 2xx answers only: the fragment says what went wrong
        return render(request, "visualizer/partials/_pod_history.html", ctx)
    return render(request, "visualizer/pod_history.html", ctx, status=status)


def pod_history_presenter(request, token):
    return _pod_history(request, get_object_or_404(Session, presenter_token=token), "presenter", token)


def pod_history_follower(request, token):
    return _pod_history(request, get_object_or_404(Session, follower_token=token), "follower", token)


def session_presenter(request, token):
    return _session_page(request, get_object_or_404(Session, presenter_token=token), "presenter")


def session_follower(request, token):
    return _session_page(request, get_object_or_404(Session, follower_token=token), "follower")


FAVICON = Path(__file__).resolve().parent.parent / "static" / "img" / "favicon.svg"


def favicon(request):
    """The icon browsers ask every page for (``/favicon.ico``): an SVG, cached for a day."""
    response = HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")


def _metrics_allowed(request) -> bool:
    """Whether ``settings.METRICS_ALLOWED_NETWORKS`` (CIDRs; empty: anyone) admits the client."""
    networks = settings.METRICS_ALLOWED_NETWORKS
    if not networks:
        return True
    import ipaddress
    try:
        client = ipaddress.ip_address((request.META.get("REMOTE_ADDR") or "").split("%")[0])
    except ValueError:
        return False
    return any(client in net for net in networks)


def prometheus_metrics(request):
    if not _metrics_allowed(request):
        return HttpResponse("Forbidden: /metrics is restricted (METRICS_ALLOWED_NETWORKS)\n",
                            content_type="text/plain", status=403)
    metrics.SESSIONS.set(Session.objects.count())
    metrics.LIVE_SESSIONS.set(runner.live_count())
    return HttpResponse(generate_latest(), content_type=CONTENT_TYPE_LATEST)


def not_found(request):
    """Any URL no other route matches (the last route): a 404 (see visualizer.middleware)."""
    raise Http404(request.path)


# ---------------------------------------------------------------------- the documentation

DOCS_DIR = markdown.DOCS_DIR
_DOC_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_DOC_FILE = markdown.DOC_FILE     # the files of docs/examples and docs/images served


def docs_page(request, name="README"):
    """A page of docs/ (Markdown rendered and sanitized like narratives), or 404."""
    if name == "images":
        return docs_file(request, "images", "")
    if name != "README" and not _DOC_NAME.match(name):
        raise Http404("no such page")
    path = DOCS_DIR / f"{name}.md"
    if not path.is_file():
        raise Http404("no such page")
    html, title = markdown.render_document(path.read_text(encoding="utf-8"))
    return render(request, "visualizer/docs.html", {"html": html, "title": title or name, "name": name,
                                                     "pages": markdown.doc_pages(DOCS_DIR)})


def docs_file(request, folder, filename):
    """A file of docs/examples (as text) or docs/images (a PNG)."""
    if folder not in ("examples", "images"):
        raise Http404("no such file")
    if not filename:
        files = sorted(p.name for p in (DOCS_DIR / folder).iterdir() if _DOC_FILE.match(p.name))
        return render(request, "visualizer/docs.html", {
            "title": f"docs/{folder}", "name": folder, "folder": folder, "files": files,
            "pages": markdown.doc_pages(DOCS_DIR)})
    if not _DOC_FILE.match(filename):
        raise Http404("no such file")
    path = DOCS_DIR / folder / filename
    if not path.is_file():
        raise Http404("no such file")
    if filename.endswith(".png"):
        return FileResponse(path.open("rb"), content_type="image/png")
    return HttpResponse(path.read_text(encoding="utf-8"), content_type="text/plain; charset=utf-8")


# ---------------------------------------------------------------------- what changed (changes.py)

def _session_for(token, role):
    field = "presenter_token" if role == "presenter" else "follower_token"
    return get_object_or_404(Session, **{field: token})


def session_targets(request, token, role="presenter"):
    """The names of the session's pods and nodes at the moment shown, as the page's two
    datalists (presenters.targets_html): asked for by the page when a field offering them is
    focused (``?v=`` the version its last frame named)."""
    session = _session_for(token, role)
    version = request.GET.get("v")
    try:
        with runner.open_live(session.pk) as live:
            version, html = presenters.targets_html(live, version if isinstance(version, str) else None)
    except EngineError as e:
        return HttpResponse(f"This session cannot be rebuilt here: {e}", status=503,
                            content_type="text/plain; charset=utf-8")
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["X-Targets-Version"] = version
    return response


def session_changes(request, token, role="presenter"):
    """What the last reload of the session's plugins changed (the run recorded with the old
    code against the replay with the new code)."""
    from visualizer import changes
    session = _session_for(token, role)
    baseline = session.baseline
    return render(request, "visualizer/changes.html", {
        "session": session, "role": role, "baseline": baseline,
        "result": changes.present(baseline["comparison"]) if baseline else None,
        "code": changes.code_label(session.plugin_code or {}),
    })


def session_compare(request, token, role="presenter"):
    """Compare two configurations of the session's scenario (a GET shows the form; a POST runs
    both and shows what changed, or the form's problems)."""
    from visualizer import changes
    session = _session_for(token, role)
    scenario = Scenario.from_text(session.scenario_text, session.source or "<input>")
    ctx = {"session": session, "role": role, "choices": changes.form_choices(scenario),
           "form": request.POST if request.method == "POST" else {}, "problems": [], "result": None,
           "injections": len(session.injections or [])}
    status = 200
    if request.method == "POST":
        try:
            variation = changes.parse_variation(request.POST, scenario)
            until = changes.parse_until(request.POST.get("until"))
            ctx["result"] = changes.present(changes.run_compare(session.pk, variation, until))
            ctx["variation"] = variation.describe()
        except ScenarioError as e:
            ctx["problems"] = e.problems
            status = 400
    elif request.method != "GET":
        return HttpResponse(status=405)
    return render(request, "visualizer/compare.html", ctx, status=status)


# ---------------------------------------------------------------------- the pending-pods report (report.py)

WHATIF_FORMS = ("yaml", "delete")


def _whatif_form(request, c, role) -> dict | None:
    """The what-if the report's GET asks for (``?whatif=add-node&like=X``,
    ``?whatif=remove-node&node=Y``, ``?whatif=requests&pod=NS/NAME``), as the inject form it
    prefills; None for none (or for a follower, who cannot change the session)."""
    import yaml
    from visualizer import report as rep
    if role != "presenter":
        return None
    kind = request.GET.get("whatif")
    engine = c["run"].stepper.engine
    pod = (request.GET.get("pod") or "")[:history.MAX_POD_KEY]
    if kind == "add-node":
        like = request.GET.get("like") or (rep.best_node_to_copy(c, pod) if pod else None) or next(iter(engine.nodes), None)
        if like not in engine.nodes:
            return {"kind": kind, "problem": f"like: {str(like)[:100]!r} is not a node of the cluster"}
        manifest = rep.node_like(engine, like, rep.free_name(engine, like))
        return {"kind": kind, "like": like, "pod": pod, "form": "yaml", "verb": "create",
                "requests": rep.pod_requests(engine, pod) if pod else "",
                "manifest": yaml.safe_dump(manifest, sort_keys=False, default_flow_style=False)}
    if kind == "remove-node":
        node = request.GET.get("node") or ""
        if node not in engine.nodes:
            return {"kind": kind, "problem": f"node: {node[:100]!r} is not a node of the cluster"}
        return {"kind": kind, "node": node, "pod": pod, "form": "delete"}
    if kind == "requests":
        manifest = rep.pod_manifest(engine, pod)
        if manifest is None:
            return {"kind": kind, "problem": f"pod: {pod[:100]!r} is not a pod of the cluster"}
        if engine.pods[pod].node_name:
            return {"kind": kind, "problem": f"pod: {pod[:100]} is bound to {engine.pods[pod].node_name} in the "
                                             "report's run: only a pending pod's requests can change"}
        return {"kind": kind, "pod": pod, "form": "yaml", "verb": "update", "requests": rep.pod_requests(engine, pod),
                "manifest": yaml.safe_dump(manifest, sort_keys=False, default_flow_style=False)}
    return None


def _report(request, token, role):
    from visualizer import report as rep
    session = _session_for(token, role)
    problems, status, posted = [], 200, None
    if request.method == "POST":
        if role != "presenter":
            return HttpResponse("A follower's link cannot change the session.", status=403,
                                content_type="text/plain; charset=utf-8")
        form = request.POST.get("form")
        if form not in WHATIF_FORMS:
            problems, status = [f"form: {str(form)[:40]!r} is not one of {', '.join(WHATIF_FORMS)}"], 400
        else:
            msg = {"action": "inject", **{k: request.POST.get(k, "") for k in ("form", "verb", "manifest", "kind", "name")}}
            try:
                if form == "delete" and msg["kind"] not in rep.WHATIF_KINDS:
                    raise runner.ControlError([f"kind: {msg['kind'][:60]!r} is not Node or Pod"])
                from visualizer import injections as inject_forms
                with runner.open_live(session.pk) as live:
                    verb, body = inject_forms.build(msg, live)
                    engine = live.stepper.engine
                    if not engine._loaded:       # before the first step: the cluster as loaded
                        engine = live.loaded_at_start().engine
                    refused = rep.check_whatif(engine, verb, body)
                if refused:
                    raise runner.ControlError(refused)
                runner.control(session.pk, msg)
            except runner.ControlError as e:
                problems, status, posted = [rep.plain_problem(p) for p in e.problems], 400, dict(msg)
            except EngineError as e:
                problems, status = [f"This session cannot be rebuilt here: {e}"], 503
            else:
                from asgiref.sync import async_to_sync
                from visualizer.consumers import publish_frame
                try:
                    async_to_sync(publish_frame)(session.pk)
                except Exception:       # noqa: BLE001 - the pages catch up at their next frame
                    pass
                return redirect(reverse(f"{'session' if role == 'presenter' else 'follower'}-report", args=[token])
                                + "?applied=1#report-changed")
        session.refresh_from_db()
    elif request.method != "GET":
        return HttpResponse(status=405)
    try:
        c = rep.computed(session)
        ctx = rep.present(session, c)
    except (EngineError, ScenarioError) as e:
        return render(request, "visualizer/session_unavailable.html", {
            "session": session, "problems": getattr(e, "problems", None) or [str(e)], "notes": [],
            "plugins": plugins.loaded(), "plugin_problems": plugins.problems()}, status=503)
    whatif = _whatif_form(request, c, role)
    if posted is not None:
        whatif = {"kind": request.POST.get("whatif") or "", "form": posted.get("form"), "verb": posted.get("verb"),
                  "manifest": posted.get("manifest"), "node": posted.get("name"), "pod": request.POST.get("pod", ""),
                  "like": request.POST.get("like", ""), "problems": problems}
        problems = []           # shown in the what-if's own box, next to the form
        if whatif["pod"]:
            whatif["requests"] = rep.pod_requests(c["run"].stepper.engine, whatif["pod"])
    description = (c["scenario"].description or "").strip()
    ctx.update({"session": session, "role": role, "token": token, "problems": problems, "whatif": whatif,
                "description": markdown.render(description) if description else "",
                "applied": request.GET.get("applied") == "1",
                "session_url": reverse("session-presenter" if role == "presenter" else "session-follower", args=[token]),
                "history_url": reverse("session-report-history" if role == "presenter" else "follower-report-history",
                                       args=[token])})
    return render(request, "visualizer/report.html", ctx, status=status)


def session_report(request, token):
    """The pending-pods report (visualizer.report): the presenter's, with the what-ifs."""
    return _report(request, token, "presenter")


def follower_report(request, token):
    return _report(request, token, "follower")


def _report_history(request, token, role):
    """A pod's history in the report's run (to idle, with the session's injections)."""
    from visualizer import report as rep
    session = _session_for(token, role)
    pod = request.GET.get("pod", "")
    if not isinstance(pod, str) or not pod.strip() or len(pod) > history.MAX_POD_KEY:
        ctx, status = {"history": {"pod": pod[:history.MAX_POD_KEY], "problem": "Name a pod: ?pod=namespace/name"}}, 400
    else:
        try:
            c = rep.computed(session)
            ctx = {"history": history.pod_history(c["run"], pod.strip())}
            status = 200 if ctx["history"]["found"] else 404
        except (EngineError, ScenarioError) as e:
            ctx, status = {"history": {"pod": pod, "problem": f"This session cannot be rebuilt here: {e}"}}, 503
    ctx["session_url"] = reverse("session-report" if role == "presenter" else "follower-report", args=[token])
    ctx["back_text"] = "back to the report"
    ctx["in_report"] = True
    if request.htmx:
        return render(request, "visualizer/partials/_pod_history.html", ctx)
    return render(request, "visualizer/pod_history.html", ctx, status=status)


def session_report_history(request, token):
    return _report_history(request, token, "presenter")


def follower_report_history(request, token):
    return _report_history(request, token, "follower")


# ---------------------------------------------------------------------- the CycleState inspector

def session_cyclestate(request, token, role="presenter"):
    """What the plugins stored in one cycle's CycleState (visualizer/cyclestate.py)."""
    from visualizer import cyclestate
    return cyclestate.view(request, _session_for(token, role), role)
