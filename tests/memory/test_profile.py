import pytest

from core.memory.onboarding import build_profile
from core.model_scripts import match_model


@pytest.mark.parametrize("path", ["/data/train.jsonl", "/d/x.parquet", "/data/my set/$(reboot).jsonl",
                                  "/data/t.jsonl@[0:100]", "relative/t.jsonl"], ids=str)
def test_accepted_data_paths(path):
    result = build_profile("default", "Qwen3-4B", path, "8")
    assert result.errors == {} and result.profile.data_path == path


@pytest.mark.parametrize(("path", "says"), [
    ("/data/train.csv", "only .jsonl or .parquet"),
    ("/data/train.JSONL", "case-sensitively"),
    ("/data/train.json", "one object per line"),
    ("https://hf.co/x.jsonl", "not a URL"),
    ("/data/a\nb.jsonl", "single line"),
    ("   ", "empty"),
], ids=str)
def test_refused_data_paths_say_why(path, says):
    result = build_profile("default", "Qwen3-4B", path, "8")
    assert result.profile is None and says in result.errors["data_path"]


@pytest.mark.parametrize(("gpus", "per_node", "says"), [
    ("0", None, "GPUs"), ("-3", None, "not a whole number"), ("eight", None, "not a whole number"),
    ("99999999999999", None, "more than any slime run"), ("8", "3", "do not split into whole nodes"),
    ("8", "16", "cannot exceed"), ("1e3", None, "not a whole number"),
], ids=str)
def test_absurd_gpu_counts_are_refused_specifically(gpus, per_node, says):
    result = build_profile("default", "Qwen3-4B", "/d/t.jsonl", gpus, per_node)
    assert result.profile is None and says in " ".join(result.errors.values())


def test_nodes_are_derived_from_gpus_per_node():
    p = build_profile("default", "Qwen3-4B", "/d/t.jsonl", "16", "8").profile
    assert (p.nodes, p.per_node) == (2, 8)


@pytest.mark.parametrize(("name", "status", "script"), [
    ("Qwen3-4B", "exact", "qwen3-4B"), ("Qwen/Qwen3-4B-Instruct-2507", "exact", "qwen3-4B-Instruct-2507"),
    ("/ckpt/Qwen3-8B-hf", "exact", "qwen3-8B"), ("Qwen3-72B", "family", None), ("Mistral-7B", "unknown", None),
], ids=str)
def test_model_names_match_slimes_model_scripts(name, status, script):
    m = match_model(name)
    assert m.status == status
    if script:
        assert m.scripts[0].name == script and m.scripts[0].path == f"scripts/models/{script}.sh"
    if status == "unknown":
        assert "outside what we can check" in m.message


@pytest.mark.parametrize("gpus", ["²", "①", "８", "٣"], ids=str)
def test_non_ascii_digits_are_refused_not_crashed(gpus):
    result = build_profile("default", "Qwen3-4B", "/d/t.jsonl", gpus)
    assert result.profile is None and "not a whole number" in result.errors["gpus_total"]


def test_onboarding_messages_never_carry_library_wording():
    from core.memory.onboarding import build_profile

    long_model = build_profile("default", "m" * 500, "/d/x.jsonl", "8")
    assert long_model.errors["model"] == "Model: this is longer than the 200 characters we keep"
    big_node = build_profile("default", "Qwen3-4B", "/d/x.jsonl", "8", "2000")
    assert "GPUs per node" in big_node.errors["gpus_per_node"] and "2000" not in big_node.errors["gpus_per_node"]
    assert "at most 1024" in big_node.errors["gpus_per_node"]


def test_the_gpu_model_is_optional_and_profiles_saved_before_it_still_load():
    from core.memory.profile import Profile

    saved_before = {"name": "default", "model": "Qwen3-4B", "data_path": "/d/train.jsonl", "gpus_total": 8,
                    "gpus_per_node": None, "slime_checkout": None}
    assert Profile.model_validate(saved_before).gpu_model is None
    assert Profile.model_validate({**saved_before, "gpu_model": "  H100-80GB "}).gpu_model == "H100-80GB"
    assert Profile.model_validate({**saved_before, "gpu_model": " "}).gpu_model is None
    with pytest.raises(ValueError, match="single line"):
        Profile.model_validate({**saved_before, "gpu_model": "H100\nrm -rf"})
