"""The upstream versions every fact in the app is pinned to."""

from __future__ import annotations

SLIME_COMMIT = "624b824a898ab0ec1fcb4d373004c7f3852bf515"
SLIME_SHORT = SLIME_COMMIT[:8]
SLIME_DATE = "2026-08-21"
MEGATRON_COMMIT = "1dcf0dafa884ad52ffb243625717a3471643e087"
MEGATRON_SHORT = MEGATRON_COMMIT[:8]
SGLANG_VERSION = "v0.5.15.post1"

REPO_PIN = {
    "slime": SLIME_SHORT,
    "megatron": MEGATRON_SHORT,
    "sglang": SGLANG_VERSION,
}


def slime_source(path: str, line: int | None = None) -> str:
    """A citation of a file (and line) in slime at the pinned commit, as `path:line@commit`."""
    return _cite(path, line, SLIME_SHORT)


def megatron_source(path: str, line: int | None = None) -> str:
    """A citation of a file (and line) in Megatron-LM at the pinned commit."""
    return _cite(path, line, MEGATRON_SHORT)


def sglang_source(path: str, line: int | None = None) -> str:
    """A citation of a file (and line) in SGLang at the pinned release."""
    return _cite(path, line, SGLANG_VERSION)


def _cite(path: str, line: int | None, pin: str) -> str:
    return f"{path}:{line}@{pin}" if line else f"{path}@{pin}"
