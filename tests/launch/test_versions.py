"""Checking against the user's own versions (issue 19): any slime checkout's parser read piece by piece, the
per-checkout catalog cache, the versions on every report, rules gated on the code they judge, and the
SGLang/Megatron of the user's environment.

Synthetic trees reproduce each parser shape met in slime's history (Sep 2025 to May 2026); the older trees
themselves are used when extracted (see benchmarks/bench_versions.py), and skipped otherwise.
"""

from __future__ import annotations

import glob
import io
import json
import os
import sys
import zlib
from pathlib import Path

import pytest

import core.launch.versions as versions
from core.cli import main
from core.launch.catalog import LayerVersion, same_version
from core.launch.catalog_build import build_catalog
from core.launch.catalog_build.checkout import content_key, read_docker, read_git
from core.launch.check import CheckOptions, check_arg_list, check_script_bytes
from core.pins import pinned_source_dir

ROOT = Path(__file__).resolve().parents[2]
PINNED_SLIME = pinned_source_dir("slime")
SGLANG_WHEEL = pinned_source_dir("sglang")

# slime/utils/arguments.py as older commits shaped it: no pre-parse step (the backend came from an environment
# variable), the SGLang flags registered on the main parser, validation in one function.
OLD_ARGUMENTS = '''import argparse
import os

from slime.backends.sglang_utils.arguments import add_sglang_arguments


def get_slime_extra_args_provider(add_custom_arguments=None):
    def add_slime_arguments(parser):
        parser.add_argument("--rollout-batch-size", type=int, required=True)
        parser.add_argument("--rollout-temperature", type=float, default=1.0)
        parser.add_argument("--use-slime-router", action="store_true", default=False)
        parser.add_argument("--colocate", action="store_true", default=False)
        parser.add_argument("--num-rollout", type=int, default=None)
        parser.add_argument("--hf-checkpoint", type=str, default=None)
{extra}
        parser = add_sglang_arguments(parser)
        return parser

    return add_slime_arguments


def parse_args(add_custom_arguments=None):
    backend = os.environ.get("SLIME_BACKEND", "megatron").lower()
    return backend


def slime_validate_args(args):
{validate}
    return args
'''

OLD_SGLANG = '''from sglang.srt.server_args import ServerArgs


def add_sglang_arguments(parser):
    parser.add_argument("--sglang-server-concurrency", type=int, default=512)
    original = parser.add_argument
    not_exposed = ["model_path", "tp_size", "port"]

    def prefixed(*names, **kwargs):
        key = kwargs["dest"] if "dest" in kwargs else names[0][2:].replace("-", "_")
        if key in not_exposed:
            return
        renamed = [f"--sglang-{n[2:]}" for n in names if n.startswith("--")]
        if "dest" in kwargs:
            kwargs["dest"] = f"sglang_{kwargs['dest']}"
        original(*renamed, **kwargs)

    parser.add_argument = prefixed
    ServerArgs.add_cli_args(parser)
    parser.add_argument = original
    return parser
'''

OLD_FSDP = '''import argparse
import dataclasses
from dataclasses import dataclass
from typing import Optional


@dataclass
class FSDPArgs:
    lr: float = 2e-5
    attn_implementation: str = "flash_attention_2"
    gradient_checkpointing: bool = False
    fsdp_cpu_backend: Optional[str] = "gloo"
    lr_decay_iters: int | None = None
    config: Optional[str] = None


def parse_fsdp_cli(extra_args_provider=None):
    parser = argparse.ArgumentParser("FSDP")
    parser.add_argument("--config", type=str, default=None)
    for f in dataclasses.fields(FSDPArgs):
        if f.name == "config":
            continue
        if f.type is bool:
            parser.add_argument(f"--{f.name.replace('_', '-')}", action="store_true")
        else:
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=f.type, default=f.default)
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    return parser.parse_args()
'''

DOCKERFILE = "ARG SGLANG_IMAGE_TAG={sglang}\nFROM lmsysorg/sglang:${{SGLANG_IMAGE_TAG}}\nARG MEGATRON_COMMIT={megatron}\n"

BASE = ["--rollout-batch-size", "8", "--num-rollout", "2", "--hf-checkpoint", "/m", "--num-layers", "2",
        "--hidden-size", "8", "--num-attention-heads", "2", "--global-batch-size", "8", "--colocate"]


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def old_tree(root: Path, *, extra: str = "", validate: str = "    pass", fsdp: bool = True,
             sglang: str = "v0.4.9", megatron: str = "core_v0.13.0", more: dict[str, str] | None = None) -> Path:
    write(root, "slime/utils/arguments.py", OLD_ARGUMENTS.format(extra=extra, validate=validate))
    write(root, "slime/backends/sglang_utils/arguments.py", OLD_SGLANG)
    write(root, "slime/backends/megatron_utils/arguments.py", "from megatron.training.arguments import parse_args\n")
    if fsdp:
        write(root, "slime/backends/fsdp_utils/arguments.py", OLD_FSDP)
    write(root, "docker/Dockerfile", DOCKERFILE.format(sglang=sglang, megatron=megatron))
    for rel, text in (more or {}).items():
        write(root, rel, text)
    return root


