"""The numbers in PyTorch's CUDA out-of-memory message, judged in words.

Rules:
- Read: the request ("Tried to allocate X"), the GPU's total capacity, what is free, what this process holds
  ("this process has P memory in use"), what PyTorch allocated and what it reserved but left unallocated, and
  what other processes hold ("Process N has X memory in use"); also the older wording "(GPU 0; T total
  capacity; A already allocated; F free; R reserved in total by PyTorch)". Linear regexes over at most
  MAX_TEXT_CHARS (the end of the paste, where the final exception is); the last occurrence of each wording wins.
- A size that is not finite, is over MAX_BYTES, or contradicts the others (free or in use over the capacity,
  allocated plus reserved over what is in use) is not used: a judgment needing it is not made (nothing rather
  than a wrong number).
- Judged: the request against the GPU; fragmentation when PyTorch's reserved-but-unallocated memory is at least
  the request (expandable segments); memory this process holds outside PyTorch's allocator, and memory other
  processes hold (a colocated SGLang engine); in the log-prob path with a known model, the request as tokens of
  fp32 logits (bytes / (4 x vocab / TP), TP 1 unless the paste says) with --log-probs-chunk-size and
  --max-tokens-per-gpu.
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel

from core.pins import megatron_source, slime_source

MAX_TEXT_CHARS = 200_000
MAX_BYTES = 64 * 2**40  # 64 TiB: no GPU or request is larger; a bigger figure is a misread
GIB = 2**30
_UNITS = {"bytes": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = r"(?<![\d.\-])(\d{1,24}(?:\.\d{1,12})?(?:e\+?\d{1,3})?)\s{0,3}(TiB|GiB|MiB|KiB|bytes|B)\b"
_PATTERNS = {
    "request": re.compile(r"Tried to allocate " + _SIZE, re.IGNORECASE),
    "total": re.compile(r"GPU \d{1,4} has a total capacity of " + _SIZE, re.IGNORECASE),
    "free": re.compile(r"of which " + _SIZE + r" is free", re.IGNORECASE),
    "in_use": re.compile(r"this process has " + _SIZE + r" memory in use", re.IGNORECASE),
    "allocated": re.compile(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch", re.IGNORECASE),
    "unallocated": re.compile(r"and " + _SIZE + r" is reserved by PyTorch but unallocated", re.IGNORECASE),
    "old_total": re.compile(r"\(GPU \d{1,4}; " + _SIZE + r" total capacity", re.IGNORECASE),
    "old_allocated": re.compile(_SIZE + r" already allocated", re.IGNORECASE),
    "old_free": re.compile(_SIZE + r" free;", re.IGNORECASE),
    "old_reserved": re.compile(_SIZE + r" reserved in total by PyTorch", re.IGNORECASE),
}
_OTHER_PROCESS = re.compile(r"Process \d{1,10} has " + _SIZE + r" memory in use", re.IGNORECASE)
_FRAME = re.compile(r'File "([^"\n]{1,500})", line (\d{1,9}), in ([A-Za-z_<>][\w<>]{0,200})')
_TP = re.compile(r"tensor[-_]model[-_]parallel[-_]size\W{1,3}(\d{1,4})\b", re.IGNORECASE)
LOGIT_FUNCTIONS = ("get_log_probs_and_entropy", "calculate_log_probs_and_entropy",
                   "_calculate_log_probs_and_entropy_chunk", "compute_log_prob")
LOSS_PATH = "slime/backends/megatron_utils/loss.py"
GPU_SLACK = 1.02  # the driver's total over what torch reports as capacity: about 0.7% on H100 and A100


class OomNumbers(BaseModel):
    """The sizes read from the message, in bytes (None: not in the paste, or not believable)."""

    wording: str  # "current" or "older"
    request: float | None = None
    total: float | None = None
    free: float | None = None
    in_use: float | None = None
    allocated: float | None = None
    unallocated: float | None = None  # reserved by PyTorch but unallocated
    other_processes: float | None = None


class OomReading(BaseModel):
    """What the numbers say, each line a finding in words with its numbers and sources."""

    numbers: OomNumbers
    lines: list[str]
    gpu: str | None = None  # the GPU table's name matched from the capacity (or given)
    gpu_from: str | None = None
    model: str | None = None
    tokens: int | None = None  # the request as tokens of fp32 logits (the log-prob path, a known model)
    plan_hint: str


def _bytes(match: re.Match[str] | None) -> float | None:
    if match is None:
        return None
    try:
        value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) and 0 <= value <= MAX_BYTES else None


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = None
    for found in pattern.finditer(text):  # noqa: B007 - the last occurrence is the one kept
        pass
    return found


def read_oom_numbers(text: str) -> OomNumbers | None:
    """The sizes of the last CUDA out-of-memory message in the text (see the module's rules), or None when it
    carries no request and no capacity."""
    text = (text or "")[-MAX_TEXT_CHARS:]
    got = {key: _bytes(_last(p, text)) for key, p in _PATTERNS.items()}
    older = got["total"] is None and got["old_total"] is not None
    n = OomNumbers(wording="older" if older else "current", request=got["request"])
    if older:
        n.total, n.free, n.allocated = got["old_total"], got["old_free"], got["old_allocated"]
        if got["old_reserved"] is not None and n.allocated is not None and got["old_reserved"] >= n.allocated:
            n.unallocated = got["old_reserved"] - n.allocated
    else:
        n.total, n.free, n.in_use = got["total"], got["free"], got["in_use"]
        n.allocated, n.unallocated = got["allocated"], got["unallocated"]
        others = [_bytes(m) for m in _OTHER_PROCESS.finditer(text[-20_000:])]
        if others and all(o is not None for o in others):
            n.other_processes = sum(o for o in others if o is not None)
    if n.request is None and n.total is None:
        return None
    return _consistent(n)


def _consistent(n: OomNumbers) -> OomNumbers:
    """Drop sizes that contradict the capacity or each other (1% and 64 MiB of rounding allowed)."""
    def over(a: float | None, b: float | None) -> bool:
        return a is not None and b is not None and a > b * 1.01 + 64 * 2**20

    if n.total is not None:
        for key in ("free", "in_use", "allocated", "unallocated", "other_processes"):
            if over(getattr(n, key), n.total):
                setattr(n, key, None)
    if n.allocated is not None and n.unallocated is not None and over(n.allocated + n.unallocated, n.in_use):
        n.allocated = n.unallocated = None
    return n


def gib(value: float) -> str:
    """A size as people read it: MiB under 1 GiB, GiB with two decimals under 10 GiB, one above."""
    g = value / GIB
    if g < 1:
        return f"{value / 2**20:,.0f} MiB"
    return f"{g:.2f} GiB" if g < 10 else f"{g:,.1f} GiB"


def _gpu_for(total: float | None) -> list[str]:
    """The GPU table's names whose memory is the capacity torch reports (a little under the driver's total)."""
    if total is None or total <= 0:
        return []
    from core.plan.gpus import load_gpus

    return [g.name for g in load_gpus() if total <= g.memory_mib * 2**20 <= total * GPU_SLACK]


def _table_name(gpu: str | None) -> str | None:
    """The GPU table's name for a GPU named in any spelling or alias, None when the table lacks it."""
    if not gpu:
        return None
    from core.plan.gpus import find_gpu
    from core.plan.models import PlanError

    try:
        return find_gpu(gpu).name
    except PlanError:
        return None


