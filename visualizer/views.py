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

from engine import Scenario, ScenarioError
from visualizer import metrics, presenters, runner
from visualizer.models import Session
from visualizer.scenarios import find_entry, list_scenarios

EVENT_TYPES = ("Action", "ActionSkipped", "BindFailed", "Bound", "CycleEnd", "CycleSkipped", "CycleStart",
               "FilterStopped", "HostSelected", "NominatedNodeEvaluated", "Nomination", "PluginResult",
               "PodDeleted", "PodRemoved", "PreemptionCandidate", "PreemptionDryRunStop",
               "PreemptionIneligible", "PreemptionNodeResult", "PreemptionPick", "QueueTransition",
               "ReprieveFits", "ReprieveStart", "ReprieveStep")
MAX_UPLOAD_BYTES = 5 * 1024 * 1024


def library(request, problems=(), pasted="", status=200):
    """The scenario library: one entry per scenario file in SCENARIO_FIXTURES_DIR, and the
    upload form (with the problems of a rejected scenario)."""
    scenarios = list_scenarios(settings.SCENARIO_FIXTURES_DIR)
    return render(request, "visualizer/library.html",
                  {"scenarios": scenarios, "problems": list(problems), "pasted": pasted}, status=status)


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
    except ScenarioError as e:
        # e.g. a plugin the session was recorded with is not loaded by this server (changes.py)
        from visualizer import changes
        return render(request, "visualizer/unavailable.html", {
            "session": session, "problems": e.problems,
            "notes": changes.code_notes(session.plugin_code or {})}, status=503)
    ctx.update({
        "role": role,
        "ws_path": f"/ws/{'s' if role == 'presenter' else 'w'}/"
                   f"{session.presenter_token if role == 'presenter' else session.follower_token}/",
        "follower_url": request.build_absolute_uri(reverse("session-follower", args=[session.follower_token])),
        "presenter_url": request.build_absolute_uri(reverse("session-presenter", args=[session.presenter_token]))
        if role == "presenter" else "",
        "speeds": runner.SPEEDS,
        "event_types": EVENT_TYPES,
    })
    return render(request, "visualizer/session.html", ctx)


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


# ---------------------------------------------------------------------- what changed (changes.py)

def _session_for(token, role):
    field = "presenter_token" if role == "presenter" else "follower_token"
    return get_object_or_404(Session, **{field: token})


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
