"""The server's own figures, exposed at /metrics (prometheus-client's default registry, which
also carries the process's memory and CPU)."""
from prometheus_client import Counter, Gauge

SESSIONS = Gauge("visualizer_sessions", "sessions stored in the database")
LIVE_SESSIONS = Gauge("visualizer_live_sessions", "sessions with an engine in this process")
OPEN_SOCKETS = Gauge("visualizer_open_websockets", "open WebSocket connections", ["role"])
FRAMES_PUSHED = Counter("visualizer_frames_pushed_total", "frames of HTML partials sent to browsers")
CONTROLS = Counter("visualizer_controls_total", "control messages carried out", ["action"])
CONTROLS_REFUSED = Counter("visualizer_controls_refused_total",
                           "control messages refused because they came from a follower")
REBUILDS = Counter("visualizer_engine_rebuilds_total",
                   "engines rebuilt from the database by replay (restart, another process's change)")
CATCH_UPS = Counter("visualizer_engine_catch_ups_total",
                    "live sessions brought to another process's newer version by running on (no rebuild)")
PLAY_STEPS = Counter("visualizer_play_steps_total", "steps taken while playing")
EVICTIONS = Counter("visualizer_live_sessions_evicted_total",
                    "Live sessions evicted from this process's memory (idle, or beyond LIVE_SESSIONS_MAX)")
INPUT_REFUSED = Counter("visualizer_input_refused_total",
                        "WebSocket messages refused before any work (too large, not JSON, too deep, too many pending)")
