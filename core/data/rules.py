"""The rules slime's prompt-data loader applies to each row, one validator per rule, and the keys it reads.

Every rule is stated once here (code, severity, what slime does with the row, where the rule comes from);
the streaming reader in core/data/scan.py only finds the rows and calls these validators.
Facts are from slime/utils/data.py and slime/utils/arguments.py at the pinned commit.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from enum import Enum, IntEnum
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from pydantic import BaseModel, Field, ValidationError, field_validator

from core.findings import Severity
from core.pins import sglang_source, slime_source

DATA_PY = "slime/utils/data.py"
ARGS_PY = "slime/utils/arguments.py"

ACCEPTED_SUFFIXES = (".jsonl", ".parquet")
KNOWN_ROLES = frozenset({"system", "user", "assistant", "tool"})
MULTIMODAL_TYPES = {"image": "<image>", "video": "<video>", "audio": "<audio>"}  # slime/utils/types.py:468-471
FEW_ROWS = 8
MAX_KEY_CHARS = 200
MAX_MULTIMODAL_CHARS = 10_000

# Key names people commonly use, to suggest the flag when the configured key is absent from every row.
PROMPT_KEY_GUESSES = ("prompt", "input", "question", "problem", "messages", "query", "instruction", "text",
                      "conversations")
LABEL_KEY_GUESSES = ("label", "answer", "solution", "ground_truth", "reference", "target", "output")
TOOL_KEY_GUESSES = ("tools", "functions", "tool_specs")
METADATA_KEY_GUESSES = ("metadata", "meta", "extra_info", "info")


class Verdict(str, Enum):
    """What slime does with a line or row."""

    USED = "used"
    SKIPPED = "skipped"  # printed and dropped; the run goes on with fewer rows
    CRASH = "crash"  # an exception stops the run (at start-up, or at the first rollout that meets the row)
    UNCHECKED = "unchecked"  # this checker could not read it (over the line-size cap)


class Rule(BaseModel):
    """One check: its stable code, how bad it is, what slime does with the row, and the source."""

    code: str
    name: str
    severity: Severity
    verdict: Verdict | None = Field(default=None, description="what slime does with the row; None: still used")
    source: str
    fix: str


def _rule(code: str, name: str, severity: Severity, verdict: Verdict | None, source: str, fix: str) -> Rule:
    return Rule(code=code, name=name, severity=severity, verdict=verdict, source=source, fix=fix)


ERR, WARN, NOTE = Severity.ERROR, Severity.WARNING, Severity.INFO
RULES: dict[str, Rule] = {r.code: r for r in (
    _rule("DATA001", "invalid-json", ERR, Verdict.SKIPPED, slime_source(DATA_PY, 39),
          "Repair or remove the line: slime prints a decode error and drops it, so the run has fewer rows."),
    _rule("DATA002", "not-an-object", ERR, Verdict.CRASH, slime_source(DATA_PY, 143),
          "Each line must be one JSON object ({...}); slime calls .get on it and stops with AttributeError."),
    _rule("DATA003", "prompt-missing", ERR, Verdict.CRASH, slime_source(DATA_PY, 143),
          "Give every row the prompt key, or point --input-key at the key your rows use."),
    _rule("DATA004", "prompt-type", ERR, Verdict.CRASH, slime_source(DATA_PY, 145),
          "A prompt is a string, or a list of {role, content} messages (with --apply-chat-template)."),
    _rule("DATA005", "empty-text", WARN, None, slime_source(DATA_PY, 145),
          "Fill in or drop the row: slime keeps it and generates from an empty prompt."),
    _rule("DATA006", "label-missing", ERR, Verdict.CRASH, slime_source(DATA_PY, 272),
          "Add the label to every row, or change --label-key: slime reads it with data[key] and stops with "
          "KeyError."),
    _rule("DATA007", "label-empty", WARN, None, slime_source(DATA_PY, 272),
          "Give the row a label: slime keeps it with an empty or null label, which reward functions "
          "usually score as wrong."),
    _rule("DATA008", "message-shape", WARN, None, slime_source(DATA_PY, 249),
          "Each message must be an object with 'role' and 'content'; chat templates silently drop or "
          "mis-render other shapes."),
    _rule("DATA009", "unknown-role", WARN, None, slime_source(DATA_PY, 249),
          "Use system, user, assistant or tool; most chat templates ignore other roles."),
    _rule("DATA010", "chat-without-template", ERR, Verdict.CRASH, slime_source("slime/rollout/sglang_rollout.py", 61),
          "Add --apply-chat-template, or turn the messages into a string prompt."),
    _rule("DATA011", "tools-type", ERR, Verdict.CRASH, slime_source(DATA_PY, 239),
          "The tool key's value must be a list of tool schemas, or a string holding such a JSON list; "
          "remove the key from rows without tools."),
    _rule("DATA012", "metadata-type", ERR, Verdict.CRASH, slime_source(DATA_PY, 237),
          "Make the metadata value a JSON object ({...}), or rename the key so --metadata-key does not pick "
          "it up."),
    _rule("DATA013", "byte-order-mark", ERR, Verdict.SKIPPED, slime_source(DATA_PY, 34),
          "Save the file as UTF-8 without a BOM: Python's json rejects the BOM, so slime drops that line."),
    _rule("DATA014", "crlf", NOTE, None, slime_source(DATA_PY, 34),
          "Nothing to do for slime (it reads in text mode and strips lines); other tools may differ."),
    _rule("DATA015", "lone-cr", WARN, None, slime_source(DATA_PY, 34),
          "Remove the carriage return: slime reads in universal-newline mode, where a lone \\r ends the line."),
    _rule("DATA016", "non-utf8", ERR, Verdict.CRASH, slime_source(DATA_PY, 34),
          "Re-encode the file as UTF-8: slime opens it with encoding='utf-8' and stops with "
          "UnicodeDecodeError."),
    _rule("DATA017", "duplicate-key", WARN, None, slime_source(DATA_PY, 40),
          "Keep one copy of the key: Python's json keeps the last value and drops the others silently."),
    _rule("DATA018", "nan-literal", WARN, None, slime_source(DATA_PY, 40),
          "Replace NaN/Infinity with null or a number: Python's json accepts them as floats, strict JSON "
          "tools do not."),
    _rule("DATA019", "truncated-last-line", ERR, Verdict.SKIPPED, slime_source(DATA_PY, 39),
          "The file ends in the middle of a row (was the copy cut short?). Copy it again, or drop the line."),
    _rule("DATA020", "few-rows", NOTE, None, slime_source("slime/rollout/data_source.py", 99),
          "If this is the whole dataset, slime will cycle these rows epoch after epoch."),
    _rule("DATA021", "extension", ERR, Verdict.CRASH, slime_source(DATA_PY, 59),
          "Name the file .jsonl (one JSON object per line) or .parquet; slime refuses any other ending."),
    _rule("DATA022", "json-array", ERR, Verdict.SKIPPED, slime_source(DATA_PY, 39),
          "Convert the array to JSON Lines: one object per line, no surrounding [ ] or commas."),
    _rule("DATA023", "empty-file", ERR, Verdict.CRASH, slime_source("slime/ray/placement_group.py", 244),
          "Give the file rows: with an empty dataset slime stops at start-up under --num-epoch or a "
          "prompt-length limit, and under --num-rollout without a limit its first rollout never finishes."),
    _rule("DATA024", "binary", ERR, Verdict.CRASH, slime_source(DATA_PY, 34),
          "This is not a text JSONL file (archive, compressed or binary). Unpack or convert it first."),
    _rule("DATA025", "line-too-long", WARN, Verdict.UNCHECKED, slime_source(DATA_PY, 35),
          "This checker does not parse lines this long; slime reads them whole. Check that row another way."),
    _rule("DATA026", "int-too-long", ERR, Verdict.CRASH, slime_source(DATA_PY, 40),
          "Write the number as a string: Python refuses to convert integers over 4300 digits (ValueError, "
          "which slime does not catch)."),
    _rule("DATA027", "too-deep", ERR, Verdict.CRASH, slime_source(DATA_PY, 40),
          "Flatten the row: Python's json raises RecursionError on deep nesting, which slime does not catch."),
    _rule("DATA028", "lone-surrogate", WARN, None, slime_source(DATA_PY, 40),
          "Fix the \\ud800-\\udfff escape: Python keeps a lone surrogate that the tokenizer cannot encode."),
    _rule("DATA029", "input-key", ERR, Verdict.CRASH, slime_source(ARGS_PY, 659),
          "Pass the flag shown so slime reads the key your rows have."),
    _rule("DATA030", "label-key", WARN, None, slime_source(ARGS_PY, 660),
          "Pass the flag shown, or the reward function gets label None."),
    _rule("DATA031", "other-key", NOTE, None, slime_source(ARGS_PY, 669),
          "Pass the flag shown if that key is what you mean."),
    _rule("DATA032", "multimodal", ERR, Verdict.CRASH, slime_source(DATA_PY, 172),
          "Make the number of <image>/<video>/<audio> placeholders in the messages equal the number of items "
          "in the row's media list."),
    _rule("DATA033", "multimodal-config", WARN, None, slime_source(DATA_PY, 156),
          "Use image, video or audio as the --multimodal-keys types; slime ignores other names."),
    _rule("DATA034", "read-error", ERR, None, slime_source(DATA_PY, 34),
          "The file could not be read to the end; check it again when it is stable."),
    _rule("DATA035", "file-changed", WARN, None, slime_source(DATA_PY, 34),
          "The file changed size while it was read; check it again when nothing is writing to it."),
    _rule("DATA036", "parquet-unavailable", ERR, Verdict.UNCHECKED, slime_source(DATA_PY, 48),
          "Install pyarrow (pip install pyarrow): slime needs it for .parquet too."),
    _rule("DATA037", "parquet-unreadable", ERR, Verdict.CRASH, slime_source(DATA_PY, 52),
          "pyarrow cannot read this file as parquet; rewrite it, or use JSONL."),
    _rule("DATA038", "row-slice", NOTE, None, slime_source(DATA_PY, 62),
          "Only the sliced rows count for this run; problems elsewhere still matter for other runs."),
    _rule("DATA039", "no-rows", ERR, Verdict.CRASH, slime_source("slime/ray/placement_group.py", 244),
          "Fix the problems above so that rows reach slime's dataset."),
    _rule("DATA040", "tools-items", WARN, None, slime_source(DATA_PY, 249),
          "Each tool should be an object (a function schema) for the chat template."),
    _rule("DATA041", "metadata-tools", NOTE, None, slime_source(DATA_PY, 246),
          "slime overwrites metadata['tools'] with the tool key's value; rename one of them if both matter."),
    _rule("DATA042", "template-error", ERR, Verdict.CRASH, slime_source(DATA_PY, 249),
          "Fix the row (or the template): slime renders every prompt at start-up and the template's "
          "exception stops the run."),
    _rule("DATA043", "prompt-too-long", WARN, Verdict.SKIPPED, slime_source(DATA_PY, 134),
          "Shorten the prompt or raise --rollout-max-prompt-len: slime drops the row at start-up and logs only "
          "a count."),
    _rule("DATA044", "length-check-skipped", NOTE, None, slime_source(DATA_PY, 91),
          "Add --apply-chat-template if you want slime to filter long prompts: with message-list prompts it "
          "skips the check."),
    _rule("DATA045", "length-check-fails", ERR, Verdict.CRASH, slime_source(DATA_PY, 130),
          "Make every prompt text the tokenizer accepts: slime's length filter tokenizes all prompts in one call, "
          "so one message list among strings, or one lone surrogate, makes it fail."),
    _rule("DATA046", "over-context", WARN, None, sglang_source("sglang/srt/managers/tokenizer_manager.py", 975),
          "Lower --rollout-max-response-len or --rollout-max-prompt-len so that prompt plus response fit the "
          "context length, or let SGLang truncate (--sglang-allow-auto-truncate)."),
    _rule("DATA047", "length-flags", ERR, Verdict.CRASH, slime_source(ARGS_PY, 2033),
          "Make --rollout-max-prompt-len at most --rollout-max-context-len - 1."),
    _rule("DATA048", "tokenizer-unusable", WARN, Verdict.UNCHECKED, slime_source("slime/rollout/data_source.py", 62),
          "Give the directory of the model's Hugging Face checkpoint (tokenizer.json, tokenizer_config.json)."),
    _rule("DATA049", "media-length", NOTE, None, slime_source(DATA_PY, 97),
          "Rows with media are measured by slime with the model's processor (media tokens included); check "
          "their length with the processor."),
)}
CODE_BY_NAME = {r.name: r.code for r in RULES.values()}


class Problem(NamedTuple):
    """One rule broken at one place: the rule's name and the specific detail."""

    rule: str  # a Rule.name
    detail: str
    column: int | None = None


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class LabelState(IntEnum):
    """What the label rule finds in one row's label value (check_label words it; the reader counts by it)."""

    GIVEN = 0  # a value slime passes on as is
    MISSING = 1  # no label key: label-missing, KeyError at start-up
    NULL = 2  # label-empty: kept, the reward function gets None
    BLANK = 3  # label-empty: kept, the reward function gets an empty string


