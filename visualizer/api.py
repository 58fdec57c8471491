"""The REST API for sessions under ``/api/`` (django-ninja: typed endpoints, the OpenAPI schema at
``/api/openapi.json`` generated from them, Swagger UI at ``/api/docs``). See docs/api.md.

One code path with the page, not a copy: a session is created exactly as the library's form
does (``uploads.prepare`` in a worker with limits for text, then ``runner.create_session``),
controls go through ``runner.control`` (the same validation; run-until sliced as the consumer
does), exports through the page's export view. Tokens are in the path: the presenter token
(``/api/s/<token>/...``) controls the session, the follower token (``/api/w/<token>/...``)
only reads it; nothing a follower receives names the presenter token.

Reading never runs the engine past the head (what the session has already computed): a
position beyond it is refused, and reading a position other than the one shown rebuilds a
separate stepper, so the live session does not move.
"""
from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Literal, Optional

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import path
from ninja import Field, NinjaAPI, Query, Schema, Status
from ninja.errors import ValidationError
from ninja.openapi.docs import DocsBase

from engine import ScenarioError
from engine.errors import EngineError
from visualizer import runner, uploads
from visualizer.models import Session
from visualizer.scenarios import find_entry

log = logging.getLogger(__name__)

MAX_EVENTS_PAGE = 5000          # events one page of /events returns at most
MAX_EVENTS_SCANNED = 200_000    # events one filtered page looks at (then it returns its cursor)


class ApiError(Exception):
    def __init__(self, status: int, problems, title: str = "That did not work"):
        self.status = status
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.title = title


# ------------------------------------------------------------------ the docs page, served locally

_NINJA_STATIC = Path(__import__("ninja").__file__).resolve().parent / "static" / "ninja"
_DOCS_FILES = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui-init.js": "text/javascript",
               "swagger-ui.css": "text/css", "favicon.png": "image/png"}


class LocalSwagger(DocsBase):
    """Swagger UI from the django-ninja package's own copy (``docs_static``), whatever
    INSTALLED_APPS holds (django-ninja falls back to a CDN without ``ninja`` there, which the
    Content-Security-Policy and an offline classroom both refuse). No inline script: the
    settings are a JSON data block that the package's swagger-ui-init.js reads."""

    def render_page(self, request: HttpRequest, api: "NinjaAPI", **kwargs) -> HttpResponse:
        settings_json = json.dumps({"layout": "BaseLayout", "deepLinking": True,
                                    "url": self.get_openapi_url(api, kwargs)})
        return HttpResponse(render_to_string("api/docs.html", {"api": api, "swagger_settings": settings_json},
                                             request=request))


def docs_static(request, name):
    """One file of the docs page, from the installed django-ninja (pinned in requirements.txt)."""
    if name not in _DOCS_FILES:
        raise Http404(f"no file called {name}")
    response = FileResponse(open(_NINJA_STATIC / name, "rb"), content_type=_DOCS_FILES[name])
    response["Cache-Control"] = "public, max-age=3600"
    return response


api = NinjaAPI(title="kube-scheduler visualizer API", version="1",
               description="Create, read, drive and export sessions. The presenter token (`/api/s/{token}/...`) "
                           "controls a session; the follower token (`/api/w/{token}/...`) only reads it. "
                           "See docs/api.md.",
               docs=LocalSwagger(), docs_url="/docs", openapi_url="/openapi.json", urls_namespace="api")


@api.exception_handler(ApiError)
def _api_error(request, exc: ApiError):
    return api.create_response(request, {"title": exc.title, "problems": exc.problems}, status=exc.status)


@api.exception_handler(ValidationError)
def _invalid(request, exc: ValidationError):
    problems = []
    for err in exc.errors:
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path"))
        problems.append(f"{where or 'request'}: {err.get('msg', 'is not valid')}")
    return api.create_response(request, {"title": "The request is not valid", "problems": problems}, status=400)


# ------------------------------------------------------------------ schemas

class Problems(Schema):
    title: str
    problems: list[str]


class CreateIn(Schema):
    fixture: Optional[str] = None
    text: Optional[str] = None
    filename: Optional[str] = None
    test_case: Optional[str] = None
    workload: Optional[str] = None


class SessionOut(Schema):
    title: str
    scenario: str
    presenter_token: str
    follower_token: str
    presenter_url: str
    follower_url: str
    presenter_api: str
    follower_api: str


