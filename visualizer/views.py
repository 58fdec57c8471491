"""HTTP views: the library, starting a session, the session page, health and metrics.

Thin on purpose: sessions are created and read through ``visualizer.runner``, and the page's
panels come from ``visualizer.presenters`` (the same partials the WebSocket pushes).
"""
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from engine import ScenarioError
from engine.errors import EngineError
from visualizer import history, metrics, plugins, presenters, runner
from visualizer.models import Session
from visualizer.scenarios import find_entry, list_scenarios

EVENT_TYPES = ("Action", "ActionSkipped", "BindFailed", "Bound", "CycleEnd", "CycleSkipped", "CycleStart",
               "FilterStopped", "HostSelected", "NominatedNodeEvaluated", "Nomination", "PluginResult",
               "PluginError", "PodDeleted", "PodRemoved", "PreemptionCandidate", "PreemptionDryRunStop",
               "PreemptionIneligible", "PreemptionNodeResult", "PreemptionPick", "QueueTransition",
               "ReprieveFits", "ReprieveStart", "ReprieveStep")
MAX_UPLOAD_BYTES = 5 * 1024 * 1024


def library(request, problems=(), pasted="", status=200):
    """The scenario library: one entry per scenario file in SCENARIO_FIXTURES_DIR, and the
    upload form (with the problems of a rejected scenario)."""
    scenarios = list_scenarios(settings.SCENARIO_FIXTURES_DIR)
    return render(request, "visualizer/library.html",
                  {"scenarios": scenarios, "problems": list(problems), "pasted": pasted,
                   "plugins": plugins.loaded(), "plugin_problems": plugins.problems()}, status=status)


@require_POST
def start_session(request):
    """Start a session from a library fixture (``fixture``) or an uploaded or pasted scenario
    (``scenario_file`` or ``scenario``); an invalid one shows every problem and starts nothing."""
    fixture = request.POST.get("fixture")
    pasted = ""
    if fixture:
        path = find_entry(settings.SCENARIO_FIXTURES_DIR, fixture)
        if path is None:
            return library(request, [f"{fixture}: no such scenario in the library"], status=404)
        text, source = path.read_text(encoding="utf-8"), fixture
    elif request.FILES.get("scenario_file"):
        upload = request.FILES["scenario_file"]
        if upload.size > MAX_UPLOAD_BYTES:
            return library(request, [f"{upload.name}: the file is larger than {MAX_UPLOAD_BYTES // 1048576} MiB"], status=400)
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            return library(request, [f"{upload.name}: the file is not UTF-8 text"], status=400)
        source = ""
        pasted = text
    else:
        text = pasted = request.POST.get("scenario", "")
        source = ""
    try:
        session = runner.create_session(text, source)
    except ScenarioError as e:
        return library(request, e.problems, pasted=pasted, status=400)
    return redirect("session-presenter", token=session.presenter_token)


def _session_page(request, session, role):
    try:
        with runner.open_live(session.pk) as live:
            ctx = presenters.context(live)
    except EngineError as e:
        # e.g. the session runs an out-of-tree plugin this server was started without
        return render(request, "visualizer/session_unavailable.html", {
            "session": session, "problems": getattr(e, "problems", None) or [str(e)],
            "plugins": plugins.loaded(), "plugin_problems": plugins.problems()}, status=503)
    ctx.update({
        "role": role,
        "ws_path": f"/ws/{'s' if role == 'presenter' else 'w'}/"
                   f"{session.presenter_token if role == 'presenter' else session.follower_token}/",
        "follower_url": request.build_absolute_uri(reverse("session-follower", args=[session.follower_token])),
        "presenter_url": request.build_absolute_uri(reverse("session-presenter", args=[session.presenter_token]))
        if role == "presenter" else "",
        "history_url": reverse("pod-history-presenter" if role == "presenter" else "pod-history-follower",
                               args=[session.presenter_token if role == "presenter" else session.follower_token]),
        "speeds": runner.SPEEDS,
        "event_types": EVENT_TYPES,
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


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")


def prometheus_metrics(request):
    metrics.SESSIONS.set(Session.objects.count())
    metrics.LIVE_SESSIONS.set(runner.live_count())
    return HttpResponse(generate_latest(), content_type=CONTENT_TYPE_LATEST)
