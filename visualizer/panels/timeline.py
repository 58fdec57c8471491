"""The timeline panel (templates/visualizer/partials/_timeline.html): the position on the
recorded run, how far it goes (the high-water mark) and the injections along it."""
from __future__ import annotations

from engine import US
from visualizer.formatting import seconds


def timeline(live) -> dict:
    return {
        "position": live.position,
        "high_water": live.high_water,
        "injections": [{"position": i.position, "time": seconds(i.time_us / US), "verb": i.verb,
                        "kind": (i.body or {}).get("kind", "")} for i in live.injections],
    }
