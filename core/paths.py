"""Server-side paths the app may read: only inside roots the user configured.

Roots come from $SLIME_ASSISTANT_ROOTS (os.pathsep-separated directories). With none configured the app
reads no server-side path at all; uploads still work.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

ENV_ROOTS = "SLIME_ASSISTANT_ROOTS"
MAX_PATH_CHARS = 4096


class PathRefused(ValueError):
    """The path is outside the configured roots, or not usable; the message says which and why."""


class AllowedPath(BaseModel):
    path: Path
    root: Path


def configured_roots(env: dict[str, str] | None = None) -> list[Path]:
    """The resolved, existing directories named in $SLIME_ASSISTANT_ROOTS."""
    raw = (env if env is not None else os.environ).get(ENV_ROOTS, "")
    roots = []
    for part in raw.split(os.pathsep):
        part = part.strip()
        if not part:
            continue
        p = Path(part).expanduser()
        try:
            p = p.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if p.is_dir():
            roots.append(p)
    return roots


def resolve_allowed(raw: str, *, want: str = "file", roots: list[Path] | None = None) -> AllowedPath:
    """Resolve a user-typed path (following links) and accept it only inside a configured root.

    `want` is "file" or "dir". Raises PathRefused with a specific message otherwise.
    """
    roots = configured_roots() if roots is None else roots
    text = (raw or "").strip()
    if not text:
        raise PathRefused("No path given.")
    if len(text) > MAX_PATH_CHARS or "\0" in text:
        raise PathRefused("That path is too long or contains a NUL byte.")
    if not roots:
        raise PathRefused(f"Reading files on this machine is off: no roots are configured. Set {ENV_ROOTS} "
                          "to the directories the app may read (see README), or upload the file instead.")
    try:
        resolved = Path(text).expanduser().resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        raise PathRefused(f"That path cannot be resolved: {exc}.") from None
    # Containment first, so that a refusal says nothing about what exists outside the roots, and the
    # message names the path as typed, never where a link leads.
    root = next((r for r in roots if resolved == r or resolved.is_relative_to(r)), None)
    if root is None:
        shown = ", ".join(str(r) for r in roots)
        raise PathRefused(f"{text} is outside the directories this app may read ({shown}).")
    if not resolved.exists():
        raise PathRefused(f"Nothing exists at {text}.")
    if want == "file" and not resolved.is_file():
        raise PathRefused(f"{resolved} is {'a directory' if resolved.is_dir() else 'not a regular file'}; "
                          "give a file.")
    if want == "dir" and not resolved.is_dir():
        raise PathRefused(f"{resolved} is not a directory.")
    return AllowedPath(path=resolved, root=root)