def _model_in(text: str) -> tuple[str, int, str, int] | None:
    """The longest slime model script named in the text: (name, vocab size, source), or None."""
    from core.model_scripts import load_model_scripts

    low = text.lower()
    best = None
    for s in load_model_scripts():
        name = s.name.lower()
        if name in low and re.search(r"(?<![a-z0-9.])" + re.escape(name) + r"(?![0-9])", low):
            if best is None or len(name) > len(best.name):
                best = s
    return _vocab_of(best) if best is not None else None


def _vocab_of(script) -> tuple[str, int, str, int] | None:  # noqa: ANN001 - a ModelScript
    """(name, vocab size, source, --make-vocab-size-divisible-by) of a model script, None without a vocab."""
    raw = script.values.get("vocab-size")
    if raw is None or not str(raw).isdigit() or not 0 < int(raw) < 10**8:
        return None
    div = str(script.values.get("make-vocab-size-divisible-by") or "128")
    return script.name, int(raw), script.source, int(div) if div.isdigit() and 0 < int(div) < 10**5 else 128


def _named_model(name: str | None) -> tuple[str, int, str, int] | None:
    if not name:
        return None
    from core.model_scripts import match_model

    found = match_model(name)
    return _vocab_of(found.scripts[0]) if found.status == "exact" else None