def fake_git(root: Path, commit: str, *, timestamp: int | None = None, packed: bool = False) -> None:
    """A .git directory as git leaves it: HEAD naming a branch, the branch's commit (loose or packed), and
    optionally the commit object itself (zlib-compressed, as git stores a loose object)."""
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    if packed:
        (git / "packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted\n{commit} refs/heads/main\n")
    else:
        (git / "refs" / "heads" / "main").write_text(commit + "\n")
    if timestamp is not None:
        body = (f"tree {'0' * 40}\nauthor A <a@example.com> {timestamp} +0000\n"
                f"committer A <a@example.com> {timestamp} +0000\n\nmessage\n").encode()
        obj = git / "objects" / commit[:2] / commit[2:]
        obj.parent.mkdir(parents=True)
        obj.write_bytes(zlib.compress(b"commit %d\0" % len(body) + body))


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    monkeypatch.setattr(versions, "_MEMORY", {})


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["check-args", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


# -- 1. any slime checkout, read piece by piece --------------------------------------------------------------
def test_an_old_parser_layout_is_read_piece_by_piece(tmp_path):
    catalog = build_catalog(old_tree(tmp_path))
    pieces = {p.name: p for p in catalog.pieces}
    assert pieces["pre-parser"].status == "absent" and "SLIME_BACKEND" in pieces["pre-parser"].detail
    assert pieces["SGLang flags"].status == "read" and "main parser" in pieces["SGLang flags"].detail
    assert pieces["FSDP backend flags"].status == "read" and pieces["slime's own flags"].status == "read"
    assert not catalog.not_understood()
    assert catalog.lookup("--use-slime-router").owner == "slime"
    assert catalog.lookup("--sglang-mem-fraction-static").owner == "sglang"
    assert catalog.lookup_skipped("--sglang-tp-size") is not None  # this commit's own skip list
    assert catalog.lookup("--sglang-port") is None


def test_fsdp_flags_declared_by_a_dataclass_loop_are_that_backends_flags(tmp_path):
    catalog = build_catalog(old_tree(tmp_path))
    switch = catalog.lookup("--gradient-checkpointing")
    assert switch.action == "store_true" and switch.parsers == ["fsdp"] and switch.default is False
    attn = catalog.lookup("--attn-implementation")
    assert attn.type == "str" and attn.default == "flash_attention_2" and attn.takes_value
    assert catalog.lookup("--fsdp-cpu-backend").type == "str"  # Optional[str] reads as str
    assert catalog.lookup("--lr-decay-iters").type == "int"  # int | None reads as int
    assert catalog.lookup("--config").parsers == ["fsdp"]  # registered once, not again by the loop
    assert "fsdp" in catalog.parsers and "FSDPArgs.gradient_checkpointing" in " ".join(switch.notes)


@pytest.mark.parametrize(("pre", "status"), [
    ("def _pre_parse_mode():\n    p = argparse.ArgumentParser(add_help=False)\n"
     "    p.add_argument('--train-backend', choices=['megatron', 'fsdp'], default='megatron')\n"
     "    return p.parse_known_args()\n", "read"),
    ("def parse_args_train_backend():\n    parser = argparse.ArgumentParser()\n"
     "    get_slime_extra_args_provider()(parser)\n    return parser.parse_known_args()[0].train_backend\n", "read"),
    ("", "absent"),
], ids=["_pre_parse_mode", "parse_args_train_backend", "none"])
def test_each_pre_parse_shape_is_recognised(tmp_path, pre, status):
    tree = old_tree(tmp_path)
    path = tree / "slime" / "utils" / "arguments.py"
    path.write_text(path.read_text() + "\n\n" + pre)
    catalog = build_catalog(tree)
    piece = next(p for p in catalog.pieces if p.name == "pre-parser")
    assert piece.status == status
    if "_pre_parse_mode" in pre:
        assert catalog.lookup("--train-backend").choices == ["megatron", "fsdp"]


def test_a_fork_keeping_slimes_layout_is_read_the_same_way_and_its_flags_are_its_own(tmp_path):
    fork = old_tree(tmp_path / "miles", extra='        parser.add_argument("--fork-only-flag", type=int, default=3)')
    report = check_arg_list([*BASE, "--fork-only-flag", "4"], CheckOptions(catalog_path=fork))
    assert report.categories["--fork-only-flag"] == "slime"
    assert not [f for f in report.findings if f.code == "ARG001"]


def test_a_fork_that_renames_the_package_is_read_from_its_own_package(tmp_path):
    """miles keeps slime's layout under its own package name (miles/utils/arguments.py, get_miles_...)."""
    fork = old_tree(tmp_path / "src", extra='        parser.add_argument("--use-fork-router", action="store_true")')
    (fork / "slime").rename(fork / "fork")
    for path in (fork / "fork").rglob("*.py"):
        path.write_text(path.read_text().replace("slime.", "fork.").replace("get_slime_", "get_fork_"))
    fake_git(fork, "c" * 40)
    check = "    if args.rollout_temperature <= 0:\n        raise ValueError('t')"
    text = (fork / "fork/utils/arguments.py").read_text().replace("    pass\n    return args", check + "\n    return args")
    (fork / "fork/utils/arguments.py").write_text(text)
    report = check_arg_list([*BASE, "--use-fork-router", "--rollout-temperature", "0"],
                            CheckOptions(catalog_path=fork))
    assert report.categories["--use-fork-router"] == "slime"
    assert next(f for f in report.findings if f.code == "SLIME001").source.startswith("fork/utils/arguments.py:")
    catalog = versions.checkout_catalog(versions.UserSources(slime=fork))
    assert catalog.lookup("--gradient-checkpointing").source.startswith("fork/backends/fsdp_utils/arguments.py:")


def test_a_script_of_an_old_commit_has_no_false_errors_against_its_own_checkout(tmp_path):
    tree = old_tree(tmp_path, sglang="v0.5.15.post1", megatron="1dcf0dafa884ad52ffb243625717a3471643e087")
    args = [*BASE, "--use-slime-router", "--gradient-checkpointing", "--attn-implementation", "eager"]
    mine = check_arg_list(args, CheckOptions(catalog_path=tree))
    assert not [f for f in mine.findings if f.severity.value == "error"], mine.findings
    bundled = check_arg_list(args)
    assert {"--use-slime-router", "--gradient-checkpointing"} <= {f.flag for f in bundled.findings if f.code == "ARG001"}


def test_a_piece_that_is_not_understood_is_a_warning_naming_it_and_the_rest_is_still_read(tmp_path):
    broken = "import argparse\n\n\ndef sglang_parse_args():\n    parser = argparse.ArgumentParser()\n" \
             "    parser.add_argument()\n"
    tree = old_tree(tmp_path, more={"slime/backends/sglang_utils/arguments.py": OLD_SGLANG + "\n\n" + broken})
    catalog = build_catalog(tree)
    assert [p.name for p in catalog.not_understood()] == ["SGLang flags"]
    assert catalog.lookup("--use-slime-router") is not None
    report = check_arg_list(BASE, CheckOptions(catalog_path=tree))
    ver = [f for f in report.findings if f.code == "VER002"]
    assert len(ver) == 1 and ver[0].severity.value == "warning" and "SGLang flags" in ver[0].message
    assert "bundled catalog" in ver[0].message
    assert not [f for f in report.findings if "could not be used" in f.message]  # no silent whole fallback


def test_a_checkout_the_reader_cannot_use_at_all_falls_back_with_a_warning_on_top(tmp_path):
    tree = old_tree(tmp_path)
    (tree / "slime" / "utils" / "arguments.py").write_text("def get_slime_extra_args_provider(:\n")
    report = check_arg_list(BASE, CheckOptions(catalog_path=tree))
    warning = next(f for f in report.findings if "could not be used" in f.message)
    assert warning.severity.value == "warning" and "not valid Python" in warning.message
    assert [v["origin"] for v in report.summary.versions] == ["bundled pin"] * 3


# -- bad input -----------------------------------------------------------------------------------------------
def test_a_parser_file_linked_out_of_the_tree_is_not_read(tmp_path):
    outside = write(tmp_path / "elsewhere", "secret.py", OLD_FSDP)
    tree = old_tree(tmp_path / "co", fsdp=False)
    link = tree / "slime" / "backends" / "fsdp_utils" / "arguments.py"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    catalog = build_catalog(tree)
    piece = next(p for p in catalog.pieces if p.name == "FSDP backend flags")
    assert piece.status == "not understood" and "is not read" in piece.detail
    assert catalog.lookup("--gradient-checkpointing") is None


def test_a_git_head_linked_out_of_the_tree_is_not_followed(tmp_path):
    tree = old_tree(tmp_path / "co")
    (tree / ".git").mkdir()
    outside = write(tmp_path / "elsewhere", "HEAD", "a" * 40 + "\n")
    (tree / ".git" / "HEAD").symlink_to(outside)
    assert read_git(tree, [tree.resolve()]).commit is None
    (tree / ".git" / "HEAD").unlink()
    (tree / ".git").rmdir()
    write(tree, ".git", f"gitdir: {tmp_path / 'elsewhere'}\n")  # a worktree pointing out of the tree
    assert read_git(tree, [tree.resolve()]).commit is None


def test_an_oversized_sglang_module_is_refused_by_size_and_reported(tmp_path, monkeypatch):
    import core.launch.catalog_build.sources as sources

    tree = old_tree(tmp_path, more={"slime/backends/sglang_utils/arguments.py": OLD_SGLANG + "#" * 5000 + "\n"})
    monkeypatch.setattr(sources, "MAX_SOURCE_BYTES", 3000)
    catalog = build_catalog(tree)
    piece = next(p for p in catalog.pieces if p.name == "SGLang flags")
    assert piece.status == "not understood" and "bytes" in piece.detail


def test_cli_refuses_what_is_not_a_checkout_or_a_source_with_a_plain_message(capsys, tmp_path):
    script = str(ROOT / "tests" / "fixtures" / "scripts" / "good_colocate.sh")
    rc, _, err = run_cli(capsys, script, "--slime-checkout", str(tmp_path))
    assert rc == 2 and "is not a slime checkout" in err and "Traceback" not in err
    tree = old_tree(tmp_path / "co")
    rc, _, err = run_cli(capsys, script, "--slime-checkout", str(tree), "--sglang-source", str(tmp_path))
    assert rc == 2 and "neither an installed sglang package nor an SGLang checkout" in err
    rc, _, err = run_cli(capsys, script, "--slime-checkout", str(tree), "--megatron-source", str(tmp_path))
    assert rc == 2 and "not a Megatron-LM checkout" in err
    rc, _, err = run_cli(capsys, script, "--sglang-source", str(tmp_path))
    assert rc == 2 and "need --slime-checkout" in err


# -- the commit, the cache -----------------------------------------------------------------------------------
@pytest.mark.parametrize("packed", [False, True], ids=["loose-ref", "packed-ref"])
def test_the_commit_and_its_date_are_read_from_git_files(tmp_path, packed):
    commit = "0123456789abcdef0123456789abcdef01234567"
    fake_git(tmp_path, commit, timestamp=1757000000, packed=packed)
    info = read_git(tmp_path, [tmp_path.resolve()])
    assert (info.commit, info.date, info.ref) == (commit, "2025-09-04", "refs/heads/main")


def test_a_detached_head_and_a_missing_object_give_the_commit_without_a_date(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("f" * 40 + "\n")
    info = read_git(tmp_path, [tmp_path.resolve()])
    assert info.commit == "f" * 40 and info.date is None


def test_reports_cite_the_users_commit_and_show_its_date(tmp_path):
    tree = old_tree(tmp_path)
    fake_git(tree, "abcdef0123456789abcdef0123456789abcdef01", timestamp=1760000000)
    report = check_arg_list(BASE[2:], CheckOptions(catalog_path=tree))
    missing = next(f for f in report.findings if f.code == "ARG009")
    assert missing.source.startswith("slime/utils/arguments.py:") and missing.source.endswith("@abcdef01")
    slime = report.summary.versions[0]
    assert (slime["version"], slime["date"]) == ("abcdef01", "2025-10-09")


def test_the_catalog_is_cached_per_checkout_in_the_store_and_rebuilt_when_the_parser_changes(tmp_path, monkeypatch):
    tree = old_tree(tmp_path / "co")
    store = tmp_path / "store"
    first = versions.checkout_catalog(versions.UserSources(slime=tree), store_dir=store)
    files = list((store / "catalogs").glob("*.json"))
    assert len(files) == 1
    versions.clear_memory()
    monkeypatch.setattr(versions, "build_user_catalog", lambda s: pytest.fail("rebuilt although cached"))
    again = versions.checkout_catalog(versions.UserSources(slime=tree), store_dir=store)
    assert again.versions == first.versions and len(again.flags) == len(first.flags)
    assert [p.name for p in again.pieces] == [p.name for p in first.pieces]
    versions.clear_memory()
    calls = []
    monkeypatch.setattr(versions, "build_user_catalog", lambda s: calls.append(s) or first)
    path = tree / "slime" / "utils" / "arguments.py"
    path.write_text(path.read_text() + "\n# edited\n")
    versions.checkout_catalog(versions.UserSources(slime=tree), store_dir=store)
    assert len(calls) == 1


def test_a_damaged_cache_entry_is_rebuilt(tmp_path):
    tree = old_tree(tmp_path / "co")
    store = tmp_path / "store"
    versions.checkout_catalog(versions.UserSources(slime=tree), store_dir=store)
    entry = next((store / "catalogs").glob("*.json"))
    entry.write_bytes(b"{damaged")
    versions.clear_memory()
    assert versions.checkout_catalog(versions.UserSources(slime=tree), store_dir=store).lookup("--use-slime-router")


def test_the_cache_key_follows_the_commit_else_the_content(tmp_path):
    tree = old_tree(tmp_path / "co")
    by_content = versions.cache_key(versions.UserSources(slime=tree))
    assert content_key(tree, [tree.resolve()]) != content_key(old_tree(tmp_path / "other", extra="        pass"),
                                                               [(tmp_path / "other").resolve()])
    fake_git(tree, "1" * 40)
    by_commit = versions.cache_key(versions.UserSources(slime=tree))
    (tree / ".git" / "refs" / "heads" / "main").write_text("2" * 40 + "\n")
    assert len({by_content, by_commit, versions.cache_key(versions.UserSources(slime=tree))}) == 3


# -- rules that know which version they judge ---------------------------------------------------------------
def test_a_rule_runs_only_when_the_checkout_has_the_code_it_judges_and_cites_that_line(tmp_path):
    args = [*BASE, "--rollout-temperature", "0"]
    without = check_arg_list(args, CheckOptions(catalog_path=old_tree(tmp_path / "old")))
    assert "SLIME001" not in {f.code for f in without.findings}
    note = next(f for f in without.findings if f.code == "VER003")
    assert "SLIME001" in note.message and note.severity.value == "info"
    check = "    if args.rollout_temperature <= 0:\n        raise ValueError('temperature')"
    tree = old_tree(tmp_path / "new", validate=check)
    fake_git(tree, "fedcba9876543210fedcba9876543210fedcba98")
    found = next(f for f in check_arg_list(args, CheckOptions(catalog_path=tree)).findings if f.code == "SLIME001")
    line = next(i for i, t in enumerate((tree / "slime/utils/arguments.py").read_text().splitlines(), 1)
                if "rollout_temperature <= 0" in t)
    assert found.severity.value == "error" and found.source == f"slime/utils/arguments.py:{line}@fedcba98"


def test_the_bundled_catalog_runs_every_rule():
    report = check_arg_list([*BASE, "--rollout-temperature", "0"])
    assert "SLIME001" in {f.code for f in report.findings}
    assert not [f for f in report.findings if f.code.startswith("VER")]


@pytest.mark.skipif(not PINNED_SLIME.is_dir(), reason="the pinned slime tree is not extracted")
def test_every_declared_dependency_is_found_at_the_pin():
    from core.launch.rules.registry import REQUIREMENTS
    from core.launch.rules.versions import CodeGate

    gate = CodeGate(PINNED_SLIME, "624b824a")
    assert REQUIREMENTS and not [c for c, dep in REQUIREMENTS.items() if gate.line_of(dep) is None]


def test_megatron_checks_are_skipped_under_another_training_backend(tmp_path):
    extra = '        parser.add_argument("--train-backend", choices=["megatron", "fsdp"], default="megatron")'
    tree = old_tree(tmp_path, extra=extra)
    args = ["--rollout-batch-size", "8", "--num-rollout", "2", "--hf-checkpoint", "/m", "--train-backend", "fsdp"]
    report = check_arg_list(args, CheckOptions(catalog_path=tree))
    assert "MEG006" not in {f.code for f in report.findings}
    assert any(f.code == "VER004" and "MEG006" in f.message for f in report.findings)


# -- SGLang and Megatron of the user's environment -----------------------------------------------------------
def test_a_differing_sglang_or_megatron_makes_unknown_flags_of_that_layer_warnings(tmp_path):
    tree = old_tree(tmp_path)
    report = check_arg_list([*BASE, "--sglang-made-up-flag", "1", "--made-up-megatron-flag"],
                            CheckOptions(catalog_path=tree))
    unknown = {f.flag: f for f in report.findings if f.code == "ARG001"}
    assert unknown["--sglang-made-up-flag"].severity.value == "warning"
    assert "v0.4.9" in unknown["--sglang-made-up-flag"].message
    assert unknown["--made-up-megatron-flag"].severity.value == "warning"
    ver = {f.message.split(" ")[4]: f for f in report.findings if f.code == "VER001"}
    assert {"SGLang", "Megatron"} <= set(ver) and all(f.severity.value == "warning" for f in ver.values())
    assert "--sglang-source" in ver["SGLang"].fix and "--megatron-source" in ver["Megatron"].fix


def test_a_near_miss_of_slimes_own_flag_stays_an_error_whatever_megatron_runs(tmp_path):
    tree = old_tree(tmp_path)  # its Dockerfile names another Megatron than the catalog's
    report = check_arg_list([*BASE, "--rollout-temprature", "0.7"], CheckOptions(catalog_path=tree))
    typo = next(f for f in report.findings if f.code == "ARG001")
    assert typo.severity.value == "error" and "--rollout-temperature" in typo.fix


def test_the_same_versions_as_the_bundled_catalog_keep_unknown_flags_errors(tmp_path):
    tree = old_tree(tmp_path, sglang="v0.5.15.post1-cu129", megatron="1dcf0dafa884ad52ffb243625717a3471643e087")
    report = check_arg_list([*BASE, "--sglang-made-up-flag", "1"], CheckOptions(catalog_path=tree))
    assert next(f for f in report.findings if f.code == "ARG001").severity.value == "error"
    assert not [f for f in report.findings if f.code == "VER001"]


def test_the_docker_files_say_which_sglang_and_megatron_a_checkout_runs(tmp_path):
    tree = old_tree(tmp_path)
    write(tree, "docker/version.txt", "nightly-dev-20250901a\n")
    docker = read_docker(tree, [tree.resolve()])
    assert (docker.sglang, docker.megatron, docker.image_version) == ("v0.4.9", "core_v0.13.0", "nightly-dev-20250901a")
    assert docker.sglang_origin == "docker/Dockerfile:1 of your checkout"


@pytest.mark.parametrize("shape", ["package", "wheel", "checkout"])
def test_an_sglang_source_is_an_installed_package_a_wheel_or_a_checkout(tmp_path, shape):
    base = {"package": tmp_path / "site" / "sglang", "wheel": tmp_path / "whl" / "sglang",
            "checkout": tmp_path / "repo" / "python" / "sglang"}[shape]
    write(base, "srt/server_args.py", "")
    given = {"package": base, "wheel": base.parent, "checkout": base.parent.parent}[shape]
    assert versions.sglang_root(given) == base.parent


@pytest.mark.skipif(not (SGLANG_WHEEL / "sglang").is_dir(), reason="the SGLang wheel is not extracted")
def test_flags_come_from_the_users_sglang_when_given(tmp_path):
    tree = old_tree(tmp_path)
    catalog = versions.checkout_catalog(versions.UserSources(slime=tree, sglang=SGLANG_WHEEL / "sglang"),
                                        store_dir=tmp_path / "store")
    sglang = catalog.version_of("sglang")
    assert sglang.version == "v0.5.15.post1" and "your SGLang source" in sglang.origin and not sglang.differs
    assert catalog.lookup("--sglang-mem-fraction-static").source.startswith("python/sglang/")


def test_every_report_shows_the_versions_it_was_checked_against(capsys, tmp_path, monkeypatch):
    script = str(ROOT / "tests" / "fixtures" / "scripts" / "good_colocate.sh")
    rc, out, _ = run_cli(capsys, script)
    assert "checked against: slime 624b824a of 2026-08-21 (bundled pin); Megatron 1dcf0daf (bundled pin)" in out
    tree = old_tree(tmp_path / "co")
    monkeypatch.setenv(versions.ENV_SLIME, str(tree))
    rc, out, _ = run_cli(capsys, script, "--format", "json")
    doc = json.loads(out)
    assert doc["versions"][0]["origin"].startswith(f"your checkout {tree}")
    sglang = doc["versions"][2]
    assert sglang["runs"] == "v0.4.9" and sglang["differs"] is True


def test_same_version_reads_tags_and_commits_alike():
    assert same_version("v0.5.15.post1-cu129", "v0.5.15.post1") and same_version("1dcf0dafa884ad52ff", "1dcf0daf")
    assert not same_version("latest", "v0.5.15.post1") and not same_version("core_v0.14.0", "1dcf0daf")
    v = LayerVersion(layer="megatron", version="1dcf0daf", origin="bundled pin", runs="main", runs_origin="x")
    assert v.differs and "your environment runs main (x)" in v.describe()


# -- the older trees themselves, when extracted -------------------------------------------------------------
# Older slime trees and SGLang wheels are read only where the environment names them (a glob; see
# benchmarks/bench_versions.py): a test reads nothing outside the checkout and its own temporary folders.
OLD_TREES = sorted(Path(t) for t in glob.glob(os.environ.get("SLIME_ASSISTANT_OLD_TREES", "")) if t
                   and glob.glob(f"{t}/*/utils/arguments.py"))
def _continuation_broken(text: str, tree: Path) -> bool:
    """`${MODEL_ARGS[@]}` on a line after one that does not end in a backslash: bash runs it as a command."""
    lines = text.splitlines()
    return any(i and line.strip().startswith("${MODEL_ARGS[@]}") and not lines[i - 1].rstrip().endswith("\\")
               for i, line in enumerate(lines))


KNOWN_BREAKS = {  # scripts really broken at some commits (when the condition holds), which must stay flagged
    "scripts/run-kimi-k2-Instruct.sh": ("SCRIPT008", _continuation_broken),
    "scripts/run-qwen2.5-0.5B-reproducibility.sh": (  # sources scripts/scripts/models/... from scripts/
        "SCRIPT012", lambda text, tree: '"${SCRIPT_DIR}/scripts/models/' in text),
    "examples/low_precision/run-moonlight-16B-A3B-int4.sh": (  # sources ../../models/, a folder slime lacks
        "SCRIPT012", lambda text, tree: "${SCRIPT_DIR}/../../models/" in text and not (tree / "models").is_dir()),
}


@pytest.mark.skipif(not OLD_TREES, reason="no older slime trees extracted (see benchmarks/bench_versions.py)")
@pytest.mark.parametrize("tree", OLD_TREES, ids=lambda t: t.name)
def test_an_older_checkout_judges_its_own_scripts_by_its_own_code(tree):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_versions import check_tree
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    row = check_tree(tree)
    assert row["fallbacks"] == 0 and row["unexplained"] == []
    for rel, (code, is_broken) in KNOWN_BREAKS.items():
        path = tree / rel
        if not path.is_file() or not is_broken(path.read_text(errors="replace"), tree):
            continue
        report = check_script_bytes(path.read_bytes(), CheckOptions(catalog_path=tree, script_path=path))
        assert code in {f.code for f in report.findings if f.severity.value == "error"}, rel


def test_stdin_is_checked_against_the_checkout_from_the_environment(monkeypatch, capsys, tmp_path):
    tree = old_tree(tmp_path / "co", sglang="v0.5.15.post1", megatron="1dcf0daf")
    monkeypatch.setenv(versions.ENV_SLIME, str(tree))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(" ".join([*BASE, "--use-slime-router"]).encode())))
    rc, out, _ = run_cli(capsys, "-", "--entry", "train.py")
    assert rc == 0 and "ARG001" not in out and f"your checkout {tree}" in out


