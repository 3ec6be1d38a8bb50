"""What a data check reports: the summary numbers, the report, and the plain-text rendering the CLI prints.

Pure data and formatting: the reader (core/data/scan.py) and the row judge (core/data/judge.py) fill these in.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from core.data.rules import CODE_BY_NAME, EMPTY_DATASET, RULES, DataKeys, Problem
from core.data.tokens import LengthSettings, RenderedPrompt, TokenBin, TokenizerInfo, TokenStats
from core.findings import Finding, findings_json, render_text
from core.text import shown

CARD = "data-formats"
MAX_LINE_BYTES = 8 * 1024 * 1024  # lines longer than this are reported, not parsed
MAX_LISTED_PER_CODE = 20
JSON_FIELDS = ("code", "severity", "message", "line", "fix", "source")


class CheckError(ValueError):
    """The file cannot be checked at all (missing, a directory, unreadable); the message says why."""


class HistogramBin(BaseModel):
    low: int
    high: int
    rows: int


class PromptLengths(BaseModel):
    """Prompt length in characters (a chat prompt counts its text contents)."""

    rows: int = 0
    min: int | None = None
    max: int | None = None
    mean: float | None = None
    histogram: list[HistogramBin] = Field(default_factory=list)


class SampleRow(BaseModel):
    line: int
    text: str


class DataSummary(BaseModel):
    """What the check found, in numbers. Rows are counted the way slime counts them."""

    name: str
    file_format: str  # "jsonl" or "parquet"
    bytes_total: int | None = None
    bytes_read: int = 0
    lines: int = 0
    blank_lines: int = 0
    # Every row is counted once: rows == rows_used + rows_skipped + rows_crash + rows_unchecked
    # + rows_outside_slice + dropped_for_length. A row is a non-blank line as slime splits them (a lone carriage return ends a
    # line too), whatever it holds, or a parquet row.
    rows: int = 0
    rows_used: int = 0
    rows_skipped: int = 0  # lines slime prints a decode error for and drops
    rows_crash: int = 0
    rows_unchecked: int = 0  # lines over the size cap
    rows_outside_slice: int = 0  # rows the `@[start:end]` row slice leaves out (or that slime never reaches)
    object_rows: int = 0  # rows read as JSON objects: the rows whose keys are counted
    rows_with_warnings: int = 0
    prompt_format: str = "none"  # "text", "chat", "mixed", "none"
    prompt_formats: dict[str, int] = Field(default_factory=dict)
    keys: dict[str, int] = Field(default_factory=dict)
    other_keys: int = 0
    label_types: dict[str, int] = Field(default_factory=dict)
    prompt_chars: PromptLengths = Field(default_factory=PromptLengths)
    samples: list[SampleRow] = Field(default_factory=list)
    crlf_lines: int = 0
    findings_by_code: dict[str, int] = Field(default_factory=dict)
    omitted_by_code: dict[str, int] = Field(default_factory=dict)
    max_listed_per_code: int = MAX_LISTED_PER_CODE
    flags_to_add: list[str] = Field(default_factory=list)
    settings: DataKeys = Field(default_factory=DataKeys)
    launch_flags: list[str] = Field(default_factory=list)
    row_slice: str | None = None
    max_line_bytes: int = MAX_LINE_BYTES
    complete: bool = True
    # Set when slime would stop at start-up whatever the rows hold (a name it refuses, a binary or non-UTF-8
    # file, no row at all): the message of the file-level finding that says why. The row counts then say
    # what each row would meet once that is fixed.
    stops_at_start: str | None = None
    stops_at_line: int | None = None  # the line slime stops at, when it is one line's fault
    would_fail: bool = False
    seconds: float = 0.0
    # With the model's tokenizer (core/data/tokens.py): what was loaded, prompt tokens over the rows slime
    # uses, and the rows it drops for --rollout-max-prompt-len (counted here, not in rows_used).
    tokenizer: TokenizerInfo | None = None
    prompt_tokens: TokenStats | None = None
    dropped_for_length: int = 0
    length_settings: LengthSettings | None = None
    prompt_limit: int | None = None  # the limit slime filters with (the flag, or context length - 1)
    length_check_skipped: bool = False
    context_length: int | None = None  # the model's, for the prompt + response arithmetic
    longest_prompt_line: int | None = None
    rows_over_context: int = 0
    token_histogram: list[TokenBin] = Field(default_factory=list)
    rendered_prompts: list[RenderedPrompt] = Field(default_factory=list)


class DataReport(BaseModel):
    findings: list[Finding]
    summary: DataSummary

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON: findings shaped as the launch checker's, then the summary."""
        return {"findings": findings_json(self.findings, JSON_FIELDS),
                "summary": self.summary.model_dump(mode="json")}

    @classmethod
    def from_json(cls, document: str) -> DataReport | None:
        """The report back from its JSON (`to_json`, e.g. the saved record of the last check), every finding
        linked to the data card again; None when the text is not such a report (damaged, an older shape)."""
        try:
            doc = json.loads(document)
            findings = [Finding(**{k: f.get(k) for k in JSON_FIELDS}, card=CARD) for f in doc["findings"]]
            return cls(findings=findings, summary=DataSummary.model_validate(doc["summary"]))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):  # ValidationError is a ValueError
            return None


