"""Model config comparison (as slime's start-up check does it) and the conversion command draft."""

import json
import shlex
import shutil
import subprocess

import pytest

from core.drafts.model_config import (
    UNRESOLVED,
    ConfigError,
    ConversionRequest,
    check_loader_support,
    compare_config,
    conversion_findings,
    draft_conversion_command,
    has_dense_layers,
    moe_layer_pattern,
    parse_hf_config,
    resolved_rope_theta,
    script_value,
)
from core.findings import Severity
from core.model_scripts import ModelScript, load_model_scripts

# Sizes of Qwen3-4B's published config.json (figures only).
QWEN3_4B = {"model_type": "qwen3", "hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 36,
            "intermediate_size": 9728, "rms_norm_eps": 1e-6, "rope_theta": 1000000, "tie_word_embeddings": True}
QWEN3_30B_A3B = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_attention_heads": 32, "num_hidden_layers": 48,
                 "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "rms_norm_eps": 1e-6,
                 "rope_theta": 1000000, "tie_word_embeddings": False}


def script(name: str) -> ModelScript:
    return next(s for s in load_model_scripts() if s.name == name)


def statuses(result) -> dict[str, str]:
    return {r.hf_key: r.status for r in result.rows}


def test_matching_config_has_no_errors_and_compares_each_field():
    result = compare_config(QWEN3_4B, script("qwen3-4B"))
    assert result.ok and not result.mismatches
    st = statuses(result)
    for key in ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size",
                "tie_word_embeddings", "rms_norm_eps", "rope_theta"):
        assert st[key] == "match", key
    assert st["moe_intermediate_size"] == "not compared"  # absent from a dense config


@pytest.mark.parametrize(("key", "value", "flag"), [
    ("hidden_size", 4096, "--hidden-size"),
    ("num_attention_heads", 16, "--num-attention-heads"),
    ("num_hidden_layers", 28, "--num-layers"),
    ("intermediate_size", 3072, "--ffn-hidden-size"),
    ("rms_norm_eps", 1e-5, "--norm-epsilon"),
    ("rope_theta", 5000000, "--rotary-base"),
    ("tie_word_embeddings", False, "--untie-embeddings-and-output-weights"),
], ids=str)
def test_each_mismatch_is_an_error_with_both_values(key, value, flag):
    result = compare_config({**QWEN3_4B, key: value}, script("qwen3-4B"))
    errors = [f for f in result.findings if f.severity == Severity.ERROR]
    assert [f.flag for f in errors] == [flag]
    msg = errors[0].message
    assert key in msg and flag in msg
    assert errors[0].source.startswith("slime/backends/megatron_utils/arguments.py:")


def test_rope_theta_is_read_from_rope_parameters_first():
    cfg = {**QWEN3_4B, "rope_theta": 10000, "rope_parameters": {"rope_theta": 1000000}}
    assert resolved_rope_theta(cfg) == 1000000
    assert compare_config(cfg, script("qwen3-4B")).ok


def test_multimodal_config_compares_text_config():
    cfg = {"model_type": "qwen3_5", "text_config": {**QWEN3_4B, "hidden_size": 1}}
    result = compare_config(cfg, script("qwen3-4B"))
    assert any(f.code == "MC006" for f in result.findings)
    assert [r.hf_key for r in result.mismatches] == ["hidden_size"]


def test_flag_missing_from_script_compares_against_megatron_default():
    """A config value with no matching flag meets Megatron's default (None), as at slime start-up."""
    cfg = {**QWEN3_4B, "moe_intermediate_size": 768}
    result = compare_config(cfg, script("qwen3-4B"))
    mismatch = next(r for r in result.mismatches if r.hf_key == "moe_intermediate_size")
    assert "Megatron default" in mismatch.script_value


def test_suggested_overrides_make_rope_variant_match():
    cfg = {**QWEN3_4B, "rope_theta": 5000000}
    first = compare_config(cfg, script("qwen3-4B"))
    assert first.suggested_overrides == {"rotary-base": "5000000"}
    assert compare_config(cfg, script("qwen3-4B"), first.suggested_overrides).ok