_GIVEN, _MISSING, _NULL, _BLANK = LabelState  # an enum's members, read as attributes, are slow on every row
LABEL_STATE_RULES: dict[LabelState, str] = {LabelState.MISSING: "label-missing", LabelState.NULL: "label-empty",
                                            LabelState.BLANK: "label-empty"}


class DataKeys(BaseModel):
    """The launch settings that decide how slime reads each row (slime's defaults)."""

    input_key: str = "input"
    label_key: str | None = None
    tool_key: str | None = "tools"
    metadata_key: str = "metadata"
    apply_chat_template: bool = False
    multimodal_keys: dict[str, str] | None = None

    @field_validator("input_key", "metadata_key")
    @classmethod
    def _key_ok(cls, v: str) -> str:
        if not v or len(v) > MAX_KEY_CHARS or any(c in v for c in "\n\r\0"):
            raise ValueError(f"a key must be 1-{MAX_KEY_CHARS} characters on one line")
        return v

    @field_validator("label_key", "tool_key")
    @classmethod
    def _optional_key_ok(cls, v: str | None) -> str | None:
        if v is None or v == "":
            return None
        return cls._key_ok(v)

    @field_validator("multimodal_keys", mode="before")
    @classmethod
    def _multimodal_ok(cls, v: Any) -> Any:
        if v is None or v == "" or v == {}:
            return None
        if isinstance(v, str):
            if len(v) > MAX_MULTIMODAL_CHARS:
                raise ValueError(f"--multimodal-keys is over {MAX_MULTIMODAL_CHARS:,} characters; it maps a few "
                                 'media types to row keys, e.g. {"image": "images"}')
            try:
                v = json.loads(v)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--multimodal-keys must be a JSON object such as "
                                 f'{{"image": "images"}}: {exc}') from None
            except (RecursionError, ValueError):
                raise ValueError('--multimodal-keys is nested too deeply to read; it must be a flat JSON object '
                                 'such as {"image": "images"}') from None
        if not isinstance(v, dict) or not all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
            raise ValueError('--multimodal-keys must map media types to row keys, e.g. {"image": "images"}')
        return v

    @property
    def as_conversation(self) -> bool:
        """slime turns string prompts into one user message when templating or when media keys are set."""
        return self.apply_chat_template or self.multimodal_keys is not None

    def launch_flags(self) -> list[str]:
        """The slime flags these settings amount to (only those that differ from slime's defaults)."""
        flags = []
        if self.input_key != "input":
            flags.append(f"--input-key {shlex.quote(self.input_key)}")
        if self.label_key is not None:
            flags.append(f"--label-key {shlex.quote(self.label_key)}")
        if self.tool_key != "tools" and self.tool_key is not None:
            flags.append(f"--tool-key {shlex.quote(self.tool_key)}")
        if self.metadata_key != "metadata":
            flags.append(f"--metadata-key {shlex.quote(self.metadata_key)}")
        if self.apply_chat_template:
            flags.append("--apply-chat-template")
        if self.multimodal_keys:
            flags.append(f"--multimodal-keys {shlex.quote(json.dumps(self.multimodal_keys))}")
        return flags


