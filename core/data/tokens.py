"""The tokenizer step of the data check: render each prompt the way slime's Dataset does, count its tokens,
and find the rows slime drops for --rollout-max-prompt-len.

Facts from slime/utils/data.py at the pinned commit: each prompt is built as a message list when templating
(`_build_messages`, data.py:137-222), rendered with `tokenizer.apply_chat_template(prompt, tools=tools,
tokenize=False, add_generation_prompt=True, **apply_chat_template_kwargs)` (data.py:248-255), and, with a
prompt-length limit, every rendered prompt is tokenized with `tokenizer(prompts, add_special_tokens=False)`
and dropped when longer than the limit (`filter_long_prompt`, data.py:87-139). The rollout encodes the same
text with add_special_tokens=False too (slime/rollout/sglang_rollout.py:61).

The tokenizer is loaded with `transformers.AutoTokenizer` from a local directory only: never with
trust_remote_code (slime passes True; this app never runs a checkpoint's code), never from the network
(local_files_only and HF_HUB_OFFLINE). transformers is imported only here, and only when a tokenizer is
used, and only inside the tokenizer's worker process (core/data/tokenizer_worker.py), where every chat
template runs under a time, memory and output-size bound. Every file the tokenizer loads is first read
under the app's path rule (regular files, inside the configured roots, links not followed out) into a
private directory, and loaded from there. Token counts are streamed: prompts are rendered and tokenized in
batches bounded by characters as well as rows, and only a count per distinct length is kept, so memory
stays flat with the file size and with the length of each prompt.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field, field_validator

from core.data.rules import MULTIMODAL_TYPES, DataKeys, Problem
from core.data.tokenizer_worker import MAX_STOPS, Job, Result, TemplateLimits, TokenizerWorker, WorkerFailed
from core.paths import NotRegularFile, PathRefused, read_regular, read_within
from core.pins import sglang_source, slime_source

BATCH_ROWS = 2048
BATCH_CHARS = 2_000_000  # a batch is also cut at this many characters of prompt text: memory stays flat
MAX_KEPT = 1000  # rows kept per kind of token finding (dropped, stopped, ...); the rest are counted
PREVIEW_ROWS = 3
PREVIEW_CHARS = 4000
HISTOGRAM_BINS = 40
UNENCODABLE = -1  # the token count of a prompt the tokenizer refuses
MAX_KWARGS_CHARS = 10_000
MAX_UPLOAD_BYTES = 64 * 2**20
UPLOAD_NAMES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "tiktoken.model")
# Every file a tokenizer directory is read for (transformers' tokenizer loading); nothing else is copied.
LOADED_FILES = (*TOKENIZER_FILES, "special_tokens_map.json", "added_tokens.json", "chat_template.jinja",
                "chat_template.json", "config.json", "merges.txt", "vocab.txt", "spiece.model",
                "sentencepiece.bpe.model")
TEMPLATE_DIR = "additional_chat_templates"
MAX_TEMPLATE_FILES = 32
MAX_TOKENIZER_BYTES = 256 * 2**20  # all files together
# SGLang's order of preference for the model's context length in config.json (common.py:371-396).
CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")
CONTEXT_LENGTH_SOURCE = sglang_source("sglang/srt/utils/hf_transformers/common.py", 371)
PROMPT_DEFAULT_SOURCE = slime_source("slime/utils/arguments.py", 2027)


class TokenizerUnusable(ValueError):
    """The tokenizer cannot be used here; the message says why and what still works."""


class LengthSettings(BaseModel):
    """The launch flags that decide the token-length checks (all optional, as in slime)."""

    rollout_max_prompt_len: int | None = Field(default=None, ge=1)
    rollout_max_response_len: int | None = Field(default=None, ge=1)
    rollout_max_context_len: int | None = Field(default=None, ge=2)
    context_length: int | None = Field(default=None, ge=1, description="SGLang's --context-length, if set")
    apply_chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("apply_chat_template_kwargs", mode="before")
    @classmethod
    def _kwargs_ok(cls, v: Any) -> Any:
        if v is None or v == "":
            return {}
        if isinstance(v, str):
            if len(v) > MAX_KWARGS_CHARS:
                raise ValueError(f"--apply-chat-template-kwargs is over {MAX_KWARGS_CHARS:,} characters")
            try:
                v = json.loads(v)
            except (ValueError, RecursionError):
                raise ValueError('--apply-chat-template-kwargs must be a JSON object, e.g. '
                                 '\'{"enable_thinking": false}\'') from None
        if not isinstance(v, dict):
            raise ValueError('--apply-chat-template-kwargs must be a JSON object, e.g. {"enable_thinking": false}')
        reserved = sorted({"tools", "tokenize", "add_generation_prompt", "conversation"} & set(v))
        if reserved:
            raise ValueError(f"--apply-chat-template-kwargs sets {', '.join(reserved)}, which slime already "
                             "passes itself; apply_chat_template would fail with a duplicate argument")
        return v

    @property
    def prompt_limit(self) -> int | None:
        """The limit slime filters with: the flag, else --rollout-max-context-len - 1 (arguments.py:2027-2031)."""
        if self.rollout_max_prompt_len is not None:
            return self.rollout_max_prompt_len
        if self.rollout_max_context_len is not None:
            return self.rollout_max_context_len - 1
        return None

    def launch_flags(self) -> list[str]:
        flags = []
        for name in ("rollout_max_prompt_len", "rollout_max_response_len", "rollout_max_context_len"):
            value = getattr(self, name)
            if value is not None:
                flags.append(f"--{name.replace('_', '-')} {value}")
        if self.apply_chat_template_kwargs:
            flags.append("--apply-chat-template-kwargs '" + json.dumps(self.apply_chat_template_kwargs) + "'")
        return flags


class TokenizerInfo(BaseModel):
    """What was loaded (summary.tokenizer)."""

    path: str
    kind: str = ""
    vocab_size: int = 0
    chat_template: bool = False
    special_tokens: list[str] = Field(default_factory=list)
    context_length: int | None = None  # from config.json, SGLang's rule
    context_length_key: str | None = None
    template_file: str | None = None  # the file the chat template comes from


class TokenStats(BaseModel):
    """Prompt tokens over the rows slime uses (nearest-rank percentiles)."""

    min: int
    median: int
    p95: int
    max: int


class TokenBin(BaseModel):
    low: int
    high: int
    rows: int


class RenderedPrompt(BaseModel):
    line: int
    tokens: int
    text: str
    truncated: int = 0  # characters left out of the preview
    special_tokens: dict[str, int] = Field(default_factory=dict)


class LoadedTokenizer(NamedTuple):
    worker: TokenizerWorker  # the process holding the tokenizer; every template runs there
    info: TokenizerInfo


# ---------------------------------------------------------------- loading --------------------------------

def load_tokenizer(directory: str | os.PathLike[str], *, shown_name: str | None = None,
                   roots: list[Path] | None = None, limits: TemplateLimits | None = None) -> LoadedTokenizer:
    """Load a Hugging Face tokenizer from a local directory, offline and without remote code, in its own
    worker process.

    With `roots` (the page passes the configured roots), every file is read only when it is a regular file
    inside them, links not followed out; without (the command line), only regular files are read. The files
    are copied into a private directory first and the tokenizer is loaded from that copy. Raises
    TokenizerUnusable with a message for people when the directory is not a usable tokenizer.
    """
    import shutil
    import tempfile

    path = Path(directory)
    name = shown_name or str(directory)
    if not path.is_dir():
        raise TokenizerUnusable(f"{name} is not a directory; give the model's checkpoint or tokenizer directory "
                                "(the one --hf-checkpoint names).")
    present = [f for f in TOKENIZER_FILES if (path / f).is_file()]
    if not present:
        raise TokenizerUnusable(f"{name} holds no tokenizer files (tokenizer.json or tokenizer_config.json); "
                                "give the directory of the model's Hugging Face checkpoint.")
    private = Path(tempfile.mkdtemp(prefix="slime-assistant-tokenizer-"))
    try:
        copied = _copy_tokenizer_files(path, private, name, roots)
        for config_name in ("tokenizer_config.json", "config.json"):
            config = _read_json(private / config_name)
            auto_map = config.get("auto_map") if isinstance(config, dict) else None
            if isinstance(auto_map, dict) and any("Tokenizer" in str(k) for k in auto_map):
                raise TokenizerUnusable(
                    f"This tokenizer needs its own Python code ({config_name} names it in auto_map). slime loads "
                    "it with trust_remote_code=True; this app never runs code from a checkpoint, so token counts, "
                    "rendered prompts and length drops are not available for it. The row check still runs.")
        os.environ["HF_HUB_OFFLINE"] = "1"  # inherited by the worker's server when it starts
        worker = TokenizerWorker(private, limits or TemplateLimits(), PREVIEW_CHARS)  # owns `private` from here
        try:
            described = worker.start()
        except WorkerFailed as exc:
            raise TokenizerUnusable(f"{str(exc)[:1].upper()}{str(exc)[1:]}. The row check still runs, without "
                                    "token counts.") from None
        except ValueError as exc:
            raise TokenizerUnusable(_load_failure(exc)) from None
        config = _read_json(private / "config.json")
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    if not described.get("is_fast"):
        worker.close()
        raise TokenizerUnusable("Only a slow (Python) tokenizer could be built from these files; give the "
                                "directory with tokenizer.json so counts match slime's fast tokenizer.")
    context, context_key = _context_length(config if isinstance(config, dict) else {})
    template_file = next((f for f in ("chat_template.jinja", "chat_template.json") if f in copied),
                         "tokenizer_config.json")
    info = TokenizerInfo(path=name, kind=described["kind"], vocab_size=described["vocab_size"],
                         chat_template=described["chat_template"], special_tokens=described["special_tokens"],
                         context_length=context, context_length_key=context_key,
                         template_file=template_file if described["chat_template"] else None)
    return LoadedTokenizer(worker, info)


def _copy_tokenizer_files(source: Path, target: Path, name: str, roots: list[Path] | None) -> list[str]:
    """Copy the files a tokenizer is loaded from into `target`, each read under the path rule; the names
    copied. Raises TokenizerUnusable naming the first file that may not be read."""
    wanted = [f for f in LOADED_FILES if os.path.lexists(source / f)]
    templates = source / TEMPLATE_DIR
    if os.path.lexists(templates):
        try:
            if roots is not None:
                real = templates.resolve(strict=True)
                if not any(real == r or real.is_relative_to(r) for r in roots):
                    raise PathRefused(f"{TEMPLATE_DIR} leads outside the directories that may be read.")
            if templates.is_dir():
                wanted += sorted(f"{TEMPLATE_DIR}/{p.name}" for p in templates.iterdir()
                                 if p.name.endswith(".jinja"))[:MAX_TEMPLATE_FILES]
        except (OSError, RuntimeError, PathRefused):
            raise TokenizerUnusable(f"{name}/{TEMPLATE_DIR} leads outside the directories this app may read; "
                                    "the tokenizer was not loaded. The row check still runs.") from None
    total = 0
    for file_name in wanted:
        where = source / file_name
        try:
            data = (read_within(where, roots, limit=MAX_UPLOAD_BYTES) if roots is not None
                    else read_regular(where, MAX_UPLOAD_BYTES + 1))
        except PathRefused:
            raise TokenizerUnusable(f"{name}/{file_name} leads outside the directories this app may read (a "
                                    "link, or not a regular file); the tokenizer was not loaded. The row check "
                                    "still runs.") from None
        except NotRegularFile as exc:
            raise TokenizerUnusable(f"{name}/{file_name} is {exc.strerror}; the tokenizer was not loaded. The "
                                    "row check still runs.") from None
        except OSError as exc:
            raise TokenizerUnusable(f"{name}/{file_name} cannot be read ({exc.strerror or exc}); the tokenizer "
                                    "was not loaded. The row check still runs.") from None
        if len(data) > MAX_UPLOAD_BYTES:
            raise TokenizerUnusable(f"{name}/{file_name} is over {MAX_UPLOAD_BYTES // 2**20} MB; the tokenizer was "
                                    "not loaded. The row check still runs.")
        total += len(data)
        if total > MAX_TOKENIZER_BYTES:
            raise TokenizerUnusable(f"The tokenizer files in {name} are over {MAX_TOKENIZER_BYTES // 2**20} MB "
                                    "together; the tokenizer was not loaded. The row check still runs.")
        (target / file_name).parent.mkdir(exist_ok=True)
        (target / file_name).write_bytes(data)
    return wanted


def _load_failure(exc: Exception) -> str:
    text = str(exc)
    if "trust_remote_code" in text or "custom code" in text:
        return ("This tokenizer needs its own Python code, which this app never runs (slime loads it with "
                "trust_remote_code=True). The row check still runs, without token counts.")
    if "sentencepiece" in text or "tiktoken" in text or "protobuf" in text:
        return ("These files hold only a slow tokenizer that needs an extra library to convert (sentencepiece "
                "or tiktoken); give the directory with tokenizer.json. The row check still runs.")
    if "offline" in text.lower() or "connect" in text.lower() or "local_files_only" in text:
        return ("Loading this tokenizer would need a download, and this app never uses the network; give a "
                "directory with all its files. The row check still runs.")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return (f"transformers could not load a tokenizer from these files ({first[:300]}). The row check still "
            "runs, without token counts.")


def _read_json(path: Path) -> Any:
    try:
        if path.is_file() and path.stat().st_size <= 50 * 2**20:
            return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        pass
    return None


def _context_length(config: dict) -> tuple[int | None, str | None]:
    """The model's context length the way SGLang derives it from config.json (common.py:380-396)."""
    rope = config.get("rope_scaling")
    factor = 1.0
    if isinstance(rope, dict):
        factor = rope.get("factor", 1) if isinstance(rope.get("factor", 1), (int, float)) else 1
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        value = config.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(factor * value), key
    return None, None