def synthetic(name: str, values: dict[str, str | None], words: list[str] | None = None) -> ModelScript:
    """A model script written for a test, so the rule under test does not depend on the catalog's state."""
    if words is None:
        words = []
        for k, v in values.items():
            words += [f"--{k}"] + ([v] if v is not None else [])
    return ModelScript(name=name, path=f"scripts/models/{name}.sh", source=f"scripts/models/{name}.sh@624b824a",
                       model_args=words, values=values)


MOE_VALUES = {"num-layers": "48", "hidden-size": "2048", "num-attention-heads": "32", "ffn-hidden-size": "6144",
              "moe-ffn-hidden-size": "768", "norm-epsilon": "1e-6", "rotary-base": "1000000",
              "untie-embeddings-and-output-weights": None, "num-experts": "128"}


def test_moe_with_shell_computed_pattern_is_reported_not_guessed():
    words = [w for k, v in MOE_VALUES.items() for w in ([f"--{k}"] + ([v] if v else []))]
    moe = synthetic("moe-x", {**MOE_VALUES, "moe-layer-freq": None}, [*words, "--moe-layer-freq", '"$FREQ"'])
    result = compare_config({**QWEN3_30B_A3B, "intermediate_size": 1}, moe)
    assert result.ok
    assert statuses(result)["intermediate_size"] == "not compared"
    assert any(f.code == "MC004" for f in result.findings)


@pytest.mark.parametrize(("freq", "compared"), [("[0]*1+[1]*47", True), ("[1]*48", False)], ids=str)
def test_moe_dense_ffn_is_compared_only_with_dense_layers(freq, compared):
    moe = synthetic("moe-x", {**MOE_VALUES, "moe-layer-freq": freq})
    result = compare_config({**QWEN3_30B_A3B, "intermediate_size": 1}, moe)
    assert (statuses(result)["intermediate_size"] == "mismatch") is compared
    assert result.ok is not compared


def test_catalog_moe_script_compares_cleanly():
    assert compare_config(QWEN3_30B_A3B, script("qwen3-30B-A3B")).ok


@pytest.mark.parametrize(("raw", "dense"), [
    (None, False),  # Megatron default 1: every layer MoE
    ("1", False),
    ("0", True),
    ("[0]*3+[1]*58", True),
    ("([1]*3+[0]*1)*3", True),
    ("[1]*48", False),
    ("$MOE_LAYER_FREQ", None),
    ("[0]*$N_DENSE_LAYERS+[1]*$N_MOE_LAYERS", None),
    ("[1]*10**9", None),
    ("[1]*99999999*99999999", None),
    ("__import__('os')", None),
], ids=str)
def test_moe_layer_pattern_follows_slime_dense_rule(raw, dense):
    assert has_dense_layers(moe_layer_pattern(raw)) is dense


def test_moe_layer_pattern_expands_lists():
    assert moe_layer_pattern("[0]*2+[1]*3") == [0, 0, 1, 1, 1]
    assert moe_layer_pattern("$X") is UNRESOLVED


@pytest.mark.parametrize(("raw", "words"), [
    ("$NHIDDEN", None),
    (None, ["--hidden-size", '"$NHIDDEN"']),
    ("$((N_DENSE_LAYERS", None),
], ids=str)
def test_shell_computed_values_are_not_compared(raw, words):
    computed = synthetic("computed", {"hidden-size": raw}, words)
    sv = script_value(computed.values, "--hidden-size", words=computed.model_args)
    assert not sv.resolved and ("NHIDDEN" in sv.shown() or "N_DENSE" in sv.shown())
    result = compare_config({"model_type": "glm4_moe_lite", "hidden_size": 2048}, computed)
    row = next(r for r in result.rows if r.hf_key == "hidden_size")
    assert row.status == "not compared"
    assert any(f.code == "MC002" and f.flag == "--hidden-size" for f in result.findings)


def test_shell_default_expression_resolves_to_its_default():
    sv = script_value({"rotary-base": "${MODEL_ARGS_ROTARY_BASE:-1000000}"}, "--rotary-base")
    assert sv.resolved and sv.value == 1000000


def test_script_without_model_args_is_a_warning():
    result = compare_config(QWEN3_4B, synthetic("wrapper", {}, []))
    assert result.rows == [] and [f.code for f in result.findings] == ["MC007"]


