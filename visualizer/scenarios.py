"""The scenario library: what the scenario files in a directory say about themselves.

This reads only each file's `metadata` (name, title, description) so the library page can
list it (a card shows the description's first paragraph, the whole narrative on request); a file that cannot be read or has no `metadata.name` becomes an entry carrying its
error instead. Full validation belongs to the engine (`python -m engine validate`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class ScenarioEntry:
    """One scenario file as the library shows it: its metadata, or why it could not be read."""

    filename: str
    name: str = ""
    title: str = ""
    description: str = ""
    error: str = ""

    @property
    def description_html(self):
        """The description as safe HTML (Markdown, everything in it escaped first)."""
        from visualizer.markdown import render
        return render(self.description)

    @property
    def summary_html(self):
        """The description's first paragraph as safe HTML: what the library card shows."""
        from visualizer.markdown import first_paragraph
        return first_paragraph(self.description)

    @property
    def has_more(self) -> bool:
        """Whether the description says more than its first paragraph (the card then offers
        the full narrative)."""
        from visualizer.markdown import block_count
        return block_count(self.description) > 1


def read_entry(path: Path) -> ScenarioEntry:
    """Read one scenario file's metadata; never raises for a bad file."""
    try:
        with path.open(encoding="utf-8") as f:
            document = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return ScenarioEntry(filename=path.name, error=f"{path.name}: {exc}")
    if not isinstance(document, dict):
        return ScenarioEntry(
            filename=path.name,
            error=f"{path.name}: expected a mapping at the top level, "
            f"got {type(document).__name__}",
        )
    metadata = document.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return ScenarioEntry(filename=path.name, error=f"{path.name}: metadata.name is required")
    return ScenarioEntry(
        filename=path.name,
        name=str(metadata["name"]),
        title=str(metadata.get("title") or ""),
        description=str(metadata.get("description") or ""),
    )


def list_scenarios(directory: Path) -> list[ScenarioEntry]:
    """Every `*.yaml` file in `directory`, sorted by file name (none if it does not exist)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return [read_entry(path) for path in sorted(directory.glob("*.yaml"))]


def find_entry(directory: Path, filename: str) -> Path | None:
    """The path of the library's scenario file called ``filename`` (only files the library
    lists: no other path can be named)."""
    for entry in list_scenarios(directory):
        if entry.filename == filename and not entry.error:
            return Path(directory) / entry.filename
    return None