def settings_errors(exc: ValidationError) -> list[str]:
    """A settings validation error in words, one sentence per field, each naming the flag (no library text)."""
    out = []
    for error in exc.errors():
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        field = str(error.get("loc", ("",))[-1] if error.get("loc") else "")
        flag = "--" + field.replace("_", "-") if field else ""
        if error.get("type") in ("int_parsing", "greater_than_equal", "int_type"):
            message = "must be a whole number" + (f" of at least {error['ctx']['ge']}" if error.get("ctx", {}).get(
                "ge") is not None else "")
        out.append(message if not flag or message.startswith(flag) else f"{flag}: {message}")
    return out


_LAUNCH_NAMES = {
    "input_key": "input_key", "label_key": "label_key", "tool_key": "tool_key", "metadata_key": "metadata_key",
    "apply_chat_template": "apply_chat_template", "multimodal_keys": "multimodal_keys",
}


def keys_from_launch(settings: Mapping[str, Any] | None) -> DataKeys:
    """DataKeys from launch settings given as flags ('--input-key') or names ('input_key'); others ignored."""
    values: dict[str, Any] = {}
    for raw_name, value in (settings or {}).items():
        name = str(raw_name).lstrip("-").replace("-", "_")
        if name in _LAUNCH_NAMES:
            values[_LAUNCH_NAMES[name]] = value
    if "apply_chat_template" in values:
        flag = values["apply_chat_template"]
        values["apply_chat_template"] = flag if isinstance(flag, bool) else str(flag).lower() in ("1", "true", "")
    return DataKeys.model_validate(values)


