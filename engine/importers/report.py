"""What an import kept, dropped and ignored, and why: the report the CLI prints and the page
shows (also written into the scenario's description, so a session shows it beside the run)."""
from __future__ import annotations

from collections import Counter, defaultdict


class ImportReport:
    """Counts per kind of what was kept and dropped (with the reason), fields ignored per kind,
    pods that are not ours (another scheduler's), and notes."""

    def __init__(self):
        self.formats: dict = {}                          # file -> detected format
        self.kept: Counter = Counter()                   # kind -> count
        self.kept_detail: dict = defaultdict(Counter)    # kind -> {what: count} (bound, pending, ...)
        self.dropped: dict = defaultdict(Counter)        # kind -> {reason: count}
        self.fields_ignored: dict = defaultdict(Counter)  # kind -> {field path: count}
        self.not_ours: list = []                         # "ns/name (schedulerName)"
        self.notes: list = []

    # -------------------------------------------------------------- recording
    # Kinds and paths may come from the files imported: kept as text, so that the report can
    # always sort them (a YAML key may be a number).

    def keep(self, kind: str, detail: str | None = None) -> None:
        self.kept[str(kind)] += 1
        if detail:
            self.kept_detail[str(kind)][detail] += 1

    def drop(self, kind: str, reason: str, count: int = 1) -> None:
        """``count`` objects of ``kind`` left out for ``reason`` (counted, never looped over)."""
        if count > 0:
            self.dropped[str(kind)][reason] += count

    def ignore(self, kind: str, path: str) -> None:
        self.fields_ignored[str(kind)][str(path)] += 1

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -------------------------------------------------------------- output
    def as_dict(self) -> dict:
        return {
            "formats": dict(self.formats),
            "kept": {k: self.kept[k] for k in sorted(self.kept)},
            "keptDetail": {k: dict(sorted(v.items())) for k, v in sorted(self.kept_detail.items())},
            "dropped": {k: dict(sorted(v.items())) for k, v in sorted(self.dropped.items())},
            "fieldsIgnored": {k: dict(sorted(v.items())) for k, v in sorted(self.fields_ignored.items())},
            "notOurs": list(self.not_ours),
            "notes": list(self.notes),
        }

    def _kept_line(self, kind):
        detail = self.kept_detail.get(kind)
        extra = f" ({', '.join(f'{n} {w}' for w, n in detail.items())})" if detail else ""
        return f"{self.kept[kind]} {kind}{extra}"

    def text(self) -> str:
        """Plain text for a terminal."""
        lines = []
        for f, fmt in self.formats.items():
            lines.append(f"{f}: {fmt}")
        lines.append("kept: " + (", ".join(self._kept_line(k) for k in sorted(self.kept)) or "nothing"))
        if self.dropped:
            lines.append("dropped:")
            for kind in sorted(self.dropped):
                for reason, n in sorted(self.dropped[kind].items()):
                    lines.append(f"  {n} {kind}: {reason}")
        if self.not_ours:
            lines.append(f"not ours ({len(self.not_ours)} pending pods of another scheduler; they stay pending): "
                         + ", ".join(self.not_ours[:10]) + (", ..." if len(self.not_ours) > 10 else ""))
        if self.fields_ignored:
            lines.append("fields ignored (not read by the scheduler):")
            for kind in sorted(self.fields_ignored):
                items = sorted(self.fields_ignored[kind].items(), key=lambda kv: (-kv[1], kv[0]))
                lines.append(f"  {kind}: " + ", ".join(f"{p} ({n})" for p, n in items))
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)

    def markdown(self) -> str:
        """The same report as Markdown (the scenario's description)."""
        out = ["| kind | kept | dropped |", "|---|---|---|"]
        for kind in sorted(set(self.kept) | set(self.dropped)):
            detail = self.kept_detail.get(kind)
            kept = str(self.kept.get(kind, 0))
            if detail:
                kept += " (" + ", ".join(f"{n} {w}" for w, n in detail.items()) + ")"
            dropped = "; ".join(f"{n}: {r}" for r, n in sorted(self.dropped.get(kind, {}).items())) or "0"
            out.append(f"| {kind} | {kept} | {dropped.replace('|', '/')} |")
        if self.not_ours:
            out += ["", f"**Not ours**: {len(self.not_ours)} pending pod(s) of another scheduler stay pending: "
                    + ", ".join(f"`{p}`" for p in self.not_ours[:20]) + (", ..." if len(self.not_ours) > 20 else "")]
        if self.fields_ignored:
            out += ["", "Fields ignored (not read by the scheduler):", ""]
            for kind in sorted(self.fields_ignored):
                items = sorted(self.fields_ignored[kind].items(), key=lambda kv: (-kv[1], kv[0]))
                out.append(f"- {kind}: " + ", ".join(f"`{p}` ({n})" for p, n in items))
        if self.notes:
            out += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(out)
