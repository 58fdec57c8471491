"""Pods waiting on Permit (upstream ``pkg/scheduler/framework/runtime/waiting_pods_map.go``, v1.28).

A Permit plugin that returns ``Wait`` (with a timeout) parks the assumed pod here; its binding
cycle then blocks in ``WaitOnPermit`` until every plugin that asked to wait has allowed it
(``allow``), any plugin rejects it (``reject``), or the first plugin's timer fires (a rejection
"rejected due to timeout after waiting <d> at plugin <name>").

Upstream delivers the outcome through a channel with a buffer of one: the first signal is
kept and later ones are dropped, and the blocked binding goroutine wakes at once.  The
simulator does the same in virtual time: the first signal wins; the binding cycle wakes as a
completion due at that same instant, where the pod leaves the map (``WaitOnPermit``'s deferred
remove) and the binding goes on (allowed: PreBind and Bind ``bindDuration`` later) or fails
(rejected: ``handleBindingCycleError``).  Timers are virtual: a plugin's timer is a completion at
its deadline, stopped by that plugin's ``allow`` or by any ``reject``.  Where upstream iterates
a Go map (``IterateOverWaitingPods``, ``GetPendingPlugins``), the simulator keeps the order in
which pods started waiting and the Permit plugins' configured order (SPEC.md §12: racy or
random orders become a fixed order).
"""
from __future__ import annotations

from .interface import Code, Status

# framework/runtime/framework.go: maxTimeout, the longest a Permit plugin may ask to wait.
MAX_PERMIT_TIMEOUT_US = 15 * 60 * 1_000_000


def go_duration(us: int) -> str:
    """A duration as Go's ``time.Duration.String`` prints it ("10s", "1m0s", "1.5s", "250ms")."""
    if us == 0:
        return "0s"
    sign = "-" if us < 0 else ""
    u = abs(int(us))
    if u < 1000:
        return f"{sign}{u}µs"
    if u < 1_000_000:
        whole, frac = divmod(u, 1000)
        return f"{sign}{whole}" + (f".{frac:03d}".rstrip("0") if frac else "") + "ms"
    secs, frac = divmod(u, 1_000_000)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    sec = f"{s}" + (f".{frac:06d}".rstrip("0") if frac else "") + "s"
    if h:
        return f"{sign}{h}h{m}m{sec}"
    if m:
        return f"{sign}{m}m{sec}"
    return sign + sec


class PermitTimer:
    """One plugin's timer (upstream: ``time.AfterFunc`` in ``newWaitingPod``)."""
    __slots__ = ("waiting_pod", "plugin", "deadline", "wait", "stopped")

    def __init__(self, waiting_pod, plugin: str, deadline: int, wait: int):
        self.waiting_pod = waiting_pod
        self.plugin = plugin
        self.deadline = deadline   # virtual time (µs)
        self.wait = wait           # the plugin's wait (µs), after the 15-minute cap
        self.stopped = False


class WaitingPod:
    """framework.WaitingPod: ``get_pod()``, ``get_pending_plugins()``, ``allow(plugin)``,
    ``reject(plugin, message)``.  Handed to plugins by ``handle.get_waiting_pod(uid)`` and
    ``handle.iterate_over_waiting_pods(callback)``."""
    __slots__ = ("pod", "node_name", "pending_plugins", "signal", "_fwk", "since")

    def __init__(self, fwk, pod, timers: dict, since: int):
        self._fwk = fwk
        self.pod = pod                      # the assumed pod (spec.nodeName set)
        self.node_name = pod.node_name
        self.pending_plugins = timers       # plugin name -> PermitTimer, in Permit order
        self.signal = None                  # the first Status delivered (None: none yet)
        self.since = since

    def get_pod(self):
        """GetPod: the assumed pod (its ``node_name`` is the node it waits on)."""
        return self.pod

    def get_pending_plugins(self) -> list:
        """GetPendingPlugins: the plugins that asked to wait and have not allowed yet."""
        return list(self.pending_plugins)

    def allow(self, plugin_name: str) -> None:
        """Allow: ``plugin_name`` lets the pod go (its timer stops).  When no plugin is left
        pending, the binding cycle is signalled to go on; a signal already given stays."""
        timer = self.pending_plugins.pop(plugin_name, None)
        if timer is not None:
            self._fwk._stop_permit_timer(timer)
            if self.signal is None:
                self._fwk._permit_event("PermitAllow", self, plugin_name)
        if self.pending_plugins:
            return
        self._send(None)

    def reject(self, plugin_name: str, msg: str) -> None:
        """Reject: the pod is unschedulable (Unschedulable, ``failedPlugin`` = ``plugin_name``);
        every timer stops.  Dropped if the pod was already allowed or rejected."""
        for timer in self.pending_plugins.values():
            self._fwk._stop_permit_timer(timer)
        if self.signal is not None:
            return
        self._send(Status(Code.Unschedulable, [msg], plugin_name),
                   ("PermitReject", plugin_name, {"message": msg}))

    def _timeout(self, timer: PermitTimer) -> None:
        """A plugin's timer fired: reject, as upstream's AfterFunc does."""
        msg = f"rejected due to timeout after waiting {go_duration(timer.wait)} at plugin {timer.plugin}"
        for t in self.pending_plugins.values():
            self._fwk._stop_permit_timer(t)
        if self.signal is not None:
            return
        self._send(Status(Code.Unschedulable, [msg], timer.plugin),
                   ("PermitTimeout", timer.plugin, {"message": msg, "timeout": timer.wait / 1_000_000}))

    def _send(self, status, event=None) -> None:
        if self.signal is not None:
            return           # the channel's buffer of one is full: later signals are dropped
        self.signal = status if status is not None else Status(Code.Success)
        if event is not None:
            kind, plugin, fields = event
            self._fwk._permit_event(kind, self, plugin, **fields)
        self._fwk._waiting_pod_signalled(self)

    def __repr__(self):
        return f"WaitingPod({self.pod.key} on {self.node_name}, pending {list(self.pending_plugins)})"


class WaitingPodsMap:
    """waitingPodsMap: the waiting pods of one profile, by pod UID, in the order they came."""
    __slots__ = ("pods",)

    def __init__(self):
        self.pods: dict = {}

    def add(self, wp: WaitingPod) -> None:
        self.pods[wp.pod.uid] = wp

    def remove(self, uid) -> None:
        self.pods.pop(uid, None)

    def get(self, uid):
        return self.pods.get(uid)

    def iterate(self, callback) -> None:
        for wp in list(self.pods.values()):
            callback(wp)

    def __len__(self):
        return len(self.pods)
