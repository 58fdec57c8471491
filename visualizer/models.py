"""A session: one scenario being run, stored so that a server restart loses nothing.

The engine is deterministic, so a session is stored as what it needs to be replayed exactly:
the scenario text, the cluster events injected from the page (each with the trace position
and the virtual time it was applied at), how far the run has gone (``high_water``, the number
of trace events ever revealed, and ``head_clock_us``, the engine's clock there) and the
position shown now (``position`` <= ``high_water``: the presenter may have travelled back),
and the replies of the scheduler extenders it called (``extender_records``: a replay never
calls one again).
``visualizer.runner`` rebuilds the engine from these fields.
"""
import base64
import secrets

from django.db import models


NUL_KEY = "$nul"     # (NulSafeJSONField) a string holding NUL, as UTF-8 in base64


def _nul_out(value):
    if isinstance(value, str):
        return {NUL_KEY: base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii")} \
            if "\x00" in value else value
    if isinstance(value, list):
        return [_nul_out(v) for v in value]
    if isinstance(value, dict):
        return {k: _nul_out(v) for k, v in value.items()}
    return value


def _nul_in(value):
    if isinstance(value, list):
        return [_nul_in(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1 and NUL_KEY in value:
            return base64.b64decode(value[NUL_KEY]).decode("utf-8", "surrogatepass")
        return {k: _nul_in(v) for k, v in value.items()}
    return value


class NulSafeJSONField(models.JSONField):
    """A JSONField whose strings may hold NUL characters (``\\0``), which PostgreSQL's jsonb
    cannot store (SQLite can): such a string is stored as ``{"$nul": <its UTF-8 in base64>}``
    and read back as it was, on both databases. For what the server records from outside
    (a scheduler extender's reply), where refusing is not an option: the run already used it."""

    def get_prep_value(self, value):
        return super().get_prep_value(_nul_out(value))

    def from_db_value(self, value, expression, connection):
        return _nul_in(super().from_db_value(value, expression, connection))


def new_token() -> str:
    """An unguessable link token (256 bits)."""
    return secrets.token_urlsafe(32)


class Session(models.Model):
    title = models.CharField(max_length=300)
    scenario_name = models.CharField(max_length=100)
    scenario_text = models.TextField()
    source = models.CharField(max_length=300, blank=True, help_text="fixture file name, or empty for an upload")
    presenter_token = models.CharField(max_length=64, unique=True, default=new_token)
    follower_token = models.CharField(max_length=64, unique=True, default=new_token)
    # [{"position": int, "timeUs": int, "verb": "create|update|delete", "body": {...}}] in the
    # order applied; "position" is the number of trace events revealed when it was applied.
    injections = models.JSONField(default=list)
    position = models.PositiveIntegerField(default=0)
    # Where the last control started: the events (change_start, position] are what it revealed,
    # which the page marks as "just moved" (the same after a restart or on another process).
    change_start = models.PositiveIntegerField(default=0)
    high_water = models.PositiveIntegerField(default=0)
    head_clock_us = models.BigIntegerField(default=0)
    # The out-of-tree plugin code the run was recorded with (visualizer.plugins.plugin_code):
    # {plugin name: {"source": ..., "file": ..., "digest": ...}}; {} when it uses none.
    plugin_code = models.JSONField(default=dict, blank=True)
    # The last reload of the session's plugins (visualizer.changes.reload_session): the code the
    # replaced run was recorded with and what changed, kept so history is never silently
    # rewritten; null before any reload.
    baseline = models.JSONField(null=True, blank=True, default=None)
    # Every reply of the scheduler extenders the scenario configures, in call order
    # (engine.extender.RecordingTransport's records: [{"call": 0, "extender", "verb", "url",
    # "request" (SHA-256 of the body), "status", "body", "error", "timedOut", "latency"}, ...]),
    # so a rebuild (time travel, a restart, another process) replays the past from them and
    # never calls an extender again for it; [] when it configures none.
    extender_records = NulSafeJSONField(default=list, blank=True)
    # Playing (issue 27): the speed it plays at (None: paused), the server process whose play
    # task steps it, and until when that process's lease holds; its play ticks renew the lease,
    # and a process that finds it run out (the player went away: killed, restarted) claims the
    # play and continues it (visualizer.runner, "play"). Not part of the run: no version bump.
    play_speed = models.FloatField(null=True, blank=True, default=None)
    play_owner = models.CharField(max_length=120, blank=True, default="")
    play_lease_until = models.DateTimeField(null=True, blank=True, default=None)
    # Incremented by every change: a process holding an older copy of the run rebuilds it.
    version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.title} ({self.scenario_name})"
