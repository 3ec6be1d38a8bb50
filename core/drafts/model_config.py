"""Model script and checkpoint: compare an HF config.json with a model script's MODEL_ARGS the way slime
does at start-up, and draft the HF -> Megatron torch_dist conversion command.

At start-up slime loads the `--hf-checkpoint` config and compares a handful of its fields with the parsed
Megatron arguments; any difference stops the run (slime/backends/megatron_utils/arguments.py:97-148,
called at :198-200 @624b824a). The conversion tool does not run that comparison (it parses Megatron's
arguments directly: tools/convert_hf_to_torch_dist.py:38-40 @624b824a), so a wrong model script converts
silently and only fails, or trains a misconfigured model, later. Checking before converting catches it.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from core.findings import Finding, Severity, sort_and_dedupe
from core.model_scripts import ModelScript
from core.pins import SLIME_SHORT, megatron_source, slime_source

MAX_CONFIG_BYTES = 2_000_000
MAX_NPROC = 1024
MAX_PATTERN_LAYERS = 100_000
CARD = "checkpoints"

VALIDATE_SOURCE = slime_source("slime/backends/megatron_utils/arguments.py", 97)
PAIRS_SOURCE = slime_source("slime/backends/megatron_utils/arguments.py", 118)
ROPE_SOURCE = slime_source("slime/backends/megatron_utils/arguments.py", 110)
TEXT_CONFIG_SOURCE = slime_source("slime/backends/megatron_utils/arguments.py", 104)
MOE_SKIP_SOURCE = slime_source("slime/backends/megatron_utils/arguments.py", 116)
LOADERS_SOURCE = slime_source("slime/backends/megatron_utils/hf_to_megatron/__init__.py", 12)
CONVERT_SOURCE = slime_source("tools/convert_hf_to_torch_dist.py")
CONVERT_WORLD_SOURCE = slime_source("tools/convert_hf_to_torch_dist.py", 48)

# config.json model_type values slime can read HF weights for, at the pin; the conversion tool and a
# `--load` that points at an HF folder both go through this table.
HF_LOADER_MODEL_TYPES: frozenset[str] = frozenset({
    "deepseek_v3", "deepseek_v32", "glm4", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa", "kimi_k2", "llama",
    "mimo", "minimax_m2", "qwen2", "qwen2_moe", "qwen3", "qwen3_5", "qwen3_5_moe", "qwen3_moe", "qwen3_next",
})

# Config keys whose presence makes slime treat the model as MoE (arguments.py:64-73).
MOE_MARKER_KEYS = ("moe_intermediate_size", "num_experts", "n_routed_experts", "num_local_experts")


class ConfigError(ValueError):
    """The uploaded config.json cannot be read; the message says why."""


class MegatronArg(BaseModel):
    """One Megatron argument slime compares: its flag, attribute, type and default when the flag is absent."""

    flag: str
    dest: str
    kind: Literal["int", "float", "switch"]
    default: int | float | bool | None
    default_source: str


MEGATRON_ARGS: dict[str, MegatronArg] = {a.flag: a for a in (
    MegatronArg(flag="--hidden-size", dest="hidden_size", kind="int", default=None,
                default_source=megatron_source("megatron/core/transformer/transformer_config.py", 106)),
    MegatronArg(flag="--num-attention-heads", dest="num_attention_heads", kind="int", default=None,
                default_source=megatron_source("megatron/core/transformer/transformer_config.py", 109)),
    MegatronArg(flag="--num-layers", dest="num_layers", kind="int", default=None,
                default_source=megatron_source("megatron/core/transformer/transformer_config.py", 47)),
    MegatronArg(flag="--ffn-hidden-size", dest="ffn_hidden_size", kind="int", default=None,
                default_source=megatron_source("megatron/core/transformer/transformer_config.py", 131)),
    MegatronArg(flag="--moe-ffn-hidden-size", dest="moe_ffn_hidden_size", kind="int", default=None,
                default_source=megatron_source("megatron/core/transformer/transformer_config.py", 566)),
    MegatronArg(flag="--moe-shared-expert-intermediate-size", dest="moe_shared_expert_intermediate_size",
                kind="int", default=None,
                default_source=megatron_source("megatron/core/transformer/transformer_config.py", 539)),
    MegatronArg(flag="--untie-embeddings-and-output-weights", dest="untie_embeddings_and_output_weights",
                kind="switch", default=False,
                default_source=megatron_source("megatron/training/arguments.py", 1720)),
    MegatronArg(flag="--norm-epsilon", dest="layernorm_epsilon", kind="float", default=1e-5,
                default_source=megatron_source("megatron/core/transformer/transformer_config.py", 152)),
    MegatronArg(flag="--rotary-base", dest="rotary_base", kind="int", default=10000,
                default_source=megatron_source("megatron/training/arguments.py", 1678)),
)}

# (config.json key, Megatron flag, how slime compares them), in slime's order (arguments.py:118-128).
COMPARED_FIELDS: tuple[tuple[str, str, Literal["equal", "tied"]], ...] = (
    ("hidden_size", "--hidden-size", "equal"),
    ("num_attention_heads", "--num-attention-heads", "equal"),
    ("num_hidden_layers", "--num-layers", "equal"),
    ("intermediate_size", "--ffn-hidden-size", "equal"),
    ("moe_intermediate_size", "--moe-ffn-hidden-size", "equal"),
    ("shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size", "equal"),
    ("tie_word_embeddings", "--untie-embeddings-and-output-weights", "tied"),
    ("rms_norm_eps", "--norm-epsilon", "equal"),
)

UNRESOLVED = object()


# -- reading the upload ---------------------------------------------------------------------------------
def parse_hf_config(data: bytes | str) -> dict[str, Any]:
    """A config.json is UTF-8 JSON whose top level is an object; anything else gets a specific message."""
    if isinstance(data, bytes):
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"That file is {len(data):,} bytes; a config.json is a few kilobytes "
                              f"(limit {MAX_CONFIG_BYTES:,}). Upload the checkpoint's config.json itself.")
        if b"\0" in data[:8192]:
            raise ConfigError("That file is binary (it contains NUL bytes); upload the checkpoint's config.json, "
                              "not a weights file.")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"That file is not UTF-8 text (byte {exc.start}); upload config.json.") from None
    else:
        text = data
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError(f"That text is {len(text):,} characters; a config.json is a few kilobytes.")
    if not text.strip():
        raise ConfigError("The file is empty.")
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"config.json is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
                          ) from None
    except RecursionError:
        raise ConfigError("config.json is nested too deeply to read.") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"config.json must be a JSON object (key: value pairs); this one is a "
                          f"{type(cfg).__name__}.")
    return cfg


def text_part(cfg: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Multimodal configs keep the language model's sizes under `text_config`; slime compares that part."""
    sub = cfg.get("text_config")
    if isinstance(sub, dict):
        return sub, True
    return cfg, False