class ControlIn(Schema):
    action: str = Field(description="step-event, step-point, step-cycle, back, jump, run-until, inject, "
                                    "play or pause")
    speed: Optional[float] = Field(None, description="play: point-steps per second (0: as fast as possible; "
                                                     "default 2)")
    position: Optional[int] = Field(None, description="jump: the position to show")
    until: Optional[float] = Field(None, description="run-until: virtual seconds")
    form: Optional[str] = Field(None, description="inject: the page's form (node-add, pod-add, delete, node-update, "
                                                  "yaml); its other fields as the form names them")
    verb: Optional[str] = None
    manifest: Optional[str] = None
    kind: Optional[str] = None
    name: Optional[str] = None

    model_config = {"extra": "allow"}      # the inject forms' other fields, as the page posts them


class Position(Schema):
    position: int
    head: int
    clock: float
    finished: bool
    playing: Optional[float] = Field(None, description="the speed it plays at (point-steps per second, 0: as "
                                                         "fast as possible), in whichever server process; null: paused")


class ControlOut(Position):
    note: str
    slices: int


class StateOut(Schema):
    position: int
    head: int
    state: dict


class EventOut(Schema):
    position: int
    event: dict


class EventsOut(Schema):
    start: int
    head: int
    shown: int
    next: Optional[int]
    events: list[EventOut]


class EventsQuery(Schema):
    start: int = 0
    limit: int = 1000
    pod: str = ""
    node: str = ""
    type: str = ""


ERRORS = {400: Problems, 403: Problems, 404: Problems}


# ------------------------------------------------------------------ helpers

def _session(token: str, role: str) -> Session:
    session_id = runner.session_for_token(token, role)
    if session_id is None:
        raise ApiError(404, "no session has this link", title="Not found")
    return Session.objects.get(pk=session_id)



def _position(live) -> dict:
    return {"position": live.position, "head": live.high_water, "clock": live.stepper.engine.now / 1e6,
            "finished": bool(live.finished), "playing": live.playing}


def _off(fn, *args):
    """``fn(*args)`` in a worker thread, as the session socket runs the engine
    (``thread_sensitive=False``): a long rebuild or run-until never holds up the thread that
    serves the other synchronous views."""
    return sync_to_async(fn, thread_sensitive=False)(*args)


def _open(session):
    """``runner.open_live``, a session this server cannot rebuild being a 503."""
    return runner.open_live(session.pk)


def _links(request, session) -> dict:
    pt, ft = session.presenter_token, session.follower_token
    return {"title": session.title, "scenario": session.scenario_name,
            "presenter_token": pt, "follower_token": ft,
            "presenter_url": request.build_absolute_uri(f"/s/{pt}/"),
            "follower_url": request.build_absolute_uri(f"/w/{ft}/"),
            "presenter_api": request.build_absolute_uri(f"/api/s/{pt}/"),
            "follower_api": request.build_absolute_uri(f"/api/w/{ft}/")}


# ------------------------------------------------------------------ endpoints

@api.post("/sessions", response={201: SessionOut, 400: Problems, 404: Problems, 413: Problems, 499: None},
          summary="Create a session", tags=["sessions"])
def create_session(request, body: CreateIn):
    """Start a session from a library fixture (`{"fixture": "11-preemption-reprieve.yaml"}`) or
    from text (`{"text": "...", "filename": "cluster.yaml"}`): a scenario, or anything
    `python -m engine import` reads (a kubectl dump, a simulator export, ...), read and checked
    in a worker process with the page's limits. Invalid text: 400 with every problem; too
    large: 413. Returns both tokens and links (keep the presenter's private)."""
    from visualizer.views import MAX_UPLOAD_BYTES
    if body.fixture and body.text is not None:
        raise ApiError(400, "give either fixture or text, not both", title="The request is not valid")
    if body.fixture:
        path_ = find_entry(settings.SCENARIO_FIXTURES_DIR, body.fixture)
        if path_ is None:
            raise ApiError(404, f"{body.fixture[:200]}: no such scenario in the library", title="Not found")
        text, source, files = path_.read_text(encoding="utf-8"), body.fixture, None
    elif body.text is not None:
        name = (body.filename or "pasted text")[:200]
        size = len(body.text.encode("utf-8", "surrogatepass"))
        if size > MAX_UPLOAD_BYTES:
            raise ApiError(413, f"{name}: larger than {MAX_UPLOAD_BYTES // 1048576} MiB", title="Too large")
        files, source = [(name, body.text)], ""
    else:
        raise ApiError(400, "give fixture (a library scenario's name) or text (a scenario or an import)",
                       title="The request is not valid")
    try:
        if files is not None:
            text, imported = uploads.prepare(files, test_case=body.test_case or None, workload=body.workload or None)
        session = runner.create_session(text, source)
    except uploads.LimitExceeded as e:
        raise ApiError(413, e.problems, title="Too large") from None
    except ScenarioError as e:
        raise ApiError(400, e.problems, title="The scenario is not valid") from None
    except uploads.ClientGone:
        return Status(499, None)
    return Status(201, _links(request, session))


