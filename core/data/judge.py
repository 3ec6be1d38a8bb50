"""Judging rows: every parsed row goes through the rules (core/data/rules.py), gets slime's verdict, and
adds to the numbers of the summary; the whole-file verdicts come at the end.

The reader (core/data/scan.py) subclasses the judge with the reading itself; it counts plainly fine rows on a
fast path and hands them over in blocks (`_add_fast_rows`).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

import orjson

from core.data.report import (
    DataReport,
    DataSummary,
    HistogramBin,
    PromptLengths,
    SampleRow,
    finding_for,
    scrub_report,
)
from core.data.rules import (
    CODE_BY_NAME,
    LABEL_STATE_RULES,
    MISSING,
    RULES,
    DataKeys,
    LabelState,
    Problem,
    Verdict,
    check_key_names,
    check_label,
    check_metadata,
    check_multimodal,
    check_multimodal_config,
    check_prompt,
    check_row_count,
    check_row_is_object,
    check_tools,
)
from core.data.tokens import TokenCounter
from core.findings import Finding, Severity, sort_and_dedupe

SAMPLE_ROWS = 5
SAMPLE_CHARS = 600
MAX_KEY_SHAPES = 1000
MAX_KEYS = 200

ProgressFn = Callable[[float, str], None]

# ---------------------------------------------------------------- row tally (with slime's row slice) ------

USED_WITH_WARNINGS = "used-with-warnings"  # a tally entry: used, with warnings (counted in rows_used too)
Tallied = Verdict | str


class _RowTally:
    """Counts row verdicts, only for the rows slime's `path@[start:end]` slice selects.

    Negative bounds need the final row count; rows are held back in a window just long enough to decide.
    """

    def __init__(self, row_slice: slice | None) -> None:
        self.slice = row_slice
        self.counts: dict[Tallied, int] = dict.fromkeys([*Verdict, USED_WITH_WARNINGS], 0)
        self.rows = 0
        start = row_slice.start if row_slice else None
        stop = row_slice.stop if row_slice else None
        self.start, self.stop = start, stop
        self.window_size = max(-(start or 0), -(stop or 0), 0)
        self.window: deque[Tallied] = deque()
        self.outside = 0  # rows the slice leaves out

    def add(self, verdict: Tallied) -> None:
        index = self.rows
        self.rows += 1
        if self.slice is None:
            self.counts[verdict] += 1
            return
        if not self.window_size:
            if self.selected_early(index):
                self.counts[verdict] += 1
            else:
                self.outside += 1
            return
        self.window.append(verdict)
        if len(self.window) > self.window_size:
            oldest = self.window.popleft()
            if self.selected_early(index - self.window_size):
                self.counts[oldest] += 1
            else:
                self.outside += 1

    def selected_early(self, index: int) -> bool:
        """For a row at least window_size rows from the end (a negative start excludes it; a negative
        stop includes it)."""
        start, stop = self.start, self.stop
        after_start = start is None or (start >= 0 and index >= start)
        before_stop = stop is None or stop < 0 or index < stop
        return after_start and before_stop

    def line_is_read(self) -> bool:
        """Does slime still read the next line? islice stops after the stop-th row (data.py:72)."""
        return self.stop is None or self.stop < 0 or self.rows < self.stop

    def finish(self) -> dict[Tallied, int]:
        if self.slice is not None and self.window:
            first = self.rows - len(self.window)
            lo, hi, _ = self.slice.indices(self.rows)
            for offset, verdict in enumerate(self.window):
                if lo <= first + offset < hi:
                    self.counts[verdict] += 1
                else:
                    self.outside += 1
            self.window.clear()
        return self.counts


class _RowJudge:
    """The verdicts and numbers of one pass over one file; core/data/scan.py adds the reading."""

    def __init__(self, name: str, keys: DataKeys, *, row_slice: slice | None, max_line_bytes: int,
                 max_listed: int, progress: ProgressFn | None) -> None:
        self.name = name
        self.keys = keys
        self.max_line_bytes = max_line_bytes
        self.max_listed = max_listed
        self.progress = progress
        self.findings: list[Finding] = []
        self.code_counts: dict[str, int] = {}
        self.tally = _RowTally(row_slice)
        self.row_slice = row_slice
        self.summary = DataSummary(name=name, file_format="jsonl", max_line_bytes=max_line_bytes,
                                   max_listed_per_code=max_listed, settings=keys,
                                   launch_flags=keys.launch_flags())
        self.lines_skipped = 0
        self.lines_skipped_unread = 0  # dropped lines after the slice's last row: slime never reads them
        self.records = 0  # every row, whatever its verdict (see DataSummary)
        self.object_rows = 0
        self.key_shapes: dict[tuple, int] = {}
        self.key_counts: dict[str, int] = {}
        self.label_types: dict[str, int] = {}
        self.formats: dict[str, int] = {}
        self.length_bins = [0] * 64
        self.length_min: int | None = None
        self.length_max = 0
        self.length_sum = 0
        self.length_rows = 0
        self.chat_without_template = 0
        self.chat_without_template_line: int | None = None
        self.first_crlf_line: int | None = None
        self.first_non_utf8: tuple[Problem, int] | None = None  # reported once, at the end
        self.non_utf8_lines = 0
        self.last_non_utf8_line = 0  # lines arrive in order, so counting distinct lines needs only the last
        self.tokens: TokenCounter | None = None  # the tokenizer step, when a tokenizer is given

    # -- findings -----------------------------------------------------------------------------------
    def emit(self, problem: Problem, line: int | None) -> None:
        code = CODE_BY_NAME[problem.rule]
        count = self.code_counts.get(code, 0) + 1
        self.code_counts[code] = count
        if count <= self.max_listed:
            self.findings.append(finding_for(problem, line))

    def non_utf8(self, problem: Problem, line: int) -> None:
        """Bytes that are not UTF-8: slime's text-mode read stops the run there, so only the first such line
        is reported (with a count of the others), as the start-up stop."""
        if self.first_non_utf8 is None:
            self.first_non_utf8 = (problem, line)
        if line != self.last_non_utf8_line:
            self.non_utf8_lines += 1
            self.last_non_utf8_line = line

    def stop_at_start(self, problem: Problem, line: int | None, *, whole_file: bool = False) -> None:
        """Report a problem that stops slime at start-up whatever the rows hold; the first is the headline."""
        self.emit(problem, line)
        if self.summary.stops_at_start is None:
            self.summary.stops_at_start = problem.detail
            self.summary.stops_at_line = None if whole_file else line

    # -- rows -----------------------------------------------------------------------------------------
    def check_row(self, row: Any, line: int, raw: bytes | None, problems: list[Problem] | None) -> None:
        """Apply every row rule to one parsed row, record its verdict and its numbers."""
        keys = self.keys
        self.records += 1
        if row.__class__ is not dict:
            problem = check_row_is_object(row)
            self.emit(problem, line)
            for p in problems or ():
                self.emit(p, line)
            self.tally.add(Verdict.CRASH)
            return
        problems = problems or []
        self.object_rows += 1
        self._count_keys(row)
        fmt, chars, prompt_problems = check_prompt(row, keys)
        if prompt_problems:
            problems.extend(prompt_problems)
        self.formats[fmt] = self.formats.get(fmt, 0) + 1
        rendered = None
        if self.tokens is not None and (fmt == "text" or fmt == "chat"):
            rendered, template_problem = self.tokens.render(row)
            if template_problem is not None:
                problems.append(template_problem)
        if fmt == "chat" or (fmt == "text" and keys.multimodal_keys is not None):
            if not keys.apply_chat_template:
                self.chat_without_template += 1
                if self.chat_without_template_line is None:
                    self.chat_without_template_line = line
                problems.append(_CHAT_WITHOUT_TEMPLATE)
        if fmt == "text" or fmt == "chat":
            self._count_length(chars)
        if keys.label_key is not None:
            label = row.get(keys.label_key, MISSING)
            type_name = "missing" if label is MISSING else _JSON_TYPE_NAMES.get(label.__class__, "other")
            self.label_types[type_name] = self.label_types.get(type_name, 0) + 1
            problem = check_label(row, keys)
            if problem:
                problems.append(problem)
        if keys.tool_key is not None and keys.tool_key in row:
            problems.extend(check_tools(row, keys))
        if keys.metadata_key in row:
            problem = check_metadata(row, keys)
            if problem:
                problems.append(problem)
        if keys.multimodal_keys:
            problems.extend(check_multimodal(row, keys))
        verdict = Verdict.USED
        warned = False
        if problems:
            for p in problems:
                rule = RULES[CODE_BY_NAME[p.rule]]
                if rule.verdict is Verdict.CRASH:
                    verdict = Verdict.CRASH
                elif rule.severity is not Severity.INFO:
                    warned = True
                if p is not _CHAT_WITHOUT_TEMPLATE:
                    self.emit(p, line)
        self.tally.add(USED_WITH_WARNINGS if warned and verdict is Verdict.USED else verdict)
        if rendered is not None:
            self.tokens.add(self.tally.rows - 1, line, rendered, verdict is Verdict.USED, warned)
        if verdict is Verdict.USED and len(self.summary.samples) < SAMPLE_ROWS:
            self._add_sample(row, line, raw)

    def label_problem_row(self, row: dict, line: int, raw: bytes, chat: bool, chars: int,
                          state: LabelState) -> None:
        """What check_row does with a row every screen passed but the label's (`state`: missing, null or
        blank), without running every validator again: a finding that half a million rows repeat costs a
        count each, its first rows are listed (tests/data/test_data_check.py compares both routes)."""
        self.records += 1
        self.object_rows += 1
        self._count_keys(row)
        fmt = "chat" if chat else "text"
        self.formats[fmt] = self.formats.get(fmt, 0) + 1
        self._count_length(chars)
        type_name = _LABEL_STATE_TYPES[state]
        self.label_types[type_name] = self.label_types.get(type_name, 0) + 1
        code = CODE_BY_NAME[LABEL_STATE_RULES[state]]
        count = self.code_counts.get(code, 0) + 1
        self.code_counts[code] = count
        if count <= self.max_listed:
            self.findings.append(finding_for(check_label(row, self.keys), line))
        verdict = _LABEL_STATE_VERDICTS[state]
        self.tally.add(verdict)
        if verdict is Verdict.CRASH:
            return
        if len(self.summary.samples) < SAMPLE_ROWS:
            self._add_sample(row, line, raw)

    def _count_keys(self, row: dict) -> None:
        if len(row) <= 64:
            shape = tuple(row)
            count = self.key_shapes.get(shape)
            if count is not None:
                self.key_shapes[shape] = count + 1
                return
            if len(self.key_shapes) < MAX_KEY_SHAPES:
                self.key_shapes[shape] = 1
                return
        self._add_keys(row, 1)

    def _add_keys(self, names: Any, count: int) -> None:
        counts = self.key_counts
        for name in names:
            key = str(name)
            if key in counts:
                counts[key] += count
            elif len(counts) < MAX_KEYS:
                counts[key] = count
            else:
                self.summary.other_keys += count

    def _count_length(self, chars: int) -> None:
        self.length_bins[min(chars.bit_length(), 63)] += 1
        self.length_rows += 1
        self.length_sum += chars
        if chars > self.length_max:
            self.length_max = chars
        if self.length_min is None or chars < self.length_min:
            self.length_min = chars

    def _add_fast_rows(self, text_lengths: list[int], chat_lengths: list[int], other_labels: list[type],
                       label_faults: dict[LabelState, int]) -> None:
        """Fold one block's rows counted by the fast path into the checker's numbers: plainly fine rows, and
        rows whose only problem is a missing, null or blank label (`label_faults`, their findings already
        emitted)."""
        missing, null, blank = (label_faults[state] for state in (LabelState.MISSING, LabelState.NULL,
                                                                   LabelState.BLANK))
        rows = len(text_lengths) + len(chat_lengths)
        self.records += rows
        self.object_rows += rows
        if self.row_slice is None:
            counts = self.tally.counts
            counts[Verdict.USED] += rows - missing - null - blank
            for state in (LabelState.MISSING, LabelState.NULL, LabelState.BLANK):
                counts[_LABEL_STATE_VERDICTS[state]] += label_faults[state]
            self.tally.rows += rows
        for name, lengths in (("text", text_lengths), ("chat", chat_lengths)):
            if not lengths:
                continue
            self.formats[name] = self.formats.get(name, 0) + len(lengths)
            self.length_rows += len(lengths)
            self.length_sum += sum(lengths)
            self.length_max = max(self.length_max, max(lengths))
            low = min(lengths)
            self.length_min = low if self.length_min is None else min(self.length_min, low)
            for bin_index, count in Counter(map(int.bit_length, lengths)).items():
                self.length_bins[bin_index] += count
        if self.keys.label_key is not None:
            others = Counter(other_labels)
            others[str] += rows - len(other_labels) - missing - null
            others[MISSING.__class__] += missing
            others[type(None)] += null
            for label_class, count in others.items():
                if count:
                    name = _JSON_TYPE_NAMES.get(label_class, "other")
                    self.label_types[name] = self.label_types.get(name, 0) + count

    def _add_sample(self, row: Any, line: int, raw: bytes | None) -> None:
        text = raw.decode("utf-8", "replace") if raw is not None else orjson.dumps(
            row, default=str, option=orjson.OPT_NON_STR_KEYS).decode("utf-8", "replace")
        if len(text) > SAMPLE_CHARS:
            text = text[:SAMPLE_CHARS] + f"... ({len(text) - SAMPLE_CHARS} more characters)"
        self.summary.samples.append(SampleRow(line=line, text=text))

    # -- parts of one file ---------------------------------------------------------------------------
    def absorb(self, part: _RowJudge, lines_before: int) -> None:
        """Fold in what another judge found in the next part of the file (its lines numbered from 1, after
        `lines_before` lines), as if this judge had read that part itself: counts add up, the listed
        findings stay the first ones of each code in file order, the first rows and first lines are kept.

        Exact without a row slice or a tokenizer (their counts depend on order) and while no key is counted
        in `other_keys` (core/data/parallel.py checks both).
        """
        listed = {code: min(count, self.max_listed) for code, count in self.code_counts.items()}
        for finding in part.findings:
            count = listed.get(finding.code, 0)
            if count < self.max_listed:
                listed[finding.code] = count + 1
                self.findings.append(finding if finding.line is None else
                                     finding.model_copy(update={"line": finding.line + lines_before}))
        _add_counts(self.code_counts, part.code_counts)
        _add_counts(self.tally.counts, part.tally.counts)
        self.tally.rows += part.tally.rows
        self.lines_skipped += part.lines_skipped
        self.lines_skipped_unread += part.lines_skipped_unread
        self.records += part.records
        self.object_rows += part.object_rows
        _add_counts(self.key_shapes, part.key_shapes)
        _add_counts(self.key_counts, part.key_counts)
        _add_counts(self.label_types, part.label_types)
        _add_counts(self.formats, part.formats)
        self.length_bins = [mine + theirs for mine, theirs in zip(self.length_bins, part.length_bins, strict=True)]
        if part.length_min is not None:
            self.length_min = part.length_min if self.length_min is None else min(self.length_min, part.length_min)
        self.length_max = max(self.length_max, part.length_max)
        self.length_sum += part.length_sum
        self.length_rows += part.length_rows
        self.chat_without_template += part.chat_without_template
        if self.chat_without_template_line is None and part.chat_without_template_line is not None:
            self.chat_without_template_line = part.chat_without_template_line + lines_before
        if self.first_crlf_line is None and part.first_crlf_line is not None:
            self.first_crlf_line = part.first_crlf_line + lines_before
        if self.first_non_utf8 is None and part.first_non_utf8 is not None:
            problem, line = part.first_non_utf8
            self.first_non_utf8 = (problem, line + lines_before)
        self.non_utf8_lines += part.non_utf8_lines
        summary, theirs = self.summary, part.summary
        for sample in theirs.samples[:SAMPLE_ROWS - len(summary.samples)]:
            summary.samples.append(sample.model_copy(update={"line": sample.line + lines_before}))
        summary.other_keys += theirs.other_keys
        summary.lines += theirs.lines
        summary.blank_lines += theirs.blank_lines
        summary.crlf_lines += theirs.crlf_lines
        summary.bytes_read += theirs.bytes_read
        summary.complete = summary.complete and theirs.complete

    # -- summary ----------------------------------------------------------------------------------------
    def finish(self, started: float) -> DataReport:
        summary = self.summary
        if self.tokens is not None:
            self.tokens.finish(self.row_slice, self.tally.rows)
        counts = self.tally.finish()
        summary.rows = self.records
        summary.rows_used = counts[Verdict.USED] + counts[USED_WITH_WARNINGS]
        summary.rows_with_warnings = counts[USED_WITH_WARNINGS]
        summary.rows_crash = counts[Verdict.CRASH]
        summary.rows_unchecked = counts[Verdict.UNCHECKED]
        summary.rows_skipped = self.lines_skipped
        summary.rows_outside_slice = self.tally.outside + self.lines_skipped_unread
        summary.object_rows = self.object_rows
        for shape, count in self.key_shapes.items():
            self._add_keys(shape, count)
        summary.keys = dict(sorted(self.key_counts.items(), key=lambda kv: (-kv[1], kv[0])))
        summary.label_types = dict(sorted(self.label_types.items(), key=lambda kv: (-kv[1], kv[0])))
        summary.prompt_formats = dict(sorted(self.formats.items(), key=lambda kv: (-kv[1], kv[0])))
        text, chat = self.formats.get("text", 0), self.formats.get("chat", 0)
        summary.prompt_format = "mixed" if text and chat else "text" if text else "chat" if chat else "none"
        summary.prompt_chars = self._lengths()
        if self.chat_without_template:
            what = ("message lists" if not self.keys.multimodal_keys
                    else "turned into message lists by --multimodal-keys")
            self.emit(Problem("chat-without-template",
                              f"{self.chat_without_template} row(s) have prompts that are {what} (first at line "
                              f"{self.chat_without_template_line}) but --apply-chat-template is not set; slime's "
                              "default rollout hands the list to tokenizer.encode, which fails. Only a custom "
                              "rollout that reads message lists can use them."), self.chat_without_template_line)
            summary.flags_to_add.append("--apply-chat-template")
        if summary.crlf_lines:
            self.emit(Problem("crlf", f"{summary.crlf_lines} line(s) end in CRLF (first at line "
                                      f"{self.first_crlf_line}); slime reads them correctly."), self.first_crlf_line)
        if self.first_non_utf8 is not None:
            problem, line = self.first_non_utf8
            others = self.non_utf8_lines - 1
            if others:
                problem = problem._replace(detail=f"{problem.detail} {others} later line(s) also hold bytes that "
                                                  "are not UTF-8; slime stops at this first one.")
            self.stop_at_start(problem, line)
        # Whole-file verdicts on the keys and the row count describe the dataset slime builds; with bytes
        # that stop its UTF-8 read, it builds none and never reads the rows after them, so they are left out.
        dataset_is_built = self.first_non_utf8 is None
        for problem, flag in check_key_names(summary.keys, self.object_rows, self.keys) if dataset_is_built else ():
            self.emit(problem, None)
            if flag and flag not in summary.flags_to_add:
                summary.flags_to_add.append(flag)
        for problem in check_multimodal_config(self.keys):
            self.emit(problem, None)
        if summary.complete and dataset_is_built:
            count_problem = check_row_count(summary.rows_used, summary.rows_crash)
            if count_problem and count_problem.rule == "no-rows":
                if summary.stops_at_start is None and summary.lines:  # else an earlier stop says it
                    self.stop_at_start(count_problem, None)
            elif count_problem:
                self.emit(count_problem, None)
        if self.tokens is not None:
            self._token_verdicts()
        if self.row_slice is not None:
            shown = f"[{_bound(self.row_slice.start)}:{_bound(self.row_slice.stop)}]"
            summary.row_slice = shown
            self.emit(Problem("row-slice", f"slime reads only rows {shown} of the {self.tally.rows} rows: "
                                           f"{summary.rows_used + summary.rows_crash + summary.rows_unchecked} "
                                           f"row(s) counted in the summary, {summary.rows_outside_slice} "
                                           "left out."), None)
        summary.findings_by_code = dict(sorted(self.code_counts.items()))
        summary.omitted_by_code = {c: n - self.max_listed for c, n in sorted(self.code_counts.items())
                                   if n > self.max_listed}
        summary.would_fail = bool(summary.rows_skipped or summary.rows_crash or summary.stops_at_start
                                  or summary.dropped_for_length
                                  or any(f.severity is Severity.ERROR and RULES[f.code].verdict in
                                         (Verdict.CRASH, Verdict.SKIPPED) and f.line is None
                                         for f in self.findings))
        summary.seconds = round(time.perf_counter() - started, 3)
        return scrub_report(DataReport(findings=sort_and_dedupe(self.findings), summary=summary))

    def _token_verdicts(self) -> None:
        """The tokenizer step's results: rows dropped for length (taken out of rows_used), the skipped or
        failing length check, the prompt + response arithmetic, and the numbers of the summary."""
        tokens, summary, settings = self.tokens, self.summary, self.tokens.settings
        summary.tokenizer = tokens.info
        summary.length_settings = settings
        summary.prompt_limit = tokens.limit
        summary.context_length = tokens.context_length
        summary.prompt_tokens = tokens.stats()
        summary.token_histogram = tokens.histogram()
        summary.rendered_prompts = tokens.previews
        summary.longest_prompt_line = tokens.longest[1] if tokens.longest else None
        summary.length_check_skipped = tokens.length_check_skipped
        context = settings.rollout_max_context_len
        if settings.rollout_max_prompt_len is not None and context is not None \
                and settings.rollout_max_prompt_len > context - 1:
            self.stop_at_start(Problem("length-flags", f"--rollout-max-prompt-len {settings.rollout_max_prompt_len} "
                                                       f"is over --rollout-max-context-len - 1 ({context - 1}): "
                                                       "slime's argument check stops the run."), None,
                               whole_file=True)
        if tokens.mixed_line is not None:
            self.stop_at_start(Problem("length-check-fails", "This prompt is a message list while the first "
                                                             "prompt is a string: slime tokenizes all prompts in "
                                                             "one call for --rollout-max-prompt-len, and the list "
                                                             "makes that call fail."), tokens.mixed_line)
        if summary.length_check_skipped:
            self.emit(Problem("length-check-skipped", f"--rollout-max-prompt-len {tokens.limit} is not applied: "
                                                      "the first prompt is a message list (no "
                                                      "--apply-chat-template), so slime skips the length check "
                                                      "for the whole dataset."), None)
        for line, count in tokens.dropped:
            self.emit(Problem("prompt-too-long", f"This prompt is {count:,} tokens, over --rollout-max-prompt-len "
                                                 f"{tokens.limit:,}: slime drops the row."), line)
        self._count_more("prompt-too-long", tokens.dropped_count - len(tokens.dropped))
        for line, why in tokens.template_failures:
            self.emit(Problem("template-error", why), line)
        self._count_more("template-error", tokens.template_failure_count - len(tokens.template_failures))
        if tokens.not_rendered:
            why = (f"The tokenizer's worker could not be started again ({tokens.worker_failure[:200]})"
                   if tokens.worker_failure else f"The chat template was stopped {tokens.stops} times")
            self.emit(Problem("template-error", f"{why}, so the other {tokens.not_rendered:,} row(s) from line "
                                                f"{tokens.first_not_rendered} on were not rendered: their token "
                                                "counts and length checks are missing."), tokens.first_not_rendered)
        for line in tokens.unencodable:
            problem = Problem("length-check-fails", "The tokenizer cannot encode this prompt (it holds text that "
                                                    "is not valid Unicode, such as a lone surrogate): "
                                                    + ("slime's length filter fails at start-up."
                                                       if tokens.limit is not None and not tokens.first_is_list
                                                       else "the rollout that meets it fails."))
            if tokens.limit is not None and not tokens.first_is_list:
                self.stop_at_start(problem, line)
            else:
                self.emit(problem, line)
        self._count_more("length-check-fails", tokens.unencodable_count - len(tokens.unencodable))
        dropped = tokens.dropped_count
        summary.dropped_for_length = dropped
        summary.rows_used -= dropped + tokens.unencodable_count + tokens.failed_used
        summary.rows_crash += tokens.unencodable_count + tokens.failed_used
        summary.rows_with_warnings -= tokens.dropped_warned + tokens.failed_warned
        if tokens.media_rows and tokens.limit is not None:
            self.emit(Problem("media-length", f"{tokens.media_rows:,} row(s) carry media: slime measures them with "
                                              "the model's processor (media tokens included), which this check "
                                              "does not load, so their length was not judged; their text "
                                              "tokens are in the numbers."), None)
        if tokens.over_context:
            first_line, first_tokens = tokens.over_context[0]
            summary.rows_over_context = tokens.over_context_count
            self.emit(Problem("over-context", f"{tokens.over_context_count:,} prompt(s) plus "
                                              f"--rollout-max-response-len {settings.rollout_max_response_len:,} "
                                              f"exceed the model's context length {tokens.context_length:,} "
                                              f"(first at line {first_line}: {first_tokens:,} prompt tokens); "
                                              "SGLang refuses such requests unless it may truncate."), first_line)

    def _count_more(self, rule: str, more: int) -> None:
        """Rows of one finding beyond those kept (listed or not, they count in findings_by_code)."""
        if more > 0:
            code = CODE_BY_NAME[rule]
            self.code_counts[code] = self.code_counts.get(code, 0) + more

    def _lengths(self) -> PromptLengths:
        if not self.length_rows:
            return PromptLengths()
        bins = [HistogramBin(low=0 if b == 0 else 1 << (b - 1), high=0 if b == 0 else (1 << b) - 1, rows=n)
                for b, n in enumerate(self.length_bins) if n]
        return PromptLengths(rows=self.length_rows, min=self.length_min, max=self.length_max,
                             mean=round(self.length_sum / self.length_rows, 1), histogram=bins)


_CHAT_WITHOUT_TEMPLATE = Problem("chat-without-template", "")
_LABEL_STATE_VERDICTS: dict[LabelState, Tallied] = {  # what check_row's verdict makes of each label finding
    state: Verdict.CRASH if RULES[CODE_BY_NAME[rule]].verdict is Verdict.CRASH else USED_WITH_WARNINGS
    for state, rule in LABEL_STATE_RULES.items()}
_LABEL_STATE_TYPES = {LabelState.MISSING: "missing", LabelState.NULL: "null", LabelState.BLANK: "string"}
_JSON_TYPE_NAMES = {str: "string", int: "number", float: "number", bool: "boolean", list: "list", dict: "object",
                    type(None): "null", MISSING.__class__: "missing"}



def _add_counts(counts: dict, more: dict) -> None:
    for name, count in more.items():
        counts[name] = counts.get(name, 0) + count


def _bound(value: int | None) -> str:
    return "" if value is None else str(value)