def resolved_rope_theta(cfg: dict[str, Any]) -> Any:
    """slime takes rope_theta from `rope_parameters` when that dict has it, else the top-level key."""
    params = cfg.get("rope_parameters")
    if isinstance(params, dict) and "rope_theta" in params:
        return params["rope_theta"]
    return cfg.get("rope_theta")


# -- reading the model script's values -----------------------------------------------------------------
class ScriptValue(BaseModel):
    """The value Megatron would hold for one flag after MODEL_ARGS is parsed."""

    flag: str
    value: int | float | bool | list[int] | None = None
    origin: Literal["script", "override", "default", "unresolved"]
    raw: str | None = None

    @property
    def resolved(self) -> bool:
        return self.origin != "unresolved"

    def shown(self) -> str:
        if self.origin == "unresolved":
            return f"{self.raw} (set by the script's shell code)"
        if self.origin == "default":
            return f"{_fmt(self.value)} (Megatron default: the script does not set {self.flag})"
        return _fmt(self.value)


_DEFAULT_EXPR = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*:-([^${}]*)\}$")


def _number(raw: str, kind: str) -> int | float | None:
    text = raw.strip().strip("'\"")
    m = _DEFAULT_EXPR.match(text)
    if m:
        text = m.group(1)
    if "$" in text or "`" in text:
        return None
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        return None


