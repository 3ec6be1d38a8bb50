"""A pasted traceback or log read the way an engineer reads it.

First the per-run noise goes (ANSI colour codes, Ray's `(RayTrainActor pid=..., ip=...)` prefixes and
`[repeated 3x across cluster]` tails, `[rank0]:` prefixes, timestamps, `pid=`/`ip=` values, node and
object ids, a logger's `file.py:12 - ` decoration); then the final exception (type and message) is found, with the earlier ones of a "During
handling of the above exception" or "direct cause" chain kept behind it (each distinct message once); the
frames say which layer raised it (slime, Megatron-LM, SGLang, or a third-party library such as Ray or
PyTorch). IP addresses and ports go too. Pasted text is data: it is only read with bounded regexes, never run or rendered as HTML.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

MAX_PASTE_CHARS = 200_000
MAX_LINE_CHARS = 4_000  # a line is cut here before any pattern reads it (a message or a frame is far shorter)
MAX_BLANK_RUN = 2  # runs of empty lines (a progress bar's carriage returns) shrink to this many
MAX_MESSAGE_LINES = 6
MAX_MESSAGE_CHARS = 2_000
MAX_CODE_CHARS = 300
MAX_EXCEPTIONS = 50  # the last ones of a paste; a log can repeat one error thousands of times

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]{0,20}[A-Za-z]|\x1b\][^\x07\n]{0,200}\x07")
# "(MegatronTrainRayActor pid=123, ip=10.0.0.1)", "(pid=123)", "(raylet, ip=...)" at the start of a line.
_RAY_PREFIX_RE = re.compile(r"^\s*(?:\((?:[\w.:\-]{1,80}\s*)?(?:,?\s*(?:pid|ip|node_id|rank)=[\w.:\-]{1,80}){1,4}\)\s*)+")
_RAY_TAIL_RE = re.compile(r"\[repeated \d{1,9}x across cluster\]")  # the spaces before it go with rstrip
# C0 control characters but tab and newline, and DEL: a paste's NULs and terminal controls are not text.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")
_RANK_PREFIX_RE = re.compile(r"^\s*\[(?:rank|RANK)\s?\d{1,6}\]\s*:?\s*")
_TIMESTAMP_RE = re.compile(r"\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]?")
_CLOCK_RE = re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?\b")
_KV_NOISE_RE = re.compile(r"\b(pid|ip|node_id|worker_id|actor_id|task_id|job_id)=[\w.:\-]{1,120}")
_HEX_ID_RE = re.compile(r"\b[0-9a-f]{24,}\b")
_ADDRESS_RE = re.compile(r"\b0x[0-9a-fA-F]{6,16}\b")
# A logger's decoration before the message: `[time prefix] file.py:12 - `, `INFO file.py:12 - ` (slime's format,
# slime/observability/logging_utils.py) and the like; what follows is the message as the code wrote it.
_LOGGER_PREFIX_RE = re.compile(r"^\s*(?:\[[^\]\n]{0,120}\]\s*)?(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b"
                               r"[:\s]*)?[\w.\-]{1,120}\.py:\d{1,6}\s*-\s+")
_IP_RE = re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?::\d{1,5})?\b")

_FRAME_RE = re.compile(r'^\s*File "([^"\n]{1,1000})", line (\d{1,7})(?:, in ([^\n]{1,200}))?')
_EXC_RE = re.compile(r"^\s*(?P<type>(?:[A-Za-z_][\w]{0,80}\.){0,8}[A-Za-z_]\w{0,80}"
                     r"(?:Error|Exception|Exit|Interrupt|Warning|Failure|Timeout)(?:\([\w.]{1,120}\))?)"
                     r"(?:\s*:\s?(?P<msg>.*))?$")
_CHAIN_RE = re.compile(r"^\s*(During handling of the above exception|The above exception was the direct cause)")

LAYER_MARKERS = (  # (directory in a frame's path, layer), first hit from the file name backwards wins
    ("slime", "slime"), ("slime_plugins", "slime"), ("megatron", "megatron"), ("sglang", "sglang"),
    ("sglang_router", "sglang"), ("ray", "Ray"), ("torch", "PyTorch"), ("transformers", "Hugging Face"),
    ("datasets", "Hugging Face"), ("numpy", "numpy"), ("transformer_engine", "Transformer Engine"),
    ("flash_attn", "flash-attn"), ("apex", "apex"), ("vllm", "vLLM"))
OWN_LAYERS = ("slime", "megatron", "sglang")


class Frame(BaseModel):
    path: str
    line: int
    function: str | None = None
    layer: str = Field(description="slime | megatron | sglang | a third-party library | python")
    code: str | None = Field(default=None, description="the source line the traceback shows under the frame")


class RaisedError(BaseModel):
    type: str | None = Field(default=None, description="the exception class as pasted, e.g. AssertionError")
    message: str = ""

    @property
    def short_type(self) -> str | None:
        """The class name without its module, and Ray's wrapper unwrapped: RayTaskError(ValueError) -> ValueError."""
        if not self.type:
            return None
        inner = re.search(r"\(([\w.]+)\)$", self.type)
        return (inner.group(1) if inner else self.type).rsplit(".", 1)[-1]