# -- the other places that follow the user's versions -------------------------------------------------------
def test_ask_matches_a_traceback_against_the_users_checkout_lines(capsys, tmp_path):
    check = "    assert args.num_rollout is not None, 'set --num-rollout or --num-epoch'"
    tree = old_tree(tmp_path / "co", validate=check)
    line = next(i for i, t in enumerate((tree / "slime/utils/arguments.py").read_text().splitlines(), 1)
                if "assert args.num_rollout" in t)
    traceback = (f'Traceback (most recent call last):\n  File "/root/slime/slime/utils/arguments.py", line {line}, '
                 "in slime_validate_args\nAssertionError: set --num-rollout or --num-epoch\n")
    rc = main(["ask", "--slime-checkout", str(tree), "--format", "json", traceback])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["checkout"]["errors"][0]["source"] == f"slime/utils/arguments.py:{line}"
    assert doc["checkout"]["errors"][0]["matched"] in ("message", "traceback-line")  # located on their line
    rc = main(["ask", "--slime-checkout", str(tmp_path / "nothing"), "x"])
    assert rc == 2 and "is not a directory" in capsys.readouterr().err


def test_a_draft_is_checked_against_the_users_checkout_when_given(capsys, tmp_path, monkeypatch):
    tree = old_tree(tmp_path / "co")
    argv = ["draft", "grpo", "--model", "Qwen3-4B", "--data", "/d/x.jsonl", "--gpus", "8", "--format", "json"]
    main(argv)
    pinned = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    monkeypatch.setenv(versions.ENV_SLIME, str(tree))
    main(argv)
    mine = json.loads(capsys.readouterr().out)["findings"]
    assert "VER001" not in pinned and "VER001" in {f["code"] for f in mine}
    assert any(f["code"] == "ARG001" for f in mine)  # the draft uses flags this small slime does not define