def _word_after(words: list[str] | None, flag: str) -> str | None:
    """The word written after the last occurrence of `flag` in MODEL_ARGS, as written."""
    if not words:
        return None
    found = None
    for i, w in enumerate(words[:-1]):
        if w == flag:
            found = words[i + 1]
    return found


def script_value(values: dict[str, str | None], flag: str,
                 overrides: dict[str, str | None] | None = None,
                 words: list[str] | None = None) -> ScriptValue:
    """What Megatron holds for `flag`: an override wins (argparse keeps the last value), then the script,
    then Megatron's default; a value computed by shell code (or that the catalog could not resolve) is
    reported as unresolved."""
    arg = MEGATRON_ARGS[flag]
    key = flag[2:]
    for origin, table in (("override", overrides or {}), ("script", values)):
        if key in table:
            raw = table[key]
            if arg.kind == "switch":
                return ScriptValue(flag=flag, value=True, origin=origin, raw=raw)  # type: ignore[arg-type]
            num = _number(raw or "", arg.kind)
            if num is None:
                shown = raw if raw is not None else (_word_after(words, flag) or "a value")
                return ScriptValue(flag=flag, origin="unresolved", raw=shown)
            return ScriptValue(flag=flag, value=num, origin=origin, raw=raw)  # type: ignore[arg-type]
    return ScriptValue(flag=flag, value=arg.default, origin="default")


def moe_layer_pattern(raw: str | None) -> int | list[int] | object:
    """Megatron's --moe-layer-freq: an int, or a list expression such as `[0]*3+[1]*58` (evaluated here
    with `ast`, never `eval`). Returns UNRESOLVED for shell-computed values."""
    if raw is None:
        return 1  # megatron/training/arguments.py:2726 default
    text = raw.strip().strip("'\"")
    if "$" in text or "`" in text:
        return UNRESOLVED
    if "[" not in text:
        try:
            return int(text)
        except ValueError:
            return UNRESOLVED
    if re.search(r"[^,\d\[\]()+*\s]", text):
        return UNRESOLVED
    try:
        value = _eval_list_expr(ast.parse(text, mode="eval").body)
    except (ValueError, SyntaxError, RecursionError):
        return UNRESOLVED
    return value if isinstance(value, list) else UNRESOLVED


def _eval_list_expr(node: ast.AST) -> int | list[int]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.List):
        items = [_eval_list_expr(e) for e in node.elts]
        if not all(isinstance(i, int) for i in items):
            raise ValueError("nested list")
        return items  # type: ignore[return-value]
    if isinstance(node, ast.BinOp):
        left, right = _eval_list_expr(node.left), _eval_list_expr(node.right)
        if isinstance(node.op, ast.Add) and isinstance(left, list) and isinstance(right, list):
            out = left + right
        elif isinstance(node.op, ast.Mult) and isinstance(left, list) and isinstance(right, int):
            out = left * right if len(left) * right <= MAX_PATTERN_LAYERS else None
        elif isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, list):
            out = right * left if len(right) * left <= MAX_PATTERN_LAYERS else None
        elif isinstance(node.op, (ast.Add, ast.Mult)) and isinstance(left, int) and isinstance(right, int):
            return left + right if isinstance(node.op, ast.Add) else left * right
        else:
            raise ValueError("unsupported")
        if out is None or len(out) > MAX_PATTERN_LAYERS:
            raise ValueError("too long")
        return out
    raise ValueError("unsupported")


def has_dense_layers(pattern: int | list[int] | object) -> bool | None:
    """slime's rule for 'this MoE model also has dense layers': a list containing 0, or the number 0.
    None when the pattern is computed by shell code (arguments.py:47-61)."""
    if pattern is UNRESOLVED:
        return None
    if isinstance(pattern, list):
        return any(int(x) == 0 for x in pattern)
    return int(pattern) == 0  # type: ignore[call-overload]


