"""The upstream versions every fact in the app is pinned to."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote

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


ROUTER_PIN = "sglang-router-0.3.2"
_BLOB = {
    SLIME_SHORT: f"https://github.com/THUDM/slime/blob/{SLIME_COMMIT}/",
    SLIME_COMMIT: f"https://github.com/THUDM/slime/blob/{SLIME_COMMIT}/",
    MEGATRON_SHORT: f"https://github.com/NVIDIA/Megatron-LM/blob/{MEGATRON_COMMIT}/",
    MEGATRON_COMMIT: f"https://github.com/NVIDIA/Megatron-LM/blob/{MEGATRON_COMMIT}/",
    SGLANG_VERSION: f"https://github.com/sgl-project/sglang/blob/{SGLANG_VERSION}/",
}
_CITATION = re.compile(r"^(?P<path>[A-Za-z0-9_.\-/]+?)(?::(?P<first>\d+)(?:-(?P<last>\d+))?)?@(?P<pin>[A-Za-z0-9_.\-]+)$")
_INLINE_CITATION = re.compile(r"(?<!\[)`([A-Za-z0-9_.\-/]+(?::\d+(?:-\d+)?)?@[A-Za-z0-9_.\-]+)`")


def source_url(citation: str) -> str | None:
    """The web address of a citation: the upstream file at the pinned commit, at its lines (`#L10-L12`).

    URLs pass through; the router (read from its PyPI wheel) links to that release; anything else is None."""
    citation = citation.strip()
    if citation.startswith(("https://", "http://")):
        return citation
    m = _CITATION.match(citation)
    if not m:
        return None
    if m["pin"] == ROUTER_PIN:
        return "https://pypi.org/project/sglang-router/0.3.2/"
    base = _BLOB.get(m["pin"])
    if base is None:
        return None
    anchor = ""
    if m["first"]:
        anchor = f"#L{m['first']}" + (f"-L{m['last']}" if m["last"] else "")
    return base + quote(m["path"]) + anchor


def link_citations(markdown: str) -> str:
    """Markdown with every backticked `path:line@pin` citation made a link to its upstream lines."""
    def _link(m: re.Match[str]) -> str:
        url = source_url(m.group(1))
        return f"[`{m.group(1)}`]({url})" if url else m.group(0)

    return _INLINE_CITATION.sub(_link, markdown)


# -- where the pinned upstream checkouts are (the tests and tools read them; the app never needs them) -----------
SOURCES_ENV = "SLIME_ASSISTANT_SOURCES"
SOURCE_NAMES = ("slime", "megatron", "sglang", "router")
_SOURCE_SUBDIR = {"slime": "slime", "megatron": "megatron", "sglang": "sglang_whl", "router": "router"}
_DEFAULT_SOURCES = {"slime": "/work/src/slime", "megatron": "/work/src/megatron", "sglang": "/work/src/sglang_whl",
                    "router": "/tmp/router/x"}


def pinned_source_dir(name: str, env: dict[str, str] | None = None) -> Path:
    """The folder holding one pinned upstream source: `$SLIME_ASSISTANT_SOURCES/<slime|megatron|sglang_whl|router>`
    (what `make sources` fills), else the historical defaults (/work/src/..., /tmp/router/x)."""
    if name not in _SOURCE_SUBDIR:
        raise ValueError(f"unknown source {name!r}; one of {', '.join(SOURCE_NAMES)}")
    base = (os.environ if env is None else env).get(SOURCES_ENV, "").strip()
    return Path(base).expanduser() / _SOURCE_SUBDIR[name] if base else Path(_DEFAULT_SOURCES[name])