def test_a_cli_draft_sources_the_model_script_of_the_users_checkout(capsys, tmp_path, monkeypatch):
    tree = old_tree(tmp_path / "co", more={"scripts/models/myco-7B.sh": "MODEL_ARGS=(\n   --num-layers 4\n)\n"})
    argv = ["draft", "grpo", "--model", "myco-7B", "--data", "/d/x.jsonl", "--gpus", "8"]
    main(argv)
    assert "source scripts/models/myco-7B.sh" not in capsys.readouterr().out  # slime ships none at the pin
    main([*argv, "--slime-checkout", str(tree)])
    assert "source scripts/models/myco-7B.sh" in capsys.readouterr().out


def test_the_model_script_picker_reads_the_checkouts_own_scripts(tmp_path):
    from core.model_scripts import match_model

    tree = old_tree(tmp_path / "co", more={
        "scripts/models/tiny-1B.sh": 'N=4\nMODEL_ARGS=(\n   --num-layers ${N}\n   --swiglu\n   --hidden-size 64\n)\n'})
    fake_git(tree, "9" * 40)
    scripts = versions.checkout_model_scripts(tree)
    [tiny] = scripts
    assert tiny.model_args == ["--num-layers", "4", "--swiglu", "--hidden-size", "64"]
    assert tiny.values == {"num-layers": "4", "swiglu": None, "hidden-size": "64"}
    assert tiny.source == "scripts/models/tiny-1B.sh@99999999"
    assert match_model("org/tiny-1B", scripts).status == "exact"