# ---------------------------------------------------------------- file-level rules -------------------------

_MAGIC = (
    (b"PK\x03\x04", "a zip archive"), (b"PK\x05\x06", "an empty zip archive"), (b"\x1f\x8b", "gzip-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"), (b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"), (b"PAR1", "a parquet file"), (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"), (b"%PDF", "a PDF"), (b"SQLite format 3", "an SQLite database"),
    (b"\x93NUMPY", "a numpy array"), (b"\xff\xfe", "UTF-16 text"), (b"\xfe\xff", "UTF-16 text"),
)


def check_extension(name: str) -> Problem | None:
    """slime reads a path ending exactly in .jsonl or .parquet (case matters) and refuses any other.

    Source: slime/utils/data.py:31-60 (str.endswith, then ValueError 'Unsupported file format').
    A row slice suffix `@[start:end]` is removed first (data.py:77-84).
    """
    base = strip_row_slice(name)
    if base.endswith(ACCEPTED_SUFFIXES):
        return None
    suffix = PurePosixPath(base).suffix
    if suffix.lower() in ACCEPTED_SUFFIXES:
        return Problem("extension", f"The name ends in '{suffix}': slime compares the ending case-sensitively "
                                    f"and refuses it. Rename it to '{suffix.lower()}'.")
    shown = f"'{suffix}'" if suffix else "no extension"
    extra = " A .json file must also be converted to one object per line." if suffix.lower() == ".json" else ""
    return Problem("extension", f"The name has {shown}; slime reads only .jsonl or .parquet and stops with "
                                f"ValueError at start-up.{extra}")


