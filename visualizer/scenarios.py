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
    # the plugins its scheduler profiles enable that are not in-tree (plugin_names), and the
    # directory of the file (where a plugin module beside it is looked for: plugin_hint)
    plugins: tuple = ()
    directory: str = ""

    @property
    def missing_plugins(self) -> list:
        """The out-of-tree plugins the scenario enables that this server has not loaded: the
        scenario cannot be started here (the library disables its Start button)."""
        from engine.plugins import registry
        return [n for n in self.plugins if registry.get(n) is None]

    @property
    def plugin_hint(self) -> str:
        """How to start the server with the missing plugins: ``SCHEDULER_PLUGINS=<files> bash
        scripts/run.sh``, naming the module files that define them when the project's examples
        or the scenario's own directory have them."""
        missing = self.missing_plugins
        if not missing:
            return ""
        files = [f for f in (plugin_file(n, self.directory) for n in missing) if f]
        spec = ",".join(dict.fromkeys(files)) if len(files) == len(missing) else "path/to/plugin.py"
        return f"SCHEDULER_PLUGINS={spec} bash scripts/run.sh"

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


MAX_PLUGIN_NAMES = 50


def plugin_names(document) -> tuple:
    """The plugin names a scenario's ``scheduler.profiles[].plugins.<point>.enabled`` lists that
    are not in-tree plugins (in order, once each; at most MAX_PLUGIN_NAMES)."""
    from engine.plugins import registry
    scheduler = document.get("scheduler") if isinstance(document, dict) else None
    profiles = scheduler.get("profiles") if isinstance(scheduler, dict) else None
    out: dict = {}
    for profile in profiles if isinstance(profiles, list) else []:
        plugins = profile.get("plugins") if isinstance(profile, dict) else None
        for point in (plugins.values() if isinstance(plugins, dict) else []):
            enabled = point.get("enabled") if isinstance(point, dict) else None
            for item in enabled if isinstance(enabled, list) else []:
                name = item.get("name") if isinstance(item, dict) else None
                if isinstance(name, str) and name and name != "*" and not registry.is_in_tree(name):
                    out.setdefault(name, None)
    return tuple(list(out)[:MAX_PLUGIN_NAMES])


MAX_PLUGIN_FILE = 1024 * 1024
_file_cache: dict = {}      # path -> (mtime, text)


def _module_text(path: Path) -> str:
    try:
        st = path.stat()
        if st.st_size > MAX_PLUGIN_FILE:
            return ""
        hit = _file_cache.get(path)
        if hit and hit[0] == st.st_mtime_ns:
            return hit[1]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    _file_cache[path] = (st.st_mtime_ns, text)
    return text


def plugin_file(name: str, directory: str = "") -> str:
    """The plugin module file that defines ``name``, read as text (never imported): a ``.py``
    file of the project's docs/examples or of the scenario's own directory that has a
    ``PLUGINS`` mapping and names ``name`` in quotes. Relative to the project when under it;
    "" when none does."""
    from django.conf import settings
    base = Path(settings.BASE_DIR)
    dirs = [base / "docs" / "examples"] + ([Path(directory)] if directory else [])
    quoted = (f'"{name}"', f"'{name}'")
    for d in dirs:
        if not d.is_dir():
            continue
        for path in sorted(d.glob("*.py"))[:200]:
            text = _module_text(path)
            if "PLUGINS" in text and any(q in text for q in quoted):
                try:
                    return str(path.resolve().relative_to(base.resolve()))
                except ValueError:
                    return str(path.resolve())
    return ""


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
        plugins=plugin_names(document),
        directory=str(path.parent),
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