class ReadPaste(BaseModel):
    """What a pasted error says once the noise is gone."""

    cleaned: str
    final: RaisedError | None = Field(default=None, description="the last exception: what the run died of")
    earlier: list[RaisedError] = Field(default_factory=list, description="the rest of its chain, latest first")
    frames: list[Frame] = Field(default_factory=list, description="innermost first")
    is_traceback: bool = False

    @property
    def layer(self) -> str | None:
        """The layer that raised it: the innermost frame in slime, Megatron-LM or SGLang, else the innermost
        frame's library."""
        own = next((f.layer for f in self.frames if f.layer in OWN_LAYERS), None)
        return own or (self.frames[0].layer if self.frames else None)

    @property
    def messages(self) -> list[RaisedError]:
        return ([self.final] if self.final else []) + self.earlier


def strip_noise(text: str) -> str:
    """The paste without what differs from run to run (the words and numbers of the message stay); of a
    paste longer than MAX_PASTE_CHARS the end is kept, where the final exception is. Each line is cut at
    MAX_LINE_CHARS before any pattern reads it, and every pattern here is linear in the line's length."""
    lines: list[str] = []
    blank = 0
    text = _ANSI_RE.sub("", text[-MAX_PASTE_CHARS:]).replace("\r\n", "\n").replace("\r", "\n")
    for line in _CONTROL_RE.sub("", text).split("\n"):
        if not line.strip():
            blank += 1
            if blank <= MAX_BLANK_RUN:
                lines.append("")
            continue
        blank = 0
        line = line[:MAX_LINE_CHARS].rstrip()
        line = _CLOCK_RE.sub("", _TIMESTAMP_RE.sub("", line))
        line = _RAY_PREFIX_RE.sub("", _RANK_PREFIX_RE.sub("", line))
        line = _LOGGER_PREFIX_RE.sub("", _RAY_TAIL_RE.sub("", line))
        line = _KV_NOISE_RE.sub(r"\1=…", line)
        line = _HEX_ID_RE.sub("…", line)
        line = _IP_RE.sub("…", _ADDRESS_RE.sub("0x…", line))
        lines.append(line.rstrip())
    return "\n".join(lines)


def frame_layer(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    for part in reversed(parts[:-1]):
        for marker, layer in LAYER_MARKERS:
            if part == marker or (marker == "megatron" and part.lower() in ("megatron-lm", "megatron_lm")):
                return layer
    return "python"


def _code_under(lines: list[str], i: int) -> str | None:
    """The source line Python prints under a frame (indented, not another frame or a `^^^` marker)."""
    if i + 1 >= len(lines):
        return None
    code = lines[i + 1]
    if not code.startswith((" ", "\t")) or _FRAME_RE.match(code) or not code.strip() or set(code.strip()) <= {"^", "~"}:
        return None
    return code.strip()[:MAX_CODE_CHARS]


def _message_after(lines: list[str], start: int, first: str) -> str:
    """An exception's message: its own line and the continuation lines under it (a multi-line message)."""
    parts = [first.strip()] if first.strip() else []
    for line in lines[start + 1:start + 1 + MAX_MESSAGE_LINES]:
        if not line.strip() or _FRAME_RE.match(line) or _EXC_RE.match(line) or _CHAIN_RE.match(line) \
                or line.lstrip().startswith("Traceback (most recent call last)"):
            break
        parts.append(line.strip())
    return " ".join(" ".join(parts).split())[:MAX_MESSAGE_CHARS]


def read_paste(text: str) -> ReadPaste:
    """Read a pasted error line, log or traceback (see the module's docstring)."""
    cleaned = strip_noise(text or "")
    lines = cleaned.split("\n")
    frames: list[Frame] = []
    raised: list[RaisedError] = []
    for i, line in enumerate(lines):
        fm = _FRAME_RE.match(line)
        if fm:
            frames.append(Frame(path=fm.group(1), line=int(fm.group(2)), function=fm.group(3),
                                layer=frame_layer(fm.group(1)), code=_code_under(lines, i)))
            continue
        em = _EXC_RE.match(line)
        if em:
            raised.append(RaisedError(type=em.group("type"), message=_message_after(lines, i, em.group("msg") or "")))
    is_traceback = bool(frames) or any("Traceback (most recent call last)" in line for line in lines)
    if not raised:
        rest = [line.strip() for line in lines if line.strip() and not _FRAME_RE.match(line)
                and "Traceback (most recent call last)" not in line]
        if rest:
            raised.append(RaisedError(type=None, message=" ".join(rest[-1].split())[:MAX_MESSAGE_CHARS]))
    distinct: list[RaisedError] = []
    for r in reversed(raised[-MAX_EXCEPTIONS:]):  # latest first; a chain repeats the same error many times
        if not any(d.message == r.message and d.short_type == r.short_type for d in distinct):
            distinct.append(r)
    final = _final(distinct)
    return ReadPaste(cleaned=cleaned, final=final, earlier=[d for d in distinct if d is not final],
                     frames=list(reversed(frames)), is_traceback=is_traceback)


def _final(distinct: list[RaisedError]) -> RaisedError | None:
    """The latest exception with a message worth matching (Ray's `RayTaskError(X): ray::Actor.method()`
    header carries only where it ran; the real message follows it)."""
    for r in distinct:
        if r.message and not r.message.startswith("ray::"):
            return r
    return distinct[0] if distinct else None