STATE_DOC = """The engine's state JSON (as `python -m engine run --state` writes it) after `position`
    revealed events, by default at the position the session shows. A position beyond the head
    (the events computed so far) is 400: reading never runs the engine forward. The live
    session does not move."""


@api.get("/s/{token}/state", response={200: StateOut, **ERRORS}, summary="The state at a position (presenter)",
         description=STATE_DOC, tags=["presenter"])
async def presenter_state(request, token: str, position: Optional[int] = None):
    return await _off(_state, token, "presenter", position)


@api.get("/w/{token}/state", response={200: StateOut, **ERRORS}, summary="The state at a position (follower)",
         description=STATE_DOC, tags=["follower"])
async def follower_state(request, token: str, position: Optional[int] = None):
    return await _off(_state, token, "follower", position)


def _state(token, role, position):
    session = _session(token, role)
    with _open(session) as live:
        head, shown = live.high_water, live.position
        target = shown if position is None else position
        if target < 0 or target > head:
            raise ApiError(400, f"position {target}: the session has revealed positions 0 to {head}",
                           title="No such position")
        if target == shown:
            st = live.stepper
        elif target == head:
            st = live.head
        else:
            st = None
        try:
            if st is not None:
                if not st.engine._loaded:
                    st = live.loaded_at_start()       # before the first unit: the cluster as loaded
                return {"position": target, "head": head, "state": st.state()}
            if target == 0:
                return {"position": 0, "head": head, "state": live.loaded_at_start().state()}
            copy = live.run._shown_at(target)     # a separate stepper; the live one stays put
            try:
                return {"position": target, "head": head, "state": copy.state()}
            finally:
                copy.discard()
        except EngineError as e:
            raise ApiError(400, f"this session cannot be rebuilt here: {e}", title="Cannot rebuild") from None


EVENTS_DOC = """The trace events recorded so far (up to the head), in the public trace format
    (docs/state-and-trace.md), each with its position (the position after it: `seq + 1`),
    from the event at index `start`, at most `limit` (≤ 5,000). `pod`, `node` and `type`
    filter as the page's event log does. `next` is the `start` of the next page, or null
    (a filtered page looks at 200,000 events at most, then returns what it found and `next`)."""


@api.get("/s/{token}/events", response={200: EventsOut, **ERRORS}, summary="Page through the events (presenter)",
         description=EVENTS_DOC, tags=["presenter"])
async def presenter_events(request, token: str, q: Query[EventsQuery]):
    return await _off(_events, token, "presenter", q)


@api.get("/w/{token}/events", response={200: EventsOut, **ERRORS}, summary="Page through the events (follower)",
         description=EVENTS_DOC, tags=["follower"])
async def follower_events(request, token: str, q: Query[EventsQuery]):
    return await _off(_events, token, "follower", q)


def _events(token, role, q):
    from visualizer.panels.log import _subjects
    session = _session(token, role)
    if not 1 <= q.limit <= MAX_EVENTS_PAGE:
        raise ApiError(400, f"limit {q.limit}: between 1 and {MAX_EVENTS_PAGE:,}", title="The request is not valid")
    if q.start < 0:
        raise ApiError(400, f"start {q.start}: zero or more", title="The request is not valid")
    f = {k: (getattr(q, k) or "").strip()[:200] for k in ("pod", "node", "type")}
    with _open(session) as live:
        head, shown = live.high_water, live.position
        evs = live.timeline
        out, i = [], q.start
        stop = min(head, q.start + (MAX_EVENTS_SCANNED if any(f.values()) else q.limit))
        for e in runner._events_between(evs, min(q.start, head), stop):
            i = e["seq"] + 1
            if any(f.values()):
                pods, nodes = _subjects(e)
                if (f["pod"] and f["pod"] not in pods) or (f["node"] and f["node"] not in nodes) or \
                        (f["type"] and e["type"] != f["type"]):
                    continue
            out.append({"position": e["seq"] + 1, "event": e})
            if len(out) >= q.limit:
                break
        nxt = i if i < head and i > q.start else None
        if q.start >= head:
            nxt = None
    return {"start": q.start, "head": head, "shown": shown, "next": nxt, "events": out}