def finding_for(problem: Problem, line: int | None) -> Finding:
    rule = RULES[CODE_BY_NAME[problem.rule]]
    return Finding(code=rule.code, severity=rule.severity, message=problem.detail, line=line,
                   column=problem.column, fix=rule.fix, source=rule.source, card=CARD)


def startup_headline(summary: DataSummary, *, with_name: bool = False) -> str:
    """'slime would stop at start-up[ on NAME][ at line N]: <why>.' (meaningful when summary.stops_at_start)."""
    where = (f" on {summary.name}" if with_name else "") + (
        f" at line {summary.stops_at_line}" if summary.stops_at_line else "")
    why = (summary.stops_at_start or "").rstrip()
    return f"{stop_phrase(summary)}{where}: {why}" + ("" if why.endswith((".", "?", "!")) else ".")


def stop_phrase(summary: DataSummary) -> str:
    """How the run fails: at start-up, or, for an empty dataset, in a way that depends on the launch flags."""
    if EMPTY_DATASET in (summary.stops_at_start or ""):
        return "slime would have no row to train on"
    return "slime would stop at start-up"


def render_report_text(report: DataReport) -> str:
    """Plain-text reporter for the CLI: summary lines, then the findings, then what was left out."""
    s = report.summary
    counts = (f"use {s.rows_used}, skip {s.rows_skipped} line(s), crash on {s.rows_crash} row(s)"
              + (f", {s.rows_unchecked} not checked (over {s.max_line_bytes // (1024 * 1024)} MiB)"
                 if s.rows_unchecked else "")
              + (f", {s.rows_outside_slice} outside the row slice" if s.rows_outside_slice else "")
              + (f", drop {s.dropped_for_length} for length" if s.dropped_for_length else ""))
    # the same count the Check my data page shows as "Rows that read fine" (a line slime skips is no row)
    lines = [f"{s.name}: {s.file_format}, {s.lines} line(s); {s.rows_used} row(s) read fine"]
    if s.stops_at_start:
        lines.append(f"  {startup_headline(s)}")
        if s.rows:
            lines.append(f"  row by row, slime would {counts}")
    else:
        lines.append(f"  slime would {counts}")
    lines.append(f"  prompts: {s.prompt_format} {s.prompt_formats}; labels: {s.label_types or 'no --label-key'}")
    if s.prompt_chars.rows:
        pc = s.prompt_chars
        lines.append(f"  prompt characters: min {pc.min}, mean {pc.mean}, max {pc.max}")
    lines.extend(f"  {line}" for line in token_lines(s))
    if s.keys:
        lines.append("  keys: " + ", ".join(f"{k} ({n})" for k, n in list(s.keys.items())[:12]))
    if s.flags_to_add:
        lines.append("  flags to add: " + " ".join(s.flags_to_add))
    lines.append("")
    lines.append(render_text(report.findings) or "No findings.")
    for code, n in s.omitted_by_code.items():
        lines.append(f"... and {n} more {code} finding(s) not listed (cap {s.max_listed_per_code} per code)")
    lines.append("")
    lines.append("RESULT: " + (f"{stop_phrase(s)} (exit 1)" if s.stops_at_start
                               else "slime would skip or crash on some rows (exit 1)" if s.would_fail
                               else "no row slime would skip or crash on" if s.complete
                               else "the check could not finish"))
    return "\n".join(lines)