def test_each_check_of_a_rule_is_judged_by_its_own_code(tmp_path):
    """SLIME021 bundles three of slime's checks; a commit with only the --colocate one keeps only that one."""
    extra = "\n".join(f'        parser.add_argument("{flag}", {kind})' for flag, kind in (
        ("--update-weight-mode", 'default="full"'), ("--update-weight-transport", 'default="nccl"'),
        ("--update-weight-local-checkpoint-dir", "default=None")))
    validate = ('    if args.update_weight_mode == "delta":\n'
                '        if args.update_weight_transport not in ("nccl", "disk"):\n            raise ValueError("t")\n'
                '        if args.colocate:\n            raise ValueError("c")')
    tree = old_tree(tmp_path, extra=extra, validate=validate)
    report = check_arg_list([*BASE, "--update-weight-mode", "delta"], CheckOptions(catalog_path=tree))
    kept = [f for f in report.findings if f.code == "SLIME021"]
    assert [f.flag for f in kept] == ["--colocate"] and kept[0].source.startswith("slime/utils/arguments.py:")
    note = next(f for f in report.findings if f.code == "VER003")
    assert "delta updates need disk transport" in note.message and "local checkpoint dir" in note.message
    assert len([f for f in check_arg_list([*BASE, "--update-weight-mode", "delta"]).findings
                if f.code == "SLIME021"]) == 3  # all three at the pin