def check_magic(head: bytes) -> Problem | None:
    """A JSONL file is UTF-8 text: archives, compressed, UTF-16 or other binary content cannot be read.

    Source: slime/utils/data.py:34 (text-mode open with encoding='utf-8': such bytes raise UnicodeDecodeError,
    or, for NUL bytes, every line fails to parse).
    """
    for magic, what in _MAGIC:
        if head.startswith(magic):
            hint = " Rename it to .parquet." if magic == b"PAR1" else ""
            return Problem("binary", f"This file is {what}, not JSON Lines.{hint}")
    if b"\x00" in head:
        return Problem("binary", "The file contains NUL bytes: it is binary, not JSON Lines text.")
    return None


class RowSliceError(ValueError):
    """A row slice slime cannot use: it stops at start-up (the message says why)."""


_ROW_SLICE = re.compile(r"^(?P<path>.*)@\[(?P<start>-?\d*):(?P<end>-?\d*)\]$")  # slime's, data.py:78
MAX_INT_DIGITS = 4300  # Python's default int-conversion limit (sys.get_int_max_str_digits), slime's too


def strip_row_slice(path: str) -> str:
    """The path without slime's `@[start:end]` suffix (the bounds are not read)."""
    m = _ROW_SLICE.match(path)
    return m.group("path") if m else path


def split_row_slice(path: str) -> tuple[str, slice | None]:
    """slime's `path@[start:end]` row slice: the real path and the slice (data.py:77-84).

    Raises RowSliceError for bounds slime cannot use: over 4,300 digits, int() raises ValueError
    (data.py:80-81); a non-negative bound over sys.maxsize makes itertools.islice raise ValueError
    (data.py:72).
    """
    m = _ROW_SLICE.match(path)
    if not m:
        return path, None
    bounds = []
    for group in ("start", "end"):
        text = m.group(group)
        if not text or text == "-":
            if text == "-":
                raise RowSliceError("The row slice bound '-' is not a number: slime stops at start-up with "
                                    "ValueError.")
            bounds.append(None)
            continue
        digits = len(text.lstrip("-"))
        if digits > MAX_INT_DIGITS:
            raise RowSliceError(f"A row slice bound has {digits:,} digits: Python refuses to read integers over "
                                f"{MAX_INT_DIGITS:,} digits, so slime stops at start-up with ValueError.")
        bounds.append(int(text))
    start, end = bounds
    streamed = (start or 0) >= 0 and (end or 0) >= 0  # slime's islice route (data.py:65-72)
    if streamed and any(b is not None and b > sys.maxsize for b in bounds):
        raise RowSliceError("A row slice bound is larger than slime's row reader accepts (itertools.islice "
                            f"allows at most {sys.maxsize:,}), so slime stops at start-up with ValueError.")
    return m.group("path"), slice(start, end)


# ---------------------------------------------------------------- row-level rules --------------------------

def check_row_is_object(row: Any) -> Problem | None:
    """Each line must hold a JSON object: slime calls `data.get(prompt_key)` on it (data.py:143)."""
    if isinstance(row, dict):
        return None
    kind = type(row).__name__ if row is not None else "null"
    hint = " (the whole file looks like one JSON array)" if isinstance(row, list) else ""
    return Problem("not-an-object", f"This line is valid JSON but a {_json_type(row) or kind}, not an object"
                                    f"{hint}; slime stops with AttributeError.")


