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
    if errors:
        return OnboardingResult(profile=None, errors=errors)
    try:
        profile = Profile(name=name or "default", model=model, data_path=data_path, gpus_total=gt,
                          gpus_per_node=gpn)
    except ValidationError as exc:
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "gpus_per_node"
            msg = err["msg"].removeprefix("Value error, ")
            errors[field] = f"{_FIELD_LABEL.get(field, field)}: {msg}"
        return OnboardingResult(profile=None, errors=errors)
    return OnboardingResult(profile=profile, errors={}, model_match=match_model(profile.model))


def _as_int(value: object, field: str, errors: dict[str, str]) -> int:
    label = _FIELD_LABEL[field]
    if isinstance(value, bool):
        errors[field] = f"{label}: give a whole number"
        return 0
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()):
        errors[field] = f"{label}: '{text[:40]}' is not a whole number of GPUs"
        return 0
    if len(text) > 7:
        errors[field] = f"{label}: {text[:12]}... GPUs is more than any slime run uses (at most 100000)"
        return 0
    return int(text)
