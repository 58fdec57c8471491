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
import secrets

from django.db import models


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
    extender_records = models.JSONField(default=list, blank=True)
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