def check_prompt(row: dict, keys: DataKeys) -> tuple[str, int, list[Problem]]:
    """The prompt is a non-empty string, or a list of messages (which needs --apply-chat-template).

    slime reads `data.get(--input-key)` (data.py:143): a missing or null prompt reaches the tokenizer as None
    (sglang_rollout.py:61, or apply_chat_template at data.py:249) and fails; a string is used as is
    (data.py:145-148) or wrapped as one user message when templating (data.py:149-150); any other value is
    passed through unchanged. Returns (format, prompt characters, problems); format is
    "text", "chat", "missing" or "other".
    """
    prompt = row.get(keys.input_key, MISSING)
    if prompt is MISSING or prompt is None:
        what = "is missing" if prompt is MISSING else "is null"
        return "missing", 0, [Problem("prompt-missing", f"The prompt key '{keys.input_key}' {what} in this row; "
                                                        "slime would pass None to the tokenizer.")]
    if isinstance(prompt, str):
        problems = [] if not is_blank(prompt) else [Problem("empty-text", f"This row's prompt (key "
                                                                         f"'{keys.input_key}') is empty or only "
                                                                         "whitespace.")]
        return "text", len(prompt), problems
    if isinstance(prompt, list):
        problems = []
        if not prompt:
            problems.append(Problem("empty-text", f"This row's prompt (key '{keys.input_key}') is an empty "
                                                  "message list."))
        chars = 0
        for index, message in enumerate(prompt):
            chars += _content_chars(message)
            problems.extend(check_message(message, index, keys))
        return "chat", chars, problems
    return "other", 0, [Problem("prompt-type", f"This row's prompt (key '{keys.input_key}') is a "
                                               f"{_json_type(prompt)}; slime expects a string or a list of "
                                               "messages.")]


def is_blank(text: str) -> bool:
    """Empty or only whitespace (what str.strip() empties): the empty-text rule for prompts and message
    contents, and the label-empty rule for string labels."""
    return not text or text.isspace()


def plain_messages_chars(messages: list) -> int | None:
    """The prompt and message rules' cheap screen for a message list (with --apply-chat-template): the
    characters of its contents when check_prompt and check_message have nothing to say about it, else None.

    Plain: a non-empty list of objects, each with a known role and non-blank string content. Any other list
    (an empty one, a message of another shape, an unknown role, blank or non-string content) gets None, and
    check_prompt decides.
    """
    if not messages:
        return None
    chars = 0
    roles = KNOWN_ROLES
    for message in messages:
        if message.__class__ is not dict or message.get("role") not in roles:
            return None
        content = message.get("content")
        if content.__class__ is not str or is_blank(content):
            return None
        chars += len(content)
    return chars


def check_message(message: Any, index: int, keys: DataKeys) -> list[Problem]:
    """A chat message is an object with a known 'role' and a 'content' that is a string (or a list of parts).

    Chat templates read message['role'] and message['content'] (applied at data.py:249). With
    --multimodal-keys, slime indexes message['content'] itself (data.py:165) and raises ValueError for
    content that is neither a string nor a list (data.py:200-203).
    """
    where = f"Message {index}"
    if not isinstance(message, dict):
        return [Problem("message-shape", f"{where} is a {_json_type(message)}, not a {{role, content}} object.")]
    problems = []
    missing = [k for k in ("role", "content") if k not in message]
    if missing:
        if keys.multimodal_keys is not None and "content" in missing:
            problems.append(Problem("multimodal", f"{where} has no 'content': with --multimodal-keys slime reads "
                                                  "message['content'] and stops at start-up with KeyError."))
        else:
            problems.append(Problem("message-shape", f"{where} has no {' or '.join(repr(k) for k in missing)}."))
    role = message.get("role")
    if "role" in message and role not in KNOWN_ROLES:
        problems.append(Problem("unknown-role", f"{where} has role {_short(role)}; expected one of "
                                                f"{', '.join(sorted(KNOWN_ROLES))}."))
    content = message.get("content", MISSING)
    if content is MISSING:
        return problems
    if isinstance(content, str):
        if is_blank(content) and role != "assistant":
            problems.append(Problem("empty-text", f"{where} ({_short(role)}) has empty content."))
    elif isinstance(content, list):
        pass
    elif keys.multimodal_keys is not None:
        problems.append(Problem("multimodal", f"{where} content is a {_json_type(content)}; with "
                                              "--multimodal-keys slime raises ValueError."))
    elif content is not None or role != "assistant":
        problems.append(Problem("message-shape", f"{where} content is a {_json_type(content)}, not a string."))
    return problems


def check_label(row: dict, keys: DataKeys) -> Problem | None:
    """With --label-key set, every row needs that key: slime reads `data[label_key]` (data.py:272).

    A missing key raises KeyError during start-up; a null or empty label is kept and reaches the reward
    function as None or "".
    """
    if keys.label_key is None:
        return None
    state = label_state(row.get(keys.label_key, MISSING))
    if state is LabelState.GIVEN:
        return None
    if state is LabelState.MISSING:
        return Problem(LABEL_STATE_RULES[state], f"The label key '{keys.label_key}' is missing in this row.")
    return Problem(LABEL_STATE_RULES[state], f"This row's label (key '{keys.label_key}') is "
                                             f"{'null' if state is LabelState.NULL else 'empty'}.")


