"""Where the shared corpus of captured formats lives: ../shared beside the
checkout (CI lays a copy there), else /work/shared. Tests that read it skip
with the reason when neither exists; the repo's own fixtures never do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_CANDIDATES = [
    Path(os.environ["GCM_SHARED_DIR"]) if os.environ.get("GCM_SHARED_DIR") else None,
    Path(__file__).resolve().parents[1].parent / "shared",
    Path("/work/shared"),
]


def shared_dir() -> Path:
    for c in _CANDIDATES:
        if c is not None and (c / "corpus").is_dir():
            return c
    return Path("/nonexistent-shared")


def corpus(*parts: str) -> Path:
    """Path of a corpus file; skips the calling test when it is not there."""
    p = shared_dir().joinpath("corpus", *parts)
    if not p.exists():
        pytest.skip(f"shared corpus not found ({p}); set GCM_SHARED_DIR")
    return p
