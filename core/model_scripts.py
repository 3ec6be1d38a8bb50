"""Match a user's model name against the model scripts slime ships (scripts/models/*.sh)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

from core.pins import slime_source
from core.resources import knowledge_path

MODEL_SCRIPTS_JSON = knowledge_path("catalog", "model_scripts.json")


class ModelScript(BaseModel):
    name: str  # e.g. "qwen3-4B"
    path: str  # e.g. "scripts/models/qwen3-4B.sh"
    source: str
    model_args: list[str]  # the MODEL_ARGS words in order, as written
    values: dict[str, str | None]  # flag (without leading dashes, '-' kept) -> value (None for switches)


class ModelMatch(BaseModel):
    query: str
    status: str  # "exact", "family", "unknown"
    scripts: list[ModelScript]
    family: str | None
    message: str


@lru_cache(maxsize=4)
def load_model_scripts(path: Path = MODEL_SCRIPTS_JSON) -> tuple[ModelScript, ...]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return tuple(ModelScript.model_validate(s) for s in data["scripts"])


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


def family_of(name: str) -> str:
    """The family stem of a model name: 'Qwen3-4B' -> 'qwen3', 'glm4.5-355B-A32B' -> 'glm4.5'."""
    n = _norm(name)
    m = re.match(r"([a-z]+(?:-?v?\d+(?:\.\d+)?)?)", n)
    return (m.group(1) if m else n).replace("-", "")


def match_model(query: str, scripts: tuple[ModelScript, ...] | None = None) -> ModelMatch:
    """Find the model script for a name such as 'Qwen3-4B', 'Qwen/Qwen3-4B' or '/ckpt/Qwen3-4B-hf'."""
    scripts = load_model_scripts() if scripts is None else scripts
    base = query.strip().rstrip("/").split("/")[-1]
    n = _norm(base)
    by_norm = {_norm(s.name): s for s in scripts}
    if n in by_norm:
        s = by_norm[n]
        return ModelMatch(query=query, status="exact", scripts=[s], family=family_of(s.name),
                          message=f"slime ships a model script for this model: {s.path} ({s.source}).")
    # Longest script name that the query starts with (e.g. 'qwen3-4b-hf' -> 'qwen3-4b').
    prefixed = sorted((s for k, s in by_norm.items() if n.startswith(k + "-")), key=lambda s: -len(s.name))
    if prefixed:
        s = prefixed[0]
        return ModelMatch(query=query, status="exact", scripts=[s], family=family_of(s.name),
                          message=f"Closest model script: {s.path} ({s.source}); check the sizes match.")
    fam = family_of(base)
    same = [s for s in scripts if family_of(s.name) == fam]
    if same:
        names = ", ".join(s.name for s in same)
        return ModelMatch(query=query, status="family", scripts=same, family=fam,
                          message=(f"slime has scripts for the {fam} family ({names}) but none named like "
                                   f"'{base}'. Pick the one with your model's sizes, or write your own "
                                   "MODEL_ARGS from its config.json."))
    return ModelMatch(
        query=query, status="unknown", scripts=[], family=None,
        message=(f"'{base}' matches none of the {len(scripts)} model scripts slime ships "
                 f"({slime_source('scripts/models')}). slime can still train it if Megatron supports the "
                 "architecture, but you must write MODEL_ARGS yourself; this is outside what we can check."),
    )