def label_state(label: Any) -> LabelState:
    """The label rule on one value (MISSING when the row has no label key): a missing key, a null, or a blank
    string (is_blank) is a finding; any other value is given to the reward function as is."""
    if label.__class__ is str:  # the common case first: the reader asks this on every row
        return _BLANK if is_blank(label) else _GIVEN
    if label is MISSING:
        return _MISSING
    if label is None:
        return _NULL
    return _BLANK if isinstance(label, str) and is_blank(label) else _GIVEN


def check_tools(row: dict, keys: DataKeys) -> list[Problem]:
    """Where a row has the tool key (default 'tools'), its value must be a list, or a JSON string of a list.

    slime json.loads a string value (an invalid string raises JSONDecodeError, uncaught), then asserts the
    result is a list (AssertionError otherwise, null included) - data.py:239-245 - whether or not
    --apply-chat-template is set.
    """
    if keys.tool_key is None or keys.tool_key not in row:
        return []
    tools = row[keys.tool_key]
    where = f"The tool key '{keys.tool_key}'"
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            return [Problem("tools-type", f"{where} holds a string that is not JSON ({exc}).")]
        if not isinstance(tools, list):
            return [Problem("tools-type", f"{where} holds a JSON string of a {_json_type(tools)}, not a list.")]
    elif not isinstance(tools, list):
        return [Problem("tools-type", f"{where} is a {_json_type(tools)}, not a list (remove the key when a "
                                      "row has no tools).")]
    bad = [i for i, t in enumerate(tools) if not isinstance(t, dict)]
    if bad:
        return [Problem("tools-items", f"{where}: item(s) {', '.join(map(str, bad[:5]))} are not objects.")]
    return []


def check_metadata(row: dict, keys: DataKeys) -> Problem | None:
    """The metadata key's value, when truthy, must be an object: slime uses `data.get(key) or {}` as
    Sample.metadata (data.py:237), writes metadata['tools'] into it (data.py:246) and later calls
    metadata.get(...) (data.py:336, from slime/ray/rollout.py:750). Falsy values become {}.
    """
    metadata = row.get(keys.metadata_key)
    if not metadata or isinstance(metadata, dict):
        if isinstance(metadata, dict) and keys.tool_key and keys.tool_key in row and "tools" in metadata:
            return Problem("metadata-tools", f"'{keys.metadata_key}' already has 'tools'; slime replaces it with "
                                             f"the value of '{keys.tool_key}'.")
        return None
    return Problem("metadata-type", f"The metadata key '{keys.metadata_key}' is a {_json_type(metadata)}, not an "
                                    "object; slime fails when it adds tools or reads metadata.get().")


def plain_metadata(metadata: Any) -> bool:
    """The metadata rule's cheap screen: no metadata (None) or a plain object passes check_metadata on a row
    without the tool key. Other values, falsy ones included, need check_metadata to decide."""
    return metadata is None or metadata.__class__ is dict


def check_multimodal(row: dict, keys: DataKeys) -> list[Problem]:
    """With --multimodal-keys, each placeholder (<image>, <video>, <audio>) in string message contents takes
    the next item of that type's list, and the counts must match exactly (assertions at data.py:172 and
    data.py:206). slime calls list() on the value (data.py:160): a string becomes a list of characters.
    """
    if not keys.multimodal_keys:
        return []
    prompt = row.get(keys.input_key)
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    if not isinstance(messages, list):
        return []
    problems = []
    for type_name, data_key in keys.multimodal_keys.items():
        placeholder = MULTIMODAL_TYPES.get(type_name)
        value = row.get(data_key)
        if placeholder is None or value is None:
            continue
        if isinstance(value, str):
            problems.append(Problem("multimodal", f"'{data_key}' is a string; slime turns it into a list of its "
                                                  f"{len(value)} characters. Use a list of {type_name}s."))
            continue
        if not isinstance(value, list):
            problems.append(Problem("multimodal", f"'{data_key}' is a {_json_type(value)}, not a list."))
            continue
        found = sum(m.get("content").count(placeholder) for m in messages
                    if isinstance(m, dict) and isinstance(m.get("content"), str))
        if found != len(value):
            problems.append(Problem("multimodal", f"{found} '{placeholder}' placeholder(s) in the messages but "
                                                  f"{len(value)} item(s) in '{data_key}'."))
    return problems


def check_multimodal_config(keys: DataKeys) -> list[Problem]:
    """--multimodal-keys types must be image, video or audio; slime skips other names
    (MultimodalTypes.get returns None: data.py:156-157, slime/utils/types.py:468-479)."""
    return [Problem("multimodal-config", f"--multimodal-keys type '{t}' is not image, video or audio; slime "
                                         "ignores it.")
            for t in (keys.multimodal_keys or {}) if t not in MULTIMODAL_TYPES]


