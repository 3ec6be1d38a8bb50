"""How `ask` reads the words of a query before searching: what a word says about the question and what it only
says about where it was asked (an issue template's tag, the model and GPUs a run used, Ray's wrapper around the
real exception), and the words hidden in camel-cased error names. Each rule names the class of real questions it
was written for (tests/knowledge/test_question_and_paste_classes.py)."""

from __future__ import annotations

import re

# The tags GitHub issue templates put in a title (`[Bug]`, `[Question]`): they say what kind of thread it is, not
# what it is about, so they are not search words (the class: every pasted issue title carrying its template's tag).
ISSUE_TAG_RE = re.compile(r"\[(?:bug|question|feature(?: request)?|help wanted|docs?|rfc|discussion|suggestion|"
                          r"featuring)\]", re.I)
# Words that name where a run was (a model family or size, a GPU, a node layout), not what went wrong.
CONTEXT_WORD_RE = re.compile(r"(?:qwen|glm|deepseek|kimi|llama|mimo|minimax|ling|gpt|moonlight)\d*|\d+(?:\.\d+)?[bkm]|"
                             r"a\d+b|[abhl]\d{2,3}|b\d{3}|gb\d{3}|h\d{2,3}g?|\d+g|\d+x\d+|\d+")
# A wrapper exception naming the one it carries, as Ray prints it: `ray.exceptions.RayTaskError(KeyError)`.
WRAPPER_TYPE_RE = re.compile(r"\w+Error\(\w+\)$")
_CAMEL_RE = re.compile(r"\b[a-z]{3,}(?:[A-Z][a-z]+)+\b")


def camel_parts(text: str, max_chars: int = 20_000, max_names: int = 40) -> list[str]:
    """The words inside camel-cased names a user types for an error (`cudaError`, `ncclUnhandledCudaError`):
    our records spell them as words ("CUDA error"), so the parts join the search words (the class: a GPU
    error named by its CUDA or NCCL identifier rather than pasted with its message). Bounded: the first
    `max_chars` of the text, the first `max_names` names."""
    out: list[str] = []
    for name in _CAMEL_RE.findall(text[:max_chars])[:max_names]:
        out += [w.lower() for w in re.findall(r"[A-Z]?[a-z]+", name) if w.lower() not in out]
    return out