def token_lines(s: DataSummary) -> list[str]:
    """What the tokenizer step found, in a few lines (none without a tokenizer)."""
    if s.tokenizer is None:
        return []
    t = s.tokenizer
    lines = [f"tokenizer: {t.path} ({t.kind}, {t.vocab_size:,} tokens, "
             + ("chat template present)" if t.chat_template else "no chat template)")]
    if s.prompt_tokens is not None:
        pt = s.prompt_tokens
        lines.append(f"prompt tokens: min {pt.min:,}, median {pt.median:,}, p95 {pt.p95:,}, max {pt.max:,}"
                     + (f" (longest at line {s.longest_prompt_line})" if s.longest_prompt_line else ""))
    if s.prompt_limit is not None:
        if s.length_check_skipped:
            lines.append(f"prompt limit {s.prompt_limit:,}: not applied (slime skips the check for message lists)")
        else:
            lines.append(f"prompt limit {s.prompt_limit:,}: slime drops {s.dropped_for_length:,} row(s) for length")
    settings = s.length_settings
    response = settings.rollout_max_response_len if settings else None
    if response is not None and s.prompt_tokens is not None:
        total = s.prompt_tokens.max + response
        context = f" of the model's {s.context_length:,}" if s.context_length else " (model context length unknown)"
        lines.append(f"longest prompt + --rollout-max-response-len {response:,} = {total:,} tokens{context}"
                     + (f"; {s.rows_over_context:,} row(s) do not fit" if s.rows_over_context else ""))
    return lines


def plural(count: int, word: str) -> str:
    """'1 row', '2 rows' (with thousands separators)."""
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def failure_sentence(s: DataSummary) -> str:
    """What slime would do wrong with the rows, only the parts that happen: 'skip 1 line, crash on 2 rows and
    drop 3 rows for length' (meaningful when summary.would_fail)."""
    parts = []
    if s.rows_skipped:
        parts.append(f"skip {plural(s.rows_skipped, 'line')}")
    if s.rows_crash:
        parts.append(f"crash on {plural(s.rows_crash, 'row')}")
    if s.dropped_for_length:
        parts.append(f"drop {plural(s.dropped_for_length, 'row')} for length")
    if not parts:
        return "stop on a problem of the whole file"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


PROMPT_FORMAT_WORDS = {"text": "prompts are plain text", "chat": "prompts are chat message lists",
                       "mixed": "prompts mix plain text and message lists", "none": "no prompt was read"}


def status_summary(s: DataSummary) -> str:
    """One line for people on what the check found (the page's status line and What's done): 'train.jsonl:
    slime would use all 10 rows; prompts are plain text' or 'train.jsonl: slime would skip 1 line and crash
    on 14 rows (35 of 50 rows usable); prompts are plain text'; for a file slime stops on, the reason."""
    if s.stops_at_start:  # the reason, not the rows' counts
        return f"{s.name}: {startup_headline(s).rstrip('.')}"
    if s.would_fail:
        what = f"slime would {failure_sentence(s)} ({s.rows_used:,} of {plural(s.rows, 'row')} usable)"
    elif not s.complete:
        what = f"the check could not finish ({s.rows_used:,} of {plural(s.rows, 'row')} read fine so far)"
    else:
        what = f"slime would use all {plural(s.rows_used, 'row')}" if s.rows_used != 1 else "slime would use its one row"
    unchecked = f", {s.rows_unchecked:,} too long to check" if s.rows_unchecked else ""
    return f"{s.name}: {what}{unchecked}; {PROMPT_FORMAT_WORDS.get(s.prompt_format, s.prompt_format)}"


def printable(text: str) -> str:
    """The text, with anything that is not valid Unicode (lone surrogates, from a JSON escape such as \\ud800 or
    from undecodable bytes in a file name) shown as its escape (core.text.shown), so every output can be encoded."""
    return shown(text)


def _scrubbed(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {(_scrubbed(k) if isinstance(k, str) else k): _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


def scrub_report(report: DataReport) -> DataReport:
    """The report with every string made printable (see printable); unchanged when nothing needs it."""
    data = report.model_dump()
    clean = _scrubbed(data)
    return report if clean == data else DataReport.model_validate(clean)
