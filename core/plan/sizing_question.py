"""Whether a question asks how many GPUs a model needs (`sizing` answers it): a few patterns, apart from the
sizing arithmetic so that `ask` reads them without loading the planner for every other question."""

from __future__ import annotations

import re

MAX_QUESTION_CHARS = 500
_GPU_WORD = r"(?:gpus?|cards?|devices?|accelerators?|h100s?|h800s?|h200s?|h20s?|a100s?|b200s?|gb200s?|l40s|mi300x?s?|mi325x?s?)"
SIZING_PATTERNS = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\bhow\s+many\b[^?.!]{{0,40}}?{_GPU_WORD}",
    rf"{_GPU_WORD}[^?.!]{{0,30}}?\b(?:do|would|will|should)\s+(?:i|we|you)\s+need\b",
    rf"\b(?:minimum|min|fewest|least|enough)\b[^?.!]{{0,20}}?{_GPU_WORD}",
    rf"\bnumber\s+of\s+{_GPU_WORD}",
    r"(?:多少|几)\s*(?:张|块|个|台)?\s*(?:卡|gpu|显卡|h100|a100|h800|h200)",
))


def is_sizing_question(text: str) -> bool:
    """Whether the text asks how many GPUs a model needs (the rules above)."""
    return bool(text) and len(text) <= MAX_QUESTION_CHARS and any(p.search(text) for p in SIZING_PATTERNS)
