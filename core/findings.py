"""Findings are data: checkers produce them, reporters (text, JSON, the Streamlit pages) render them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import Enum

from pydantic import BaseModel, Field


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


class Finding(BaseModel):
    """One result of a check: a stable code, how bad it is, where, and where the rule comes from."""

    code: str = Field(description="stable identifier, e.g. ARG001")
    severity: Severity
    message: str
    line: int | None = Field(default=None, description="1-based line in the checked input")
    column: int | None = None
    flag: str | None = Field(default=None, description="the command-line flag concerned, if any")
    fix: str | None = Field(default=None, description="what to change, in plain words or as the exact flag")
    source: str | None = Field(default=None, description="path:line@commit of the rule upstream")
    card: str | None = Field(default=None, description="id of the knowledge card that explains it")

    def sort_key(self) -> tuple:
        return (self.line if self.line is not None else 10**12, SEVERITY_RANK[self.severity], self.code,
                self.flag or "", self.message)


def sort_and_dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Sort by location then severity, dropping repeats of the same (line, code, flag, message)."""
    seen: set[tuple] = set()
    out: list[Finding] = []
    for f in sorted(findings, key=Finding.sort_key):
        key = (f.line, f.code, f.flag, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def count_by_severity(findings: Iterable[Finding]) -> dict[str, int]:
    counts = {s.value: 0 for s in Severity}
    for f in findings:
        counts[f.severity.value] += 1
    return counts


def render_text(findings: Iterable[Finding]) -> str:
    """Plain-text reporter: one finding per line, with fix and source indented below."""
    lines = []
    for f in findings:
        where = f"line {f.line}: " if f.line is not None else ""
        flag = f" [{f.flag}]" if f.flag else ""
        lines.append(f"{f.severity.value.upper():7} {f.code} {where}{f.message}{flag}")
        if f.fix:
            lines.append(f"        fix: {f.fix}")
        if f.source:
            lines.append(f"        source: {f.source}")
    return "\n".join(lines)


def findings_json(findings: Iterable[Finding], fields: tuple[str, ...]) -> list[dict]:
    """The JSON reporter's list, keeping only the named fields (in that order)."""
    return [{k: f.model_dump(mode="json")[k] for k in fields} for f in findings]


def dumps(obj: object) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)