# -- the comparison -------------------------------------------------------------------------------------
class ComparedField(BaseModel):
    """One row of the comparison table."""

    hf_key: str
    hf_value: str
    flag: str
    script_value: str
    status: Literal["match", "mismatch", "not compared"]
    note: str = ""


class ConfigComparison(BaseModel):
    script_name: str
    script_path: str
    model_type: str | None
    used_text_config: bool
    rows: list[ComparedField]
    findings: list[Finding]
    suggested_overrides: dict[str, str | None] = Field(
        default_factory=dict, description="MODEL_ARGS additions that would make each fixable mismatch match")

    @property
    def mismatches(self) -> list[ComparedField]:
        return [r for r in self.rows if r.status == "mismatch"]

    @property
    def ok(self) -> bool:
        return not any(f.severity == Severity.ERROR for f in self.findings)


def _fmt(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return f"[{len(value)} layers]"
    return str(value)


def _override_for(flag: str, hf_value: Any) -> tuple[str, str | None] | None:
    """The MODEL_ARGS word(s) that would make Megatron hold the config's value, if one flag can do it."""
    arg = MEGATRON_ARGS[flag]
    if arg.kind == "switch":
        return (flag[2:], None) if hf_value is False else None  # removing a switch needs an edited script
    if isinstance(hf_value, bool) or not isinstance(hf_value, (int, float)):
        return None
    if arg.kind == "int":
        if float(hf_value) != int(hf_value):
            return None
        return flag[2:], str(int(hf_value))
    return flag[2:], repr(float(hf_value))


def check_field(hf_key: str, flag: str, how: str, cfg: dict[str, Any], sv: ScriptValue
                ) -> tuple[ComparedField, Finding | None]:
    """Rule: each config.json field slime knows must equal its Megatron argument (for
    `tie_word_embeddings`, must differ from `--untie-embeddings-and-output-weights`); a field missing from
    config.json is not compared by us because transformers fills in a class default we cannot see
    (slime/backends/megatron_utils/arguments.py:118-137@624b824a)."""
    if hf_key not in cfg:
        row = ComparedField(hf_key=hf_key, hf_value="absent", flag=flag, script_value=sv.shown(),
                            status="not compared",
                            note="not in config.json; transformers may supply a class default at start-up")
        return row, None
    hf_value = cfg[hf_key]
    if not sv.resolved:
        row = ComparedField(hf_key=hf_key, hf_value=_fmt(hf_value), flag=flag, script_value=sv.shown(),
                            status="not compared", note="the script computes this value in shell code")
        return row, Finding(code="MC002", severity=Severity.INFO, flag=flag, source=PAIRS_SOURCE, card=CARD,
                            message=(f"{flag} is computed by the script's shell code ({sv.raw}); check by hand "
                                     f"that it equals {hf_key} = {_fmt(hf_value)} from config.json."))
    same = hf_value == sv.value
    matches = (not same) if how == "tied" else same
    row = ComparedField(hf_key=hf_key, hf_value=_fmt(hf_value), flag=flag, script_value=sv.shown(),
                        status="match" if matches else "mismatch")
    if matches:
        return row, None
    fix = _fix_text(flag, hf_value, how)
    return row, Finding(
        code="MC001", severity=Severity.ERROR, flag=flag, source=PAIRS_SOURCE, card=CARD, fix=fix,
        message=(f"config.json {hf_key} = {_fmt(hf_value)} but the model script gives {flag} = {sv.shown()}; "
                 "slime stops at start-up on this difference."))


def _fix_text(flag: str, hf_value: Any, how: str) -> str:
    if how == "tied":
        if hf_value is False:
            return f"add {flag} (MODEL_ARGS+=({flag}) after sourcing the script)"
        return f"remove {flag} from a copy of the model script: this checkpoint ties its embeddings"
    override = _override_for(flag, hf_value)
    if override:
        return (f"if the script is otherwise right for this checkpoint, add MODEL_ARGS+=({flag} {override[1]}) "
                "after sourcing it; if several sizes differ, the script is for another model")
    return "use the model script written for this checkpoint"


def check_rope_base(cfg: dict[str, Any], sv: ScriptValue) -> tuple[ComparedField, Finding | None]:
    """Rule: the config's rope_theta (read from `rope_parameters` first) must equal --rotary-base, whose
    Megatron default is 10000 (slime/backends/megatron_utils/arguments.py:110-145@624b824a)."""
    theta = resolved_rope_theta(cfg)
    key = "rope_parameters.rope_theta" if isinstance(cfg.get("rope_parameters"), dict) and \
        "rope_theta" in cfg["rope_parameters"] else "rope_theta"
    if theta is None:
        row = ComparedField(hf_key="rope_theta", hf_value="absent", flag="--rotary-base", script_value=sv.shown(),
                            status="not compared", note="config.json gives no rope_theta")
        return row, None
    if not sv.resolved:
        return check_field(key, "--rotary-base", "equal", {key: theta}, sv)
    matches = theta == sv.value
    row = ComparedField(hf_key=key, hf_value=_fmt(theta), flag="--rotary-base", script_value=sv.shown(),
                        status="match" if matches else "mismatch")
    if matches:
        return row, None
    return row, Finding(
        code="MC001", severity=Severity.ERROR, flag="--rotary-base", source=ROPE_SOURCE, card=CARD,
        fix=_fix_text("--rotary-base", theta, "equal"),
        message=(f"config.json {key} = {_fmt(theta)} but the model script gives --rotary-base = {sv.shown()}; "
                 "slime stops at start-up on this difference (variants of one model often differ only here)."))


def check_loader_support(model_type: Any) -> Finding | None:
    """Rule: slime reads HF weights (conversion, or `--load` on an HF folder) only for the model types in
    its loader table (slime/backends/megatron_utils/hf_to_megatron/__init__.py:12-43@624b824a)."""
    if model_type is None:
        return Finding(code="MC005", severity=Severity.WARNING, source=LOADERS_SOURCE, card=CARD,
                       message="config.json has no model_type, so slime's weight loader cannot pick a converter.")
    if model_type not in HF_LOADER_MODEL_TYPES:
        return Finding(
            code="MC005", severity=Severity.WARNING, source=LOADERS_SOURCE, card=CARD,
            message=(f"model_type {model_type!r} is not in slime's HF weight-loader table at {SLIME_SHORT}; "
                     "tools/convert_hf_to_torch_dist.py stops with 'Unsupported HuggingFace model type'. "
                     "This model is outside what slime converts at the pinned version."),
            fix=f"supported model types: {', '.join(sorted(HF_LOADER_MODEL_TYPES))}")
    return None


def compare_config(cfg: dict[str, Any], script: ModelScript,
                   overrides: dict[str, str | None] | None = None) -> ConfigComparison:
    """Compare an HF config with a model script's MODEL_ARGS (plus any MODEL_ARGS+= overrides) as slime's
    start-up check does, returning one row per compared field and a finding per problem."""
    findings: list[Finding] = []
    model_type = cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None
    part, used_text = text_part(cfg)
    if used_text:
        findings.append(Finding(code="MC006", severity=Severity.INFO, source=TEXT_CONFIG_SOURCE, card=CARD,
                                message="This is a multimodal config: slime compares its text_config part, "
                                        "and so do we."))
    loader = check_loader_support(model_type or part.get("model_type"))
    if loader:
        findings.append(loader)
    if not script.model_args:
        findings.append(Finding(
            code="MC007", severity=Severity.WARNING, source=slime_source(script.path), card=CARD,
            message=(f"{script.path} sets no MODEL_ARGS of its own (it sources another script with a few "
                     "variables changed), so there is nothing here to compare; read it at the pinned commit.")))
        return ConfigComparison(script_name=script.name, script_path=script.path, model_type=model_type,
                                used_text_config=used_text, rows=[], findings=sort_and_dedupe(findings))

    overrides = overrides or {}
    is_moe = any(k in part for k in MOE_MARKER_KEYS)
    if "moe-layer-freq" in overrides:
        pattern = moe_layer_pattern(overrides["moe-layer-freq"])
    elif "moe-layer-freq" in script.values:
        raw_freq = script.values["moe-layer-freq"]
        pattern = UNRESOLVED if raw_freq is None else moe_layer_pattern(raw_freq)
    else:
        pattern = moe_layer_pattern(None)
    dense = has_dense_layers(pattern)
    rows: list[ComparedField] = []
    suggested: dict[str, str | None] = {}
    for hf_key, flag, how in COMPARED_FIELDS:
        sv = script_value(script.values, flag, overrides, script.model_args)
        if hf_key == "intermediate_size" and is_moe and dense is not True:
            if dense is False:
                rows.append(ComparedField(hf_key=hf_key, hf_value=_fmt(part.get(hf_key, "absent")), flag=flag,
                                          script_value=sv.shown(), status="not compared",
                                          note="MoE model with no dense layers: slime skips this field"))
                continue
            rows.append(ComparedField(hf_key=hf_key, hf_value=_fmt(part.get(hf_key, "absent")), flag=flag,
                                      script_value=sv.shown(), status="not compared",
                                      note="depends on --moe-layer-freq, which the script computes in shell"))
            findings.append(Finding(
                code="MC004", severity=Severity.INFO, flag="--moe-layer-freq", source=MOE_SKIP_SOURCE, card=CARD,
                message=("slime compares intermediate_size with --ffn-hidden-size for an MoE model only when "
                         "--moe-layer-freq marks some layers dense (a 0); this script computes that pattern in "
                         "shell, so check both by hand if it has dense layers.")))
            continue
        row, finding = check_field(hf_key, flag, how, part, sv)
        rows.append(row)
        if finding:
            findings.append(finding)
            if finding.severity == Severity.ERROR:
                fix = _override_for(flag, part.get(hf_key)) if how == "equal" else (
                    _override_for(flag, False) if part.get(hf_key) is False else None)
                if fix:
                    suggested[fix[0]] = fix[1]
    row, finding = check_rope_base(part, script_value(script.values, "--rotary-base", overrides, script.model_args))
    rows.append(row)
    if finding:
        findings.append(finding)
        if finding.severity == Severity.ERROR:
            fix = _override_for("--rotary-base", resolved_rope_theta(part))
            if fix:
                suggested[fix[0]] = fix[1]
    return ConfigComparison(script_name=script.name, script_path=script.path, model_type=model_type,
                            used_text_config=used_text, rows=rows, findings=sort_and_dedupe(findings),
                            suggested_overrides=suggested)


# -- the conversion command -----------------------------------------------------------------------------
def _one_line_path(v: str, what: str) -> str:
    v = (v or "").strip()
    if not v:
        raise ValueError(f"give the {what}")
    if len(v) > 4096 or any(c in v for c in "\n\r\0"):
        raise ValueError(f"the {what} must be one line without NUL bytes, at most 4096 characters")
    if re.match(r"^[a-z][a-z0-9+.-]*://", v, re.I):
        raise ValueError(f"the {what} must be a folder on the machine that runs the conversion, not a URL")
    return v


class ConversionRequest(BaseModel):
    """What the conversion command needs: the model script, where the HF checkpoint is and where to save."""

    script_name: str = Field(min_length=1, max_length=200)
    hf_checkpoint: str
    save_dir: str
    megatron_path: str = "/root/Megatron-LM"
    nproc_per_node: int = Field(default=1, ge=1, le=MAX_NPROC)
    overrides: dict[str, str | None] = Field(default_factory=dict)

    @field_validator("hf_checkpoint")
    @classmethod
    def _hf_ok(cls, v: str) -> str:
        return _one_line_path(v, "Hugging Face checkpoint folder")

    @field_validator("save_dir")
    @classmethod
    def _save_ok(cls, v: str) -> str:
        return _one_line_path(v, "folder to save the torch_dist checkpoint in")

    @field_validator("megatron_path")
    @classmethod
    def _megatron_ok(cls, v: str) -> str:
        return _one_line_path(v, "Megatron-LM folder")

    @field_validator("overrides")
    @classmethod
    def _overrides_ok(cls, v: dict[str, str | None]) -> dict[str, str | None]:
        for flag, value in v.items():
            if not re.fullmatch(r"[a-z][a-z0-9-]{0,80}", flag):
                raise ValueError(f"not a flag name: {flag!r}")
            if value is not None and not re.fullmatch(r"[-+0-9.eE]{1,40}", value):
                raise ValueError(f"override values are numbers; not {value!r}")
        return v


def conversion_findings(req: ConversionRequest, script: ModelScript) -> list[Finding]:
    """Rule: the conversion runs on at most as many processes as the model has layers
    (tools/convert_hf_to_torch_dist.py:48@624b824a); with more than one it picks a pipeline size itself."""
    out: list[Finding] = []
    layers = script_value(script.values, "--num-layers", req.overrides)
    if layers.resolved and isinstance(layers.value, int) and req.nproc_per_node > layers.value:
        out.append(Finding(code="MC010", severity=Severity.ERROR, source=CONVERT_WORLD_SOURCE, card=CARD,
                           message=(f"{req.nproc_per_node} processes is more than the model's {layers.value} "
                                    "layers; the conversion tool refuses that."),
                           fix=f"use at most {layers.value} processes"))
    if not script.model_args:
        out.append(Finding(code="MC007", severity=Severity.WARNING, source=slime_source(script.path), card=CARD,
                           message=(f"{script.path} only sources another script; the draft still sources it, "
                                    "which is what the upstream docs do.")))
    return out


def draft_conversion_command(req: ConversionRequest) -> str:
    """The HF -> torch_dist conversion as a short bash script, user values quoted for the shell."""
    q = shlex.quote
    script_path = f"scripts/models/{req.script_name}.sh"
    lines = [
        "#!/bin/bash",
        "# Draft from slime assistant: review it before running. It converts a Hugging Face checkpoint",
        f"# to Megatron torch_dist. Run it from the root of a slime checkout ({SLIME_SHORT}).",
        f"# Tool: {CONVERT_SOURCE}",
        "set -e",
        "",
        f"source {q(script_path)}",
    ]
    if req.overrides:
        words = []
        for flag, value in req.overrides.items():
            words.append(f"--{flag}" if value is None else f"--{flag} {q(value)}")
        short = f"MODEL_ARGS+=({' '.join(words)})"
        lines += [f"{short}  # makes MODEL_ARGS match this checkpoint's config.json"] if len(short) <= 72 else [
            "# makes MODEL_ARGS match this checkpoint's config.json", "MODEL_ARGS+=(", *(f"   {w}" for w in words), ")"]
    launcher = "python" if req.nproc_per_node == 1 else f"torchrun --nproc-per-node {req.nproc_per_node}"
    if req.nproc_per_node > 1:
        lines.append(f"# {req.nproc_per_node} processes: the tool picks a pipeline-parallel size by itself.")
    lines += [
        f"PYTHONPATH={q(req.megatron_path)} \\",  # one argument a line: shown whole, never soft-wrapped
        f"   {launcher} tools/convert_hf_to_torch_dist.py \\",
        '   "${MODEL_ARGS[@]}" \\',
        f"   --hf-checkpoint {q(req.hf_checkpoint)} \\",
        f"   --save {q(req.save_dir)}",
        "",
    ]
    return "\n".join(lines)


def ckpt_args_example(hf_checkpoint: str, torch_dist_dir: str, run_dir: str | None = None) -> str:
    """The CKPT_ARGS group a launch script uses with these folders; run_dir is the user's choice."""
    q = shlex.quote
    run = q(run_dir) if run_dir else "/path/to/your/run_checkpoints  # your choice"
    return "\n".join([
        "CKPT_ARGS=(",
        f"   --hf-checkpoint {q(hf_checkpoint)}  # tokenizer and SGLang's start weights",
        f"   --ref-load {q(torch_dist_dir)}  # reference model; also the start point while --load is empty",
        f"   --load {run}",
        f"   --save {run}",
        "   --save-interval 20  # your choice: how many rollouts between saves",
        ")",
    ])
