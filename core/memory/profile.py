"""The user's saved answers (a profile) and the rules that validate them."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, JsonValue, field_validator, model_validator

from core.data import DataKeys, check_extension

DATA_SUFFIX_SOURCE = "slime/utils/data.py:31-60@624b824a"
MAX_GPUS = 100_000
PROFILE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")


class Profile(BaseModel):
    """What we remember about one project: model, data file and GPUs."""

    name: str = "default"
    model: str = Field(min_length=1, max_length=200)
    data_path: str = Field(min_length=1, max_length=4096)
    gpus_total: int = Field(ge=1, le=MAX_GPUS)
    gpus_per_node: int | None = Field(default=None, ge=1, le=1024)
    # The user's own versions (optional, asked once on the Profile page or the launch-script checker): the
    # checker, the flag reference, the error search and the model-script picker read them instead of the pins.
    slime_checkout: str | None = Field(default=None, max_length=4096)
    sglang_source: str | None = Field(default=None, max_length=4096)
    megatron_source: str | None = Field(default=None, max_length=4096)
    # The GPU type (a name of knowledge/gpus.yaml, optional; profiles saved before it load with None): the memory
    # plan, the checker's memory verdicts and the monitor's MFU read it.
    gpu_model: str | None = Field(default=None, max_length=100)

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not PROFILE_NAME_RE.match(v):
            raise ValueError("use 1-64 letters, digits, spaces, '.', '_' or '-', starting with a letter or digit")
        return v

    @field_validator("model")
    @classmethod
    def _model_ok(cls, v: str) -> str:
        v = v.strip()
        if not v or any(c in v for c in "\n\r\t\0"):
            raise ValueError("the model name must be a single line of text")
        return v

    @field_validator("slime_checkout", "sglang_source", "megatron_source")
    @classmethod
    def _source_ok(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip()
        if any(c in v for c in "\n\r\0"):
            raise ValueError("a directory must be a single line without NUL bytes")
        return v or None

    @field_validator("gpu_model")
    @classmethod
    def _gpu_model_ok(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip()
        if any(c in v for c in "\n\r\t\0"):
            raise ValueError("the GPU model must be a single line of text")
        return v or None

    @field_validator("data_path")
    @classmethod
    def _path_ok(cls, v: str) -> str:
        return check_data_path(v)

    @model_validator(mode="after")
    def _gpus_ok(self) -> Profile:
        if self.gpus_per_node is not None:
            if self.gpus_per_node > self.gpus_total:
                raise ValueError(
                    f"GPUs per node ({self.gpus_per_node}) cannot exceed the total ({self.gpus_total})")
            if self.gpus_total % self.gpus_per_node:
                raise ValueError(
                    f"{self.gpus_total} GPUs do not split into whole nodes of {self.gpus_per_node}")
        return self

    @property
    def nodes(self) -> int:
        per = self.gpus_per_node or self.gpus_total
        return self.gpus_total // per

    @property
    def per_node(self) -> int:
        return self.gpus_per_node or self.gpus_total


def check_data_path(v: str) -> str:
    """A data path is one line, not a URL, and ends exactly in .jsonl or .parquet (slime's loader rule)."""
    v = v.strip()
    if not v:
        raise ValueError("the data path is empty")
    if any(c in v for c in "\n\r\0"):
        raise ValueError("the data path must be a single line without NUL bytes")
    if re.match(r"^[a-z][a-z0-9+.-]*://", v, re.I):
        raise ValueError("give a file path on the training machine, not a URL")
    problem = check_extension(v)
    if problem:
        raise ValueError(f"{problem.detail} ({DATA_SUFFIX_SOURCE})")
    return v


class WorkflowRecord(BaseModel):
    """What one workflow produced for one profile: status, when, what is done and not, and the output."""

    workflow: str
    status: str = Field(pattern="^(started|done)$")
    updated_at: float
    done_items: list[str] = Field(default_factory=list)
    todo_items: list[str] = Field(default_factory=list)
    summary: str = ""
    output_name: str | None = None
    output: str | None = None
    output_mime: str = "text/plain"


class SavedLaunchKeys(BaseModel):
    """How the user's run reads each data row, as last drafted or checked, so other pages pre-fill it."""

    keys: DataKeys
    origin: str = Field(description="the workflow that saved them, e.g. 'grpo' or 'check_args'")
    updated_at: float


InputValue = JsonValue  # what a widget holds (text, number, flag, choice) or a list such as added folders


class PageInputs(BaseModel):
    """What the user typed, ticked or chose on one workflow page, by widget name; written only by their edits."""

    page: str
    values: dict[str, InputValue] = Field(default_factory=dict)
    updated_at: float


class AcceptedOutput(BaseModel):
    """One output the user accepted (a draft accepted or downloaded, a check run on their input)."""

    id: str
    workflow: str
    accepted_at: float
    how: str = Field(description="the action that accepted it, e.g. 'accepted the draft'")
    summary: str
    done_items: list[str] = Field(default_factory=list)
    todo_items: list[str] = Field(default_factory=list)
    output_name: str | None = None
    output: str | None = None
    output_mime: str = "text/plain"
    inputs: dict[str, InputValue] | None = Field(default=None,
                                                 description="the page's saved inputs when it was accepted")
    input_labels: dict[str, str] | None = Field(default=None,
                                                description="each input's label on its page, for showing changes")
    inputs_shown: dict[str, InputValue] | None = Field(
        default=None, description="every input as the page showed it (defaults included), for showing changes")