def _padded_note(padded: int) -> str:
    """How the vocabulary was padded: Megatron's `_vocab_size_with_padding` rounds it up to a multiple of the
    script's divisor times TP."""
    return (f", padded to {padded:,} by Megatron's _vocab_size_with_padding "
            f"({megatron_source('megatron/training/tokenizer/tokenizer.py', 110)})")


def _in_logits_path(text: str) -> str | None:
    """The innermost frame in slime's log-prob path (`path:line in function`), or None."""
    found = None
    for m in _FRAME.finditer(text[-50_000:]):
        path, line, function = m.group(1), m.group(2), m.group(3)
        if function in LOGIT_FUNCTIONS or path.replace("\\", "/").endswith(LOSS_PATH):
            found = f"{path.split('/slime/', 1)[-1] if '/slime/' in path else path}:{line} in {function}"
    return found


def judge_oom(text: str, model: str | None = None, gpu: str | None = None) -> OomReading | None:
    """The numbers of the paste's CUDA out-of-memory message judged in words (the module's rules); `model` and
    `gpu` are the profile's, used when the paste names neither. None when the paste carries no such numbers."""
    text = (text or "")[-MAX_TEXT_CHARS:]
    n = read_oom_numbers(text)
    if n is None:
        return None
    lines: list[str] = []
    req, total = n.request, n.total
    if req is not None and total:
        share = req / total
        lines.append(f"The failed request is {gib(req)}, {share:.0%} of the GPU's {gib(total)}."
                     + (" It is more than the whole GPU: no allocator setting helps; the step itself must hold "
                        "fewer tokens." if share > 1 else ""))
    elif req is not None:
        lines.append(f"The failed request is {gib(req)}.")
    if n.free is not None and req is not None and total:
        lines.append(f"{gib(n.free)} was free when it failed.")
    if req is not None and n.unallocated is not None and n.unallocated >= req > 0:
        lines.append(
            f"Fragmentation explains it: PyTorch held {gib(n.unallocated)} reserved but unallocated, more than "
            f"the {gib(req)} asked, yet no free block was large enough. Start the run with "
            "SLIME_ENABLE_EXPANDABLE_SEGMENTS=1 (slime's train actor then sets expandable_segments:True, "
            f"{slime_source('slime/utils/accelerator/torch_accelerator.py', 93)}, "
            f"{slime_source('slime/ray/train_actor.py', 57)}), or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.")
    elif n.unallocated is not None and req is not None and n.unallocated > 0:
        lines.append(f"PyTorch held {gib(n.unallocated)} reserved but unallocated, less than the request: "
                     "fragmentation alone does not explain it.")
    fragmented = req is not None and n.unallocated is not None and n.unallocated >= req > 0
    if not fragmented and n.allocated is not None and total and n.allocated >= total / 2:
        lines.append(
            f"PyTorch's own tensors take {gib(n.allocated)} ({n.allocated / total:.0%} of the GPU): the step needs "
            "more than is left. Fewer tokens per micro-batch (--max-tokens-per-gpu, "
            f"{slime_source('slime/utils/arguments.py', 758)}) or more model parallelism make it smaller.")
    if n.in_use is not None and n.allocated is not None and n.unallocated is not None:
        outside = n.in_use - n.allocated - n.unallocated
        if outside >= 4 * GIB:
            lines.append(
                f"This process holds {gib(outside)} outside PyTorch's allocator (in use {gib(n.in_use)} minus "
                f"{gib(n.allocated + n.unallocated)} PyTorch reserved): more than a CUDA context and NCCL buffers "
                "usually take; look for memory another library allocates in this process (an SGLang engine, "
                "CUDA graphs, NCCL).")
    others = n.other_processes
    if others is None and total is not None and n.free is not None and n.in_use is not None:
        rest = total - n.free - n.in_use
        others = rest if rest >= 2 * GIB else None
    if others is not None and others >= 2 * GIB and total:
        lines.append(
            f"Other processes hold {gib(others)} of this GPU ({others / total:.0%}): when colocated, that is usually "
            "the SGLang engine still holding its share while training runs. --offload-rollout "
            f"({slime_source('slime/utils/arguments.py', 94)}) frees it during training; "
            "--sglang-mem-fraction-static (the share SGLang takes, passed to the engine at "
            f"{slime_source('slime/backends/sglang_utils/sglang_engine.py', 641)}) makes it smaller.")
    tokens, model_name = None, None
    frame = _in_logits_path(text)
    if frame is not None and req is not None and req > 0:
        shape = _model_in(text) or _named_model(model)
        if shape is not None:
            from core.plan.shape import padded_vocab

            model_name, vocab, source, divisible = shape
            tp_m = _TP.search(text)
            tp = int(tp_m.group(1)) if tp_m and 0 < int(tp_m.group(1)) <= 1024 else 1
            padded = padded_vocab(vocab, divisible, tp)
            per_token = 4 * padded / tp
            tokens = int(req // per_token)
            if tokens >= 1:
                chunk = max(256, 2 ** int(math.log2(max(1, GIB // per_token))))
                cap = max(1024, (tokens // 2) // 1024 * 1024)
                lines.append(
                    f"It failed in the log-prob path ({frame}): {gib(req)} is about {tokens:,} tokens of fp32 "
                    f"logits for {model_name} (vocab {vocab:,} from {source}"
                    + (_padded_note(padded) if padded != vocab else "")
                    + f"; TP {tp}{' read from your paste' if tp_m and tp > 1 else ' assumed'}, so "
                    f"{padded // tp:,} logits a token on this GPU). --log-probs-chunk-size "
                    f"{chunk} computes log-probs {chunk} tokens at a time, about {gib(chunk * per_token)} of logits "
                    f"each ({slime_source('slime/backends/megatron_utils/loss.py', 548)}, "
                    f"{slime_source('slime/utils/arguments.py', 244)}); --max-tokens-per-gpu (for example {cap}, "
                    f"{slime_source('slime/utils/arguments.py', 758)}) bounds the tokens of a micro-batch.")
            else:
                tokens = None
    names = _gpu_for(total)
    if names:
        own = _table_name(gpu)
        gpu_name = own if own in names else names[0]  # the profile's GPU when the capacity fits it
        gpu_from = "the capacity in your paste fits " + (
            f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0])
    else:
        gpu_name, gpu_from = (gpu, "your profile's GPU") if gpu else (None, None)
    hint = (f"`slime-assistant plan YOUR_SCRIPT.sh --gpu {gpu_name or '<GPU>'}` gives the per-GPU terms of your "
            "launch script.")
    if not lines:
        return None
    return OomReading(numbers=n, lines=lines, gpu=gpu_name, gpu_from=gpu_from, model=model_name, tokens=tokens,
                      plan_hint=hint)


def oom_text(reading: OomReading) -> str:
    """The reading as a short text block (the CLI's, and the page's info box)."""
    out = ["The numbers in your paste:"]
    out += [f"  {line}" for line in reading.lines]
    out.append(f"  {reading.plan_hint}" + (f" ({reading.gpu}: {reading.gpu_from}.)" if reading.gpu else ""))
    return "\n".join(out)
