"""Turn the first-visit answers into a validated profile, with messages a person can act on."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from core.memory.profile import Profile
from core.model_scripts import ModelMatch, match_model


class OnboardingResult(BaseModel):
    profile: Profile | None
    errors: dict[str, str]
    model_match: ModelMatch | None = None


_FIELD_LABEL = {"model": "Model", "data_path": "Data file", "gpus_total": "GPUs", "gpus_per_node": "GPUs per node",
                "name": "Profile name"}


def build_profile(name: str, model: str, data_path: str, gpus_total: object,
                  gpus_per_node: object | None = None) -> OnboardingResult:
    """Validate the answers; errors are keyed by field with a specific message each."""
    errors: dict[str, str] = {}
    gt = _as_int(gpus_total, "gpus_total", errors)
    gpn = None if gpus_per_node in (None, "", 0) else _as_int(gpus_per_node, "gpus_per_node", errors)
    for field, value in (("model", model), ("data_path", data_path)):
        if not str(value or "").strip():
            errors[field] = _EMPTY[field]
    if errors:
        return OnboardingResult(profile=None, errors=errors)
    try:
        profile = Profile(name=name or "default", model=model, data_path=data_path, gpus_total=gt,
                          gpus_per_node=gpn)
    except ValidationError as exc:
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "gpus_per_node"
            errors[field] = f"{_FIELD_LABEL.get(field, field)}: {_for_people(err)}"
        return OnboardingResult(profile=None, errors=errors)
    return OnboardingResult(profile=profile, errors={}, model_match=match_model(profile.model))


_EMPTY = {"model": "Model: empty; enter the name of the model you will train, for example Qwen3-4B.",
          "data_path": "Data file: empty; enter the path of your prompt data on the training machine, for "
                       "example /data/train.jsonl."}


def _for_people(err: dict) -> str:
    """A validation error in plain words: our own validators already speak plainly; pydantic's stock
    messages (lengths, ranges, types) are rewritten."""
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    if kind == "string_too_short":
        return "this cannot be empty"
    if kind == "string_too_long":
        return f"this is longer than the {ctx.get('max_length', 'allowed')} characters we keep"
    if kind in ("greater_than_equal", "greater_than"):
        return f"use at least {ctx.get('ge', ctx.get('gt', 1))}"
    if kind in ("less_than_equal", "less_than"):
        return f"use at most {ctx.get('le', ctx.get('lt'))}"
    return "this value cannot be used"


def _as_int(value: object, field: str, errors: dict[str, str]) -> int:
    label = _FIELD_LABEL[field]
    if isinstance(value, bool):
        errors[field] = f"{label}: give a whole number"
        return 0
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text:
        errors[field] = f"{label}: enter how many GPUs, for example 8"
        return 0
    if not (text.isascii() and text.isdigit()):
        errors[field] = f"{label}: '{text[:40]}' is not a whole number of GPUs"
        return 0
    if len(text) > 7:
        errors[field] = f"{label}: {text[:12]}... GPUs is more than any slime run uses (at most 100000)"
        return 0
    return int(text)
