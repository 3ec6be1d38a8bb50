"""Whether a paste is PyTorch's CUDA out-of-memory message (`oom` reads its numbers): one cheap test, apart
from the reader so that `ask` loads the reader only for such a paste."""

from __future__ import annotations

import re

OOM_PATTERN = re.compile(r"CUDA out of memory|OutOfMemoryError", re.IGNORECASE)


def is_oom_paste(text: str) -> bool:
    """Whether the text holds PyTorch's CUDA out-of-memory wording (`CUDA out of memory` or
    `OutOfMemoryError`)."""
    return bool(text) and OOM_PATTERN.search(text) is not None
