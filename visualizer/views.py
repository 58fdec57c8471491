"""HTTP views: the library, starting a session, the session page, health and metrics.

Thin on purpose: sessions are created and read through ``visualizer.runner``, and the page's
panels come from ``visualizer.presenters`` (the same partials the WebSocket pushes).
"""
import re
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
import segno

from engine import ScenarioError
from visualizer import markdown, metrics, presenters, runner
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


def _qr_svg(url: str) -> str:
    """The QR code of ``url`` as inline SVG (segno; error correction M survives a projector)."""
    qr = segno.make(url, error="m")
    return mark_safe(qr.svg_inline(scale=5, border=2, dark="#111", light="#fff",
                                   title="QR code of the follower link"))


def _session_page(request, session, role):
    follower_url = request.build_absolute_uri(reverse("session-follower", args=[session.follower_token]))
    with runner.open_live(session.pk) as live:
        ctx = presenters.context(live)
    ctx.update({
        "role": role,
        "ws_path": f"/ws/{'s' if role == 'presenter' else 'w'}/"
                   f"{session.presenter_token if role == 'presenter' else session.follower_token}/",
        "follower_url": follower_url,
        # The presenter link is never printed (a projected page would hand control to the
        # room): a button copies it. The follower link comes with a QR code for phones.
        "follower_qr": _qr_svg(follower_url) if role == "presenter" else "",
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


# ---------------------------------------------------------------------- the documentation

DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"
_DOC_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_DOC_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\.(yaml|yml|py|json|png)$")


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
    pages = sorted(p.stem for p in DOCS_DIR.glob("*.md") if p.stem != "README")
    return render(request, "visualizer/docs.html", {"html": html, "title": title or name, "name": name,
                                                     "pages": pages})


def docs_file(request, folder, filename):
    """A file of docs/examples (as text) or docs/images (a PNG)."""
    if folder not in ("examples", "images"):
        raise Http404("no such file")
    if not filename:
        files = sorted(p.name for p in (DOCS_DIR / folder).iterdir() if _DOC_FILE.match(p.name))
        return render(request, "visualizer/docs.html", {
            "title": f"docs/{folder}", "name": folder, "folder": folder, "files": files,
            "pages": sorted(p.stem for p in DOCS_DIR.glob("*.md") if p.stem != "README")})
    if not _DOC_FILE.match(filename):
        raise Http404("no such file")
    path = DOCS_DIR / folder / filename
    if not path.is_file():
        raise Http404("no such file")
    if filename.endswith(".png"):
        return FileResponse(path.open("rb"), content_type="image/png")
    return HttpResponse(path.read_text(encoding="utf-8"), content_type="text/plain; charset=utf-8")