# ---------------------------------------------------------------- rendering -------------------------------

class Rendered(NamedTuple):
    """One row's prompt as slime builds it, ready for the worker: the text itself (no template), or the
    prompt and tools the chat template renders; neither for a message list that reaches slime untemplated."""

    text: str | None
    is_list: bool = False  # a message list that reaches slime untemplated
    has_media: bool = False
    prompt: Any = None  # with the template: what apply_chat_template is given
    tools: list | None = None
    chars: int = 0  # characters of the row's own text (batch size, and the bound on the template's output)

    @property
    def counted(self) -> bool:
        return self.text is not None or self.prompt is not None


def build_prompt(row: dict, keys: DataKeys) -> tuple[Any, bool]:
    """slime's `_build_messages` (data.py:137-222): the prompt string, or the message list (with media
    placeholders split into parts when --multimodal-keys is set). Returns (prompt, has media items)."""
    prompt = row.get(keys.input_key)
    if isinstance(prompt, str):
        if not keys.as_conversation:
            return prompt, False
        prompt = [{"role": "user", "content": prompt}]
    if not keys.multimodal_keys or not isinstance(prompt, list):
        return prompt, False
    media: dict[str, tuple[str, list]] = {}
    for type_name, data_key in keys.multimodal_keys.items():
        placeholder = MULTIMODAL_TYPES.get(type_name)
        value = row.get(data_key)
        if placeholder and value is not None:
            media[placeholder] = (type_name, list(value))
    has_media = any(items for _, items in media.values())
    if not media:
        return prompt, False
    pattern = "(" + "|".join(re.escape(p) for p in media) + ")"
    messages = []
    for message in prompt:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            messages.append(message)
            continue
        parts = []
        for segment in re.split(pattern, content):
            if not segment:
                continue
            if segment in media:
                type_name, items = media[segment]
                item = items.pop(0)
                parts.append(item if isinstance(item, dict) else {"type": type_name, type_name: item})
            else:
                parts.append({"type": "text", "text": segment})
        messages.append({**message, "content": parts})
    return messages, has_media