def test_catalog_variant_script_matches_its_checkpoint():
    """qwen3-4B-Instruct-2507 differs from qwen3-4B only in rope base (scripts/models/qwen3-4B-Instruct-2507.sh)."""
    variant = {**QWEN3_4B, "rope_theta": 5000000}
    assert compare_config(variant, script("qwen3-4B-Instruct-2507")).ok
    assert not compare_config(variant, script("qwen3-4B")).ok


@pytest.mark.parametrize(("model_type", "supported"), [
    ("qwen3", True), ("qwen3_moe", True), ("deepseek_v3", True), ("llama", True), ("glm4_moe", True),
    ("gemma3", False), ("mistral", False), (None, False),
], ids=str)
def test_loader_support_follows_slime_table(model_type, supported):
    assert (check_loader_support(model_type) is None) is supported


BAD_UPLOADS = {
    "empty": (b"", "empty"),
    "binary": (b"\x00\x01\x02binary", "binary"),
    "not-utf8": (b"\xff\xfe\xfa not utf8", "UTF-8"),
    "truncated": (b'{"hidden_size": 1,', "not valid JSON"),
    "a-list": (b"[1, 2, 3]", "JSON object"),
    "huge": (b"x" * 3_000_000, "bytes"),
    "deeply-nested": (b"[" * 100_000, "nested too deeply"),
}


@pytest.mark.parametrize("name", sorted(BAD_UPLOADS), ids=str)
def test_bad_uploads_get_specific_messages(name):
    data, words = BAD_UPLOADS[name]
    with pytest.raises(ConfigError, match=words):
        parse_hf_config(data)


def test_config_with_bom_parses():
    assert parse_hf_config(b"\xef\xbb\xbf" + json.dumps(QWEN3_4B).encode())["hidden_size"] == 2560


HOSTILE = "/models/my set/$(reboot)`id`;rm -rf ~'\""


def test_conversion_command_quotes_user_values_and_parses_in_bash():
    req = ConversionRequest(script_name="qwen3-4B", hf_checkpoint=HOSTILE, save_dir="/out/a b",
                            megatron_path="/opt/Megatron LM", nproc_per_node=4,
                            overrides={"rotary-base": "5000000"})
    text = draft_conversion_command(req)
    assert "source scripts/models/qwen3-4B.sh" in text
    assert "MODEL_ARGS+=(--rotary-base 5000000)" in text
    assert "torchrun --nproc-per-node 4 tools/convert_hf_to_torch_dist.py" in text
    assert '"${MODEL_ARGS[@]}"' in text
    command = text[text.index("PYTHONPATH="):]
    words = shlex.split(command.replace("\\\n", " "))
    assert words[words.index("--hf-checkpoint") + 1] == HOSTILE
    assert words[words.index("--save") + 1] == "/out/a b"
    assert words[0] == "PYTHONPATH=/opt/Megatron LM"
    if shutil.which("bash"):
        proc = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
        assert proc.returncode == 0, proc.stderr


def test_single_process_conversion_uses_python():
    text = draft_conversion_command(ConversionRequest(script_name="qwen3-4B", hf_checkpoint="/m/Qwen3-4B",
                                                      save_dir="/m/Qwen3-4B_torch_dist"))
    assert "python tools/convert_hf_to_torch_dist.py" in text and "torchrun" not in text


@pytest.mark.parametrize(("field", "value"), [
    ("hf_checkpoint", ""), ("hf_checkpoint", "/a\nb"), ("save_dir", "s3://bucket/x"), ("nproc_per_node", 0),
    ("overrides", {"rotary-base": "1; reboot"}), ("overrides", {"Bad Flag": "1"}),
], ids=str)
def test_conversion_request_rejects_bad_values(field, value):
    base = {"script_name": "qwen3-4B", "hf_checkpoint": "/m/x", "save_dir": "/m/y"}
    with pytest.raises(ValueError):
        ConversionRequest(**{**base, field: value})


def test_more_processes_than_layers_is_an_error():
    req = ConversionRequest(script_name="qwen3-4B", hf_checkpoint="/m/x", save_dir="/m/y", nproc_per_node=64)
    codes = [f.code for f in conversion_findings(req, script("qwen3-4B"))]
    assert codes == ["MC010"]