@pytest.mark.parametrize(("dockerfile", "sglang"), [
    ("FROM lmsysorg/sglang:dev AS base\n", "dev"),
    ("ARG SGLANG_VERSION=v0.4.6\nFROM lmsysorg/sglang:${SGLANG_VERSION}\n", "v0.4.6"),
    ("FROM ubuntu:22.04\n", "a version the Dockerfile does not state"),
], ids=["from-line", "arg", "unstated"])
def test_the_sglang_image_is_read_from_the_dockerfile_in_each_shape(tmp_path, dockerfile, sglang):
    tree = old_tree(tmp_path, more={"docker/Dockerfile": dockerfile})
    docker = read_docker(tree, [tree.resolve()])
    assert docker.sglang == sglang and docker.megatron == "a commit the Dockerfile does not state"
    catalog = versions.checkout_catalog(versions.UserSources(slime=tree), store_dir=tmp_path / "store")
    assert catalog.version_of("sglang").differs and catalog.version_of("megatron").differs


PROVIDED = '''        def add_user_provided_function_arguments(parser):
            args_partial, _ = parser.parse_known_args()
            for path in [args_partial.custom_generate_function_path]:
                fn = load_function(path)
                if fn is not None and callable(getattr(fn, "add_arguments", None)):
                    fn.add_arguments(parser)
            return parser
        parser.add_argument("--custom-generate-function-path", type=str, default=None)'''

