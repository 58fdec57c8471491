"""Formatting shared by the pages' modules (below presenters and changes)."""
from __future__ import annotations


def seconds(value) -> str:
    """Virtual seconds as text: 0, 1.5, 0.000001."""
    if value is None:
        return ""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"