def row_tools(row: dict, keys: DataKeys) -> list | None:
    """The tools slime passes to the template (data.py:239-245); None when the row has none."""
    if keys.tool_key is None or keys.tool_key not in row:
        return None
    tools = row[keys.tool_key]
    if isinstance(tools, str):
        tools = json.loads(tools)
    return tools


# ---------------------------------------------------------------- counting --------------------------------

class _Pending(NamedTuple):
    index: int  # the row's position among the rows slime reads (for the row slice)
    line: int
    rendered: Rendered
    used: bool
    warned: bool
    want_text: bool


class _Decided(NamedTuple):
    index: int
    line: int
    rendered: Rendered
    used: bool
    warned: bool
    result: Result | None  # None: not counted (an untemplated message list)


STOP_REASONS = {"time": "it ran for over {seconds:g} s", "memory": "it needed more than {memory_mb:,} MB of memory",
                "output": "its output passed {output_chars:,} characters plus twice the row's own text"}


class TokenCounter:
    """Sends rows to the tokenizer's worker in batches (bounded by rows and by characters) as they are
    judged, and decides, in row order, which rows slime drops for length (only rows inside the row slice
    count). Findings repeated on many rows keep their first MAX_KEPT rows and a count."""

    def __init__(self, loaded: LoadedTokenizer, keys: DataKeys, settings: LengthSettings) -> None:
        self.worker = loaded.worker
        self.info = loaded.info
        self.keys = keys
        self.settings = settings
        self.limit = settings.prompt_limit
        self.pending: list[_Pending] = []
        self.pending_chars = 0
        self.decided: deque[_Decided] = deque()
        self.length_counts: dict[int, int] = {}
        self.dropped: list[tuple[int, int]] = []  # (line, tokens), the first MAX_KEPT
        self.dropped_count = 0
        self.dropped_warned = 0
        self.first_is_list: bool | None = None
        self.mixed_line: int | None = None  # first message-list row after a string one (slime's filter fails)
        self.media_rows = 0
        self.previews: list[RenderedPrompt] = []
        self.over_context: list[tuple[int, int]] = []  # the first MAX_KEPT
        self.over_context_count = 0
        self.unencodable: list[int] = []  # lines whose rendered prompt the tokenizer refuses, the first MAX_KEPT
        self.unencodable_count = 0
        self.template_failures: list[tuple[int, str]] = []  # (line, why), the first MAX_KEPT
        self.template_failure_count = 0
        self.failed_used = 0  # rows counted as used by the judge whose template failed or was stopped
        self.failed_warned = 0
        self.stops = 0  # rows the worker's bounds stopped
        self.not_rendered = 0  # rows left unrendered after MAX_STOPS stops
        self.first_not_rendered: int | None = None
        self.worker_failure: str | None = None  # why the worker could not be started again, if so
        self.longest: tuple[int, int] | None = None  # (tokens, line)
        self._specials = [t for t in loaded.info.special_tokens if t]
        self.tally: Any = None  # the judge's row tally: which rows the row slice selects

    def render(self, row: dict) -> tuple[Rendered | None, Problem | None]:
        """The prompt as slime builds it, ready to be rendered and counted by the worker (the template's own
        failures come back with the batch)."""
        try:
            prompt, has_media = build_prompt(row, self.keys)
        except (IndexError, TypeError, AttributeError):
            return None, None  # media that do not match their placeholders: the multimodal rule reports it
        if not self.keys.apply_chat_template:
            if isinstance(prompt, str):
                return Rendered(prompt, chars=len(prompt)), None
            return Rendered(None, is_list=True, has_media=has_media), None
        try:
            tools = row_tools(row, self.keys)
        except (ValueError, RecursionError):
            return None, None  # the tools rule reports it
        if tools is not None and not isinstance(tools, list):
            return None, None
        return Rendered(None, has_media=has_media, prompt=prompt, tools=tools, chars=_text_chars(prompt)), None

    def add(self, index: int, line: int, rendered: Rendered, used: bool, warned: bool) -> None:
        want_text = used and (len(self.previews) < PREVIEW_ROWS)
        self.pending.append(_Pending(index, line, rendered, used, warned, want_text))
        self.pending_chars += rendered.chars
        if len(self.pending) >= BATCH_ROWS or self.pending_chars >= BATCH_CHARS:
            self.flush()
            if self.tally is not None:
                self.settle(self.tally.selected_early, self.tally.rows - self.tally.window_size)

    def flush(self) -> None:
        """Render and tokenize the pending prompts in the worker, one batch call, as slime's filter does."""
        if not self.pending:
            return
        counted = [p for p in self.pending if p.rendered.counted]
        jobs = [Job(p.rendered.prompt is not None, p.rendered.prompt if p.rendered.text is None else p.rendered.text,
                    p.rendered.tools, p.want_text, p.rendered.chars) for p in counted]
        results = iter(self._run(jobs))
        for p in self.pending:
            result = next(results) if p.rendered.counted else None
            self.decided.append(_Decided(p.index, p.line, p.rendered, p.used, p.warned, result))
        self.pending.clear()
        self.pending_chars = 0

    def _run(self, jobs: list[Job]) -> list[Result]:
        if not jobs:
            return []
        if self.stops >= MAX_STOPS:
            return [Result(None, stopped="skipped")] * len(jobs)
        try:
            results = self.worker.run(jobs, self.settings.apply_chat_template_kwargs, MAX_STOPS - self.stops)
        except (WorkerFailed, ValueError, OSError) as exc:
            self.stops = MAX_STOPS  # the worker cannot be started again: the rest is not rendered
            self.worker_failure = str(exc) or type(exc).__name__
            return [Result(None, stopped="skipped")] * len(jobs)
        self.stops += sum(1 for r in results if r.stopped not in (None, "skipped"))
        return results

    def settle(self, selected_early, window_start: int) -> None:
        """Decide every row whose place in the row slice is known (index below window_start)."""
        while self.decided and self.decided[0].index < window_start:
            row = self.decided.popleft()
            if selected_early(row.index):
                self._decide(row)

    def finish(self, row_slice: slice | None, total_rows: int) -> None:
        self.flush()
        if row_slice is None:
            selected = range(total_rows)
        else:
            lo, hi, _ = row_slice.indices(total_rows)
            selected = range(lo, hi)
        while self.decided:
            row = self.decided.popleft()
            if row.index in selected:
                self._decide(row)

    def _failed(self, row: _Decided, why: str) -> None:
        self.template_failure_count += 1
        if len(self.template_failures) < MAX_KEPT:
            self.template_failures.append((row.line, why))
        self.failed_used += row.used
        self.failed_warned += row.used and row.warned

    def stop_sentence(self, why: str) -> str:
        """Why the worker stopped a row, in words."""
        limits = self.worker.limits
        reason = STOP_REASONS.get(why, "the tokenizer's worker process stopped on it (out of memory in native "
                                       "code, or aborted)")
        where = self.info.template_file or "the chat template"
        return (f"The chat template ({where}) was stopped on this row: "
                + reason.format(seconds=limits.seconds, memory_mb=limits.memory_mb, output_chars=limits.output_chars)
                + ". slime would render it at start-up without a bound.")

    def _decide(self, row: _Decided) -> None:
        rendered, result = row.rendered, row.result
        if result is not None and result.stopped == "skipped":
            self.not_rendered += 1
            if self.first_not_rendered is None:
                self.first_not_rendered = row.line
            return
        if result is not None and result.problem is not None:
            self._failed(row, f"The chat template fails on this row: {result.problem}")
            return
        if result is not None and result.stopped is not None:
            self._failed(row, self.stop_sentence(result.stopped))
            return
        if self.first_is_list is None:
            self.first_is_list = rendered.is_list
        elif rendered.is_list and not self.first_is_list and self.mixed_line is None:
            self.mixed_line = row.line
        if not row.used or result is None or result.tokens is None:
            return
        if result.tokens == UNENCODABLE:
            self.unencodable_count += 1
            if len(self.unencodable) < MAX_KEPT:
                self.unencodable.append(row.line)
            self.dropped_warned += row.warned
            return
        tokens = result.tokens
        self.length_counts[tokens] = self.length_counts.get(tokens, 0) + 1
        if self.longest is None or tokens > self.longest[0]:
            self.longest = (tokens, row.line)
        if len(self.previews) < PREVIEW_ROWS and result.head is not None:
            self.previews.append(self._preview(row.line, tokens, result.head, result.length))
        if rendered.has_media:
            self.media_rows += 1
            return
        if self.limit is not None and not self.first_is_list and tokens > self.limit:
            self.dropped_count += 1
            if len(self.dropped) < MAX_KEPT:
                self.dropped.append((row.line, tokens))
            self.dropped_warned += row.warned
            return
        context = self.context_length
        response = self.settings.rollout_max_response_len
        if context is not None and response is not None and tokens + response > context:
            self.over_context_count += 1
            if len(self.over_context) < MAX_KEPT:
                self.over_context.append((row.line, tokens))

    @property
    def context_length(self) -> int | None:
        return self.settings.context_length or self.info.context_length

    @property
    def length_check_skipped(self) -> bool:
        return self.limit is not None and bool(self.first_is_list)

    def _preview(self, line: int, tokens: int, head: str, length: int) -> RenderedPrompt:
        shown = head[:PREVIEW_CHARS]
        specials = {t: shown.count(t) for t in self._specials if t in shown}
        return RenderedPrompt(line=line, tokens=tokens, text=shown, truncated=max(0, length - len(shown)),
                              special_tokens=specials)

    def stats(self) -> TokenStats | None:
        if not self.length_counts:
            return None
        values = sorted(self.length_counts.items())
        total = sum(n for _, n in values)
        return TokenStats(min=values[0][0], median=_nearest_rank(values, total, 50),
                          p95=_nearest_rank(values, total, 95), max=values[-1][0])

    def histogram(self) -> list[TokenBin]:
        if not self.length_counts:
            return []
        low, high = min(self.length_counts), max(self.length_counts)
        width = max(1, -(-(high - low + 1) // HISTOGRAM_BINS))
        bins: dict[int, int] = {}
        for tokens, n in self.length_counts.items():
            start = low + (tokens - low) // width * width
            bins[start] = bins.get(start, 0) + n
        return [TokenBin(low=start, high=start + width - 1, rows=n) for start, n in sorted(bins.items())]


def _text_chars(prompt: Any) -> int:
    """Characters of text in a prompt (a string, or the string contents of its messages and parts)."""
    if isinstance(prompt, str):
        return len(prompt)
    total = 0
    if isinstance(prompt, list):
        for message in prompt:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                total += len(content)
            elif isinstance(content, list):
                total += sum(len(part.get("text") or "") for part in content
                             if isinstance(part, dict) and isinstance(part.get("text"), str))
    return total


def _nearest_rank(values: list[tuple[int, int]], total: int, percent: int) -> int:
    """The smallest length such that at least `percent`% of rows are no longer (nearest-rank method)."""
    rank = max(1, -(-percent * total // 100))
    seen = 0
    for value, n in values:
        seen += n
        if seen >= rank:
            return value
    return values[-1][0]


def tokenizer_from_files(files: dict[str, bytes], *, shown_name: str = "uploaded tokenizer files") -> LoadedTokenizer:
    """Load a tokenizer from uploaded files (only the names in UPLOAD_NAMES), through a private temporary
    directory that is removed once the tokenizer is in memory."""
    import tempfile

    unknown = sorted(set(files) - set(UPLOAD_NAMES))
    if unknown:
        raise TokenizerUnusable(f"Only {', '.join(UPLOAD_NAMES)} are read; remove {', '.join(unknown[:5])}.")
    if "tokenizer.json" not in files:
        raise TokenizerUnusable("Upload tokenizer.json (with tokenizer_config.json for the chat template).")
    if any(len(data) > MAX_UPLOAD_BYTES for data in files.values()):
        raise TokenizerUnusable(f"A tokenizer file is over {MAX_UPLOAD_BYTES // 2**20} MB.")
    with tempfile.TemporaryDirectory(prefix="slime-assistant-tokenizer-") as directory:
        for name, data in files.items():
            (Path(directory) / name).write_bytes(data)
        return load_tokenizer(directory, shown_name=shown_name)
