"""The GPU table: memory as the driver reports it and dense bf16/fp8 peaks, each cited to the vendor's page."""

from __future__ import annotations

import re
from functools import lru_cache

import yaml

from core.plan.models import GpuSpec, PlanError
from core.resources import knowledge_path

GPUS_YAML = knowledge_path("gpus.yaml")


@lru_cache(maxsize=1)
def load_gpus() -> tuple[GpuSpec, ...]:
    data = yaml.safe_load(GPUS_YAML.read_text(encoding="utf-8"))
    return tuple(GpuSpec.model_validate(g) for g in data["gpus"])


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", name.lower())


def find_gpu(name: str) -> GpuSpec:
    """The GPU named (its table name or an alias, in any case and spacing), else PlanError listing the names."""
    wanted = _key(str(name))
    for gpu in load_gpus():
        if wanted and wanted in {_key(gpu.name), *(_key(a) for a in gpu.aliases)}:
            return gpu
    names = ", ".join(g.name for g in load_gpus())
    raise PlanError(f"No GPU called {str(name)[:60]!r} in the table; known: {names}.")