GENERATE = '''import argparse


async def generate(args, sample):
    return sample


def _add_arguments(parser: argparse.ArgumentParser):
    parser.add_argument("--agent-max-turns", type=int, default=4)
    parser.add_argument("--agent-verbose", action="store_true")


generate.add_arguments = _add_arguments
'''


def test_flags_a_named_function_adds_at_start_up_are_read_from_the_checkout(tmp_path):
    tree = old_tree(tmp_path, extra=PROVIDED, more={"slime/rollout/agent.py": GENERATE})
    catalog = build_catalog(tree)
    assert catalog.function_flag_dests == ["custom_generate_function_path"]
    args = [*BASE, "--custom-generate-function-path", "slime.rollout.agent.generate", "--agent-max-turns", "x",
            "--agent-verbose"]
    report = check_arg_list(args, CheckOptions(catalog_path=tree))
    assert report.categories["--agent-max-turns"] == "slime" and report.categories["--agent-verbose"] == "slime"
    assert any(f.code == "ARG006" and f.flag == "--agent-max-turns" for f in report.findings)  # an int, read too
    elsewhere = [*BASE, "--custom-generate-function-path", "my_code.gen.generate", "--agent-max-turns", "3"]
    report = check_arg_list(elsewhere, CheckOptions(catalog_path=tree))
    assert next(f for f in report.findings if f.flag == "--agent-max-turns").severity.value == "warning"
    assert any(f.code == "VER002" and "my_code.gen.generate" in f.message for f in report.findings)


def test_a_patch_already_applied_to_an_installed_package_is_not_reported():
    from core.launch.catalog_build import FilePatch, apply_patch
    from core.launch.catalog_build.sources import already_applied

    patch = FilePatch(patch_cite="docker/patch/latest/x.patch", pin="p",
                      hunks=[(2, [(" ", "b", 1), ("+", "added", 2), (" ", "c", 3)])])
    original = "a\nb\nc\nd"
    patched, _, _ = apply_patch(original, patch)
    assert patched == "a\nb\nadded\nc\nd"
    assert already_applied(patched, patch) and not already_applied(original, patch)


OLD_SGLANG_DIR = os.environ.get("SLIME_ASSISTANT_OLD_SGLANG", "")  # e.g. sglang 0.5.5.post1, unpacked
OLD_SGLANG_WHEEL = Path(OLD_SGLANG_DIR) if OLD_SGLANG_DIR else None


@pytest.mark.skipif(OLD_SGLANG_WHEEL is None or not (OLD_SGLANG_WHEEL / "sglang" / "srt" / "server_args.py").is_file()
                    or not OLD_TREES,
                    reason="no older SGLang wheel unpacked, or no older slime tree")
def test_an_older_sglang_given_as_the_source_judges_sglang_flags_with_certainty(tmp_path):
    tree = next((t for t in OLD_TREES if (t / "scripts" / "run-deepseek-r1.sh").is_file()), OLD_TREES[0])
    script = tree / "scripts" / "run-deepseek-r1.sh"
    options = CheckOptions(catalog_path=tree, sglang_source=OLD_SGLANG_WHEEL, script_path=script)
    report = check_script_bytes(script.read_bytes(), options)
    sglang = next(v for v in report.summary.versions if v["layer"] == "sglang")
    assert sglang["origin"].startswith("your SGLang source") and sglang["version"].startswith("v0.5")
    unknown = [f for f in report.findings if f.code == "ARG001" and f.flag and f.flag.startswith("--sglang-")]
    assert all(f.severity.value == "error" for f in unknown)  # read from the real SGLang: no doubt left


MEGATRON_ARGS = '''import argparse


def _add_optional_args(parser):
    try:
        from megatron.core.extensions.kitchen import Provider
        have_it = True
    except ImportError:
        have_it = False
    if have_it:
        parser.add_argument("--kitchen-recipe", type=int, default=None)
        return parser
    else:
        return parser


def _add_size_args(parser):
    parser.add_argument("--num-layers", type=int, default=None)
    parser.add_argument("--hidden-size", type=int, default=None)
    parser.add_argument("--num-attention-heads", type=int, default=None)
    parser.add_argument("--global-batch-size", type=int, default=None)
    return parser


def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    parser = _add_optional_args(parser)
    parser = _add_size_args(parser)
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    args, _ = parser.parse_known_args()
    return args
'''