# ---------------------------------------------------------------- whole-file rules -------------------------

def check_key_names(key_counts: Mapping[str, int], rows: int, keys: DataKeys) -> list[tuple[Problem, str | None]]:
    """The configured keys should be the ones the rows have; when a configured key appears in no row and a
    likely key does, say so with the exact flag (flags: slime/utils/arguments.py:659-678).

    Returns (problem, flag to add or None) pairs.
    """
    if not rows:
        return []
    out: list[tuple[Problem, str | None]] = []
    present = [k for k in key_counts if key_counts[k]]
    shown = ", ".join(f"'{k}'" for k in present[:8]) or "no keys"

    def guess(candidates: tuple[str, ...], exclude: set[str]) -> str | None:
        ranked = sorted((k for k in candidates if key_counts.get(k) and k not in exclude),
                        key=lambda k: (-key_counts[k], candidates.index(k)))
        return ranked[0] if ranked else None

    taken = {k for k in (keys.label_key, keys.tool_key, keys.metadata_key) if k}
    if not key_counts.get(keys.input_key):
        alt = guess(PROMPT_KEY_GUESSES, taken)
        flag = f"--input-key {shlex.quote(alt)}" if alt else None
        tail = f" unless you pass {flag}" if flag else "; pass --input-key with the key that holds the prompt"
        out.append((Problem("input-key", f"Your rows have {shown}; slime will read the prompt from "
                                         f"'{keys.input_key}'{tail}."), flag))
    if keys.label_key is None:
        alt = guess(LABEL_KEY_GUESSES, taken | {keys.input_key})
        if alt:
            flag = f"--label-key {shlex.quote(alt)}"
            out.append((Problem("label-key", f"Your rows have '{alt}' but no --label-key is set, so every "
                                             f"sample's label is None. Add {flag} if '{alt}' is the answer."),
                        flag))
    elif not key_counts.get(keys.label_key):
        alt = guess(LABEL_KEY_GUESSES, {keys.input_key})
        flag = f"--label-key {shlex.quote(alt)}" if alt else None
        out.append((Problem("label-missing", f"No row has the label key '{keys.label_key}' (rows have {shown})"
                                             + (f"; did you mean {flag}?" if flag else ".")), flag))
    if keys.tool_key is not None and not key_counts.get(keys.tool_key):
        alt = guess(TOOL_KEY_GUESSES, {keys.input_key, keys.label_key or ""})
        if alt:
            flag = f"--tool-key {shlex.quote(alt)}"
            out.append((Problem("other-key", f"Your rows have '{alt}' but slime reads tools from "
                                             f"'{keys.tool_key}'. Add {flag} if '{alt}' holds tool schemas."),
                        flag))
    if not key_counts.get(keys.metadata_key):
        alt = guess(METADATA_KEY_GUESSES, {keys.input_key, keys.label_key or "", keys.tool_key or ""})
        if alt:
            flag = f"--metadata-key {shlex.quote(alt)}"
            out.append((Problem("other-key", f"Your rows have '{alt}' but slime reads Sample.metadata from "
                                             f"'{keys.metadata_key}'. Add {flag} if '{alt}' is per-row metadata."),
                        flag))
    return out


EMPTY_DATASET = ("With an empty dataset slime stops at start-up under --num-epoch (no rollout to run: "
                 "slime/ray/placement_group.py:244) or a prompt-length limit (its filter reads the first prompt: "
                 "slime/utils/data.py:91); under --num-rollout without a limit the first rollout never finishes, "
                 "asking the empty data source for prompts again and again (slime/rollout/sglang_rollout.py:408-411,"
                 " slime/rollout/data_source.py:96-103).")


def check_row_count(used: int, crashed: int) -> Problem | None:
    """A dataset needs usable rows; a handful is fine for a sample but slime cycles a tiny dataset
    (slime/rollout/data_source.py:96-103 wraps to a new epoch when it runs out)."""
    if used + crashed == 0:
        return Problem("no-rows", "No row would reach slime's dataset. " + EMPTY_DATASET)
    if used + crashed < FEW_ROWS:
        return Problem("few-rows", f"Only {used + crashed} row(s). Fine for a sample; as a training set, slime "
                                   "would repeat them every rollout.")
    return None


# ---------------------------------------------------------------- helpers ----------------------------------

def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _content_chars(message: Any) -> int:
    if isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, str):
            return len(content)
        if isinstance(content, list):
            return sum(len(p.get("text", "")) for p in content if isinstance(p, dict) and
                       isinstance(p.get("text"), str))
    return 0


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