@api.post("/s/{token}/control", response={200: ControlOut, **ERRORS}, summary="Send a control (presenter)",
          tags=["presenter"])
async def control(request, token: str, body: ControlIn):
    """One control, as the presenter's page sends it (`runner.control`, the same validation):
    `step-event`, `step-point`, `step-cycle`, `back`, `jump` (`position`), `run-until`
    (`until`, seconds of virtual time; run in slices, at most the page's budget), `inject`
    (`form` and its fields, as the page's inject forms), `play` (`speed`, point-steps per
    second; the server plays on after the reply, as for the page's Play, until the end, a
    `pause` or any other control) and `pause`. Presenter token only: a follower's link gets
    403. A control that cannot be carried out is 400 with its problems."""
    session = await _off(_session, token, "presenter")
    msg = body.dict(exclude_none=True)
    if msg.get("action") in ("play", "pause"):
        return await _play_or_pause(session, msg)
    await _off(runner.stop_play, session.pk)
    slices, note = 0, ""
    try:
        while True:      # run-until in slices, other requests and sockets running between them
            result = await _off(runner.control, session.pk, msg)
            slices += 1
            note = result.get("note") or ""
            if not result.get("more"):
                break
            await asyncio.sleep(0)
            if slices >= runner.MAX_SLICES_PER_CONTROL:
                note = (f"Stopped: this run took its whole budget of work ({runner.MAX_SLICES_PER_CONTROL} "
                        "slices); run again to go on.")
                break
    except runner.ControlError as e:
        raise ApiError(400, e.problems, title=e.title) from None
    await _publish(session.pk)
    if result.get("checkpoint_due"):
        await _off(runner.take_due_checkpoint, session.pk)      # after the frame, as the page does
    return {**await _off(_where, session), "note": note, "slices": slices}


async def _play_or_pause(session, msg) -> dict:
    """The page's Play and Pause (consumers.SessionConsumer.play and pause): a play runs in
    this process after the reply; a pause stops it in whichever process plays it."""
    from channels.layers import get_channel_layer
    from visualizer import consumers
    try:
        if msg["action"] == "play":
            await consumers.start_play(session.pk, runner.parse_speed(msg.get("speed", 2)))
            note = ""
        else:
            note = "Paused." if await _off(runner.stop_play, session.pk) else "It was not playing."
            layer = get_channel_layer()
            if layer is not None:
                await layer.group_send(consumers.group_name(session.pk), {"type": "session.stop_play"})
            await _publish(session.pk)
    except runner.ControlError as e:
        raise ApiError(400, e.problems, title=e.title) from None
    return {**await _off(_where, session), "note": note, "slices": 0}


def _where(session) -> dict:
    with _open(session) as live:
        return _position(live)


@api.post("/w/{token}/control", response={403: Problems, 404: Problems}, include_in_schema=False)
def follower_control(request, token: str):
    """A follower's link never controls the session (nor reveals whether a presenter token exists)."""
    _session(token, "follower")
    raise ApiError(403, "a follower's link cannot control the session", title="Forbidden")


async def _publish(session_id) -> None:
    """The session's open pages show the change: one frame to its group, as the consumer sends."""
    from visualizer.consumers import publish_frame
    try:
        await publish_frame(session_id)
    except Exception:     # pragma: no cover - the control is done; the pages catch up on their next frame
        log.exception("could not publish session %s", session_id)


Export = Literal["scenario.yaml", "state.json", "trace.jsonl", "results.json"]
EXPORT_DOC = """The page's exports at the position the session shows: `scenario.yaml`, `state.json`,
    `trace.jsonl` (the revealed trace, as `python -m engine run --trace` writes it) or
    `results.json` (the pods with kube-scheduler-simulator's result annotations): the page's
    own export view, a download."""


@api.get("/s/{token}/export/{what}", response={200: None, **ERRORS}, summary="Export the session (presenter)",
         description=EXPORT_DOC, tags=["presenter"])
def presenter_export(request, token: str, what: Export):
    from visualizer.views import session_export
    return session_export(request, _session(token, "presenter").presenter_token, what)


@api.get("/w/{token}/export/{what}", response={200: None, **ERRORS}, summary="Export the session (follower)",
         description=EXPORT_DOC, tags=["follower"])
def follower_export(request, token: str, what: Export):
    from visualizer.views import session_export
    return session_export(request, _session(token, "follower").follower_token, what)


urlpatterns = [
    path("docs/static/<str:name>", docs_static, name="api-docs-static"),
    path("", api.urls),
]