def test_an_older_megatron_source_is_read_through_slimes_re_exported_parse_args(tmp_path):
    """Megatron core_v0.14-style helpers return the parser from both sides of an if on an optional import."""
    tree = old_tree(tmp_path / "slime")
    megatron = tmp_path / "Megatron-LM"
    write(megatron, "megatron/training/arguments.py", MEGATRON_ARGS)
    write(megatron, "megatron/core/package_info.py", "MAJOR = 0\nMINOR = 14\nPATCH = 0\n")
    catalog = versions.checkout_catalog(versions.UserSources(slime=tree, megatron=megatron),
                                        store_dir=tmp_path / "store")
    assert catalog.version_of("megatron").version == "core_v0.14.0"
    assert catalog.lookup("--hidden-size").owner == "megatron" and catalog.lookup("--kitchen-recipe") is not None
    assert catalog.lookup("--use-slime-router").owner == "slime"  # slime's provider ran after both helpers
    assert "--lr" not in {o for f in catalog.flags for o in f.option_strings if f.owner == "megatron"}


# -- issue 28, defects 5 and 7: what the catalog builder parses and patches is bounded --------------------------
def far_context_patch(target: str, hunks: int, context: str) -> str:
    """A unified diff of `hunks` hunks that all claim line 1 but whose context sits far down the file."""
    body = "".join(f"@@ -1 +1,2 @@\n {context}\n+# added {k}\n" for k in range(hunks))
    return f"--- a/{target}\n+++ b/{target}\n{body}"


def test_patch_work_is_bounded_and_the_patch_said_not_applied(tmp_path):
    from core.launch.catalog_build.sources import (
        PackageRoot,
        PatchBudget,
        PatchTooCostly,
        SourceTree,
        apply_patch,
        parse_unified_diff,
    )

    rel = "megatron/training/arguments.py"
    write(tmp_path, rel, "".join(f"x{i} = {i}\n" for i in range(3_000)) + "TARGET = 1\n")
    patches = parse_unified_diff(far_context_patch(rel, 400, "TARGET = 1"), "docker/patch/latest/megatron.patch",
                                 "pin")
    write(tmp_path, "megatron/__init__.py", "")
    write(tmp_path, "megatron/training/__init__.py", "")
    with pytest.raises(PatchTooCostly, match="was not applied: finding its hunks' context took more than"):
        apply_patch((tmp_path / rel).read_text(), patches[rel], PatchBudget(100_000))
    tree = SourceTree([PackageRoot("megatron", tmp_path, "", "pin", "megatron")], {rel: [patches[rel]]},
                      [tmp_path.resolve()])
    tree.patch_budget = PatchBudget(100_000)  # 2,000,000 in a build; 90,000 hunks 3,000 lines down in the issue
    module = tree.module("megatron.training.arguments")
    assert module is not None and module.added_lines == {}  # read as it is, unpatched
    assert tree.patch_notes == ["docker/patch/latest/megatron.patch was not applied: finding its hunks' context "
                                "took more than 100,000 tries, the static reader's limit"]


def test_a_patch_with_too_many_hunks_or_bytes_is_not_applied(tmp_path, monkeypatch):
    import core.launch.catalog_build.build as build

    rel = "megatron/training/arguments.py"
    write(tmp_path, "docker/patch/latest/megatron.patch", far_context_patch(rel, 60, "TARGET = 1"))
    write(tmp_path, "docker/patch/latest/megatron-big.patch", "# " + "x" * 5_000 + "\n")
    monkeypatch.setattr(build, "MAX_PATCH_HUNKS", 50)  # 5,000 and 2,000,000 bytes in the product
    monkeypatch.setattr(build, "MAX_PATCH_BYTES", 4_000)
    notes: list[str] = []
    got = build._load_patches(tmp_path, "latest", ["megatron.patch", "megatron-big.patch"], "", "pin", "",
                              [tmp_path.resolve()], notes, [50])
    assert got == {}
    assert notes == ["docker/patch/latest/megatron.patch was not applied: it has 60 hunks, more than the static "
                     "reader applies in one build (50)",
                     "docker/patch/latest/megatron-big.patch was not applied: it is 5,003 bytes, more than the 4,000 "
                     "the static reader reads of one patch"]


def test_the_parse_limits_hold_the_pinned_build_with_room():
    from core.launch.catalog_build import sources

    # a build at the pins: 1.43 MB and about 183,000 syntax nodes in all, the largest file 324 KB and 43,000
    assert sources.MAX_SOURCE_BYTES >= 3 * 324_339 and sources.MAX_TREE_SOURCE_BYTES >= 2.5 * 1_434_503
    assert sources.MAX_SOURCE_WEIGHT >= 3 * 42_984 and sources.MAX_TREE_SOURCE_WEIGHT >= 2.5 * 183_410
    assert sources.parse_weight("x = [" + "0," * 1000 + "]\n") >= 1000  # a dense list weighs what it parses to


def test_a_dense_module_is_refused_by_weight_before_it_is_parsed(tmp_path):
    tree = old_tree(tmp_path, more={"slime/backends/sglang_utils/arguments.py": OLD_SGLANG + "BIG = ["
                                    + "0," * 160_000 + "]\n"})
    catalog = build_catalog(tree)
    piece = next(p for p in catalog.pieces if p.name == "SGLang flags")
    assert piece.status == "not understood" and "syntax nodes (long literal lists or dense code)" in piece.detail
