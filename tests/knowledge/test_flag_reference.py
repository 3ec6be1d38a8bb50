"""The flag reference: help and group read at the cited line, usage read from launch scripts with the static
bash reader, rows as the page shows them, spelling-tolerant lookup and links."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from core.knowledge.flags import (
    REFERENCE_PATH,
    default_text,
    filter_rows,
    find_flag,
    flag_rows,
    flag_url,
    help_and_groups,
    link_flags,
    load_flag_reference,
    normalise_flag,
    reference_to_json,
    script_usage,
)
from core.launch import load_catalog
from core.pins import pinned_source_dir

SLIME = pinned_source_dir("slime")
ARGS_SOURCE = '''
def add_slime_arguments(parser):
    def add_rollout_arguments(parser):
        parser.add_argument(
            "--rollout-x", type=int, default=None,
            help="How many " "prompts " f"per {'rollout'}.",
        )
        return parser

    group = parser.add_argument_group(title="network size")
    group.add_argument("--layers", type=int, help="Layer count.")


class ServerArgs:
    # -----------------------------------------------------------------
    # Memory and scheduling
    # -----------------------------------------------------------------
    mem_fraction: A[float, "Fraction of memory."] = 0.9

class TransformerConfig:
    hidden: int = 0
    """Hidden size."""
'''


def _flag(primary: str, line: int) -> SimpleNamespace:
    return SimpleNamespace(primary=primary, source=f"pkg/args.py:{line}@pin1")


def test_help_and_group_are_read_at_the_cited_line(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "args.py").write_text(ARGS_SOURCE)
    flags = [_flag("--rollout-x", 5), _flag("--layers", 11), _flag("--mem-fraction", 18),
             _flag("--hidden", 21), _flag("--nowhere", 1), SimpleNamespace(primary="--other", source="x.py:3@pin2")]
    got = help_and_groups(flags, {"pin1": tmp_path})
    assert got["--rollout-x"] == ("How many prompts per {'rollout'}.", "rollout")
    assert got["--layers"] == ("Layer count.", "network size")
    assert got["--mem-fraction"] == ("Fraction of memory.", "Memory and scheduling")
    assert got["--hidden"] == ("Hidden size.", "TransformerConfig")
    assert "--nowhere" not in got and "--other" not in got


def test_usage_is_read_from_launch_scripts_statically(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "run-a.sh").write_text("#!/bin/bash\nARGS=(--rollout-batch-size 32 --n-samples-per-prompt 8)\n"
                                      "ray job submit -- python3 train.py ${ARGS[@]} --colocate\n")
    (scripts / "run-b.sh").write_text("python3 train_async.py --rollout-batch-size $(nproc) --lr 1e-6\n")
    # $(nproc) is never run: its value counts as one the shell sets
    (scripts / "helper.sh").write_text("echo not a launch script --rollout-batch-size 1\n")
    read, usage = script_usage(tmp_path)
    assert read == 2
    rbs = usage["--rollout-batch-size"]
    assert rbs.values == {"32": 1, "(set by the shell at run time)": 1}
    assert rbs.examples == ["scripts/run-a.sh", "scripts/run-b.sh"]
    assert usage["--colocate"].scripts == 1 and usage["--colocate"].values == {"(switch given)": 1}
    assert usage["--lr"].values == {"1e-6": 1}


def test_rows_carry_owner_type_default_help_group_source_and_usage():
    rows = {r.flag: r for r in flag_rows(load_catalog())}
    assert len(rows) == len(load_catalog().flags)
    rbs = rows["--rollout-batch-size"]
    assert (rbs.owner, rbs.type, rbs.group) == ("slime", "int", "data")
    assert rbs.default == "required (no default: the run does not start without it)"  # issue 28: not "unset"
    assert rbs.help and "prompts" in rbs.help and rbs.source == "slime/utils/arguments.py:690@624b824a"
    assert rbs.usage.scripts >= 40 and "32" in rbs.usage.values
    assert any(r.deprecated for r in rows.values())
    assert {r.owner for r in rows.values()} == {"slime", "megatron", "sglang", "router"}


def test_our_help_stands_beside_the_source_s():
    from core.knowledge.cards import SOURCE_RE
    from core.knowledge.flags import load_our_help

    rows = {r.flag: r for r in flag_rows(load_catalog())}
    ours = load_our_help()
    assert ours and set(ours) <= set(rows)
    for flag, help_ in ours.items():
        assert SOURCE_RE.match(help_.source) and help_.source.endswith("@624b824a")
        assert rows[flag].our_help, flag
    assert rows["--normalize-advantages"].our_help == ours["--normalize-advantages"].help
    assert rows["--normalize-advantages"].our_help_source.startswith("slime/backends/megatron_utils/loss.py:")
    assert rows["--normalize-advantages"].help is None  # the source gives none
    assert rows["--colocate"].our_help and rows["--colocate"].help  # both: the catalog's words and the source's


def test_default_text_is_the_source_s():
    spec = SimpleNamespace(default_repr=None, default=None)
    assert default_text(spec) == "unset"
    assert default_text(SimpleNamespace(default_repr="'{}'", default={})) == "'{}'"
    assert default_text(SimpleNamespace(default_repr=None, default="abc")) == "'abc'"
    assert default_text(SimpleNamespace(default_repr=None, default=False)) == "False"
    assert default_text(SimpleNamespace(default_repr=None, default=None, required=True)).startswith("required")


def test_three_spellings_and_filters():
    options = [o for f in load_catalog().flags for o in f.option_strings]
    for text in ("--rollout-batch-size", "rollout_batch_size", "rollout batch size", " Rollout-Batch-Size "):
        assert find_flag(text, options) == "--rollout-batch-size"
    assert normalise_flag("--lr=1e-6") == "--lr"
    rows = flag_rows(load_catalog())
    assert filter_rows(rows, "rollout batch size")[0].flag == "--rollout-batch-size"
    sglang_bools = filter_rows(rows, "", owners=["sglang"], types=["bool"])
    assert sglang_bools and all(r.owner == "sglang" and r.type == "bool" for r in sglang_bools)
    grouped = filter_rows(rows, "", groups=["rollout"])
    assert grouped and all(r.group == "rollout" for r in grouped)


def test_links_only_for_known_flags_in_our_markdown():
    text = "Use `--lr 1e-6` and `--no-such-flag`.\n```bash\n--lr 1\n```\n[`--lr`](elsewhere)"
    out = link_flags(text, {"--lr"})
    assert out.startswith("Use [`--lr 1e-6`](flags?flag=--lr) and `--no-such-flag`.")
    assert "```bash\n--lr 1\n```" in out and "[`--lr`](elsewhere)" in out
    assert flag_url("--x](javascript:alert(1))") == "flags?flag=--x%5D%28javascript%3Aalert%281%29%29"


def test_committed_reference_matches_the_catalog():
    reference = load_flag_reference()
    assert set(reference.flags) == {f.primary for f in load_catalog().flags}
    assert reference.scripts_read >= 40 and sum(1 for f in reference.flags.values() if f.help) > 1000


@pytest.mark.skipif(not (SLIME / "scripts").is_dir(), reason="needs the pinned slime checkout (make sources)")
def test_committed_usage_is_what_the_scripts_say():
    read, usage = script_usage(SLIME)
    reference = load_flag_reference()
    assert read == reference.scripts_read
    assert usage["--rollout-batch-size"] == reference.flags["--rollout-batch-size"].usage
    assert reference_to_json(reference) == REFERENCE_PATH.read_bytes()


def test_the_tool_writes_a_reference_for_every_catalog_flag(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_flag_reference", Path(__file__).resolve().parents[2]
                                                  / "tools" / "build_flag_reference.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.sh").write_text("python3 train.py --lr 1e-6 --colocate\n")
    out = tmp_path / "reference.json"
    assert tool.main(["--slime", str(tmp_path), "--out", str(out)]) == 0
    reference = load_flag_reference(out)
    assert set(reference.flags) == {f.primary for f in load_catalog().flags} and reference.scripts_read == 1
    assert reference.flags["--lr"].usage.values == {"1e-6": 1}
    assert "set by at least one of 1 launch scripts" in capsys.readouterr().out


def test_sglang_fields_declared_with_arg_metadata_have_their_help():
    """SGLang declares most server flags as `A[T, "help"]`, about a hundred as `A[T, Arg(help=...)]`: both
    forms give the flag its help text (only the ones SGLang hides from --help have none)."""
    from core.knowledge.flags import _FileFacts

    facts = _FileFacts('class S:\n    a: A[int, Arg(help="Tensor size.", aliases=["-a"])] = 1\n'
                       '    b: A[int, "Plain help."] = 2\n    c: A[int, Arg(choices=[1])] = 3\n')
    assert [facts.by_line[n][0] for n in (2, 3, 4)] == ["Tensor size.", "Plain help.", None]
    reference = load_flag_reference()
    sglang = [f for f in load_catalog().flags if f.owner == "sglang" and "server_args.py" in (f.source or "")]
    assert len(sglang) > 400
    hidden = {"--sglang-forward-pass-metrics-ipc-name", "--sglang-forward-pass-metrics-worker-id",
              "--sglang-speculative-dflash-draft-window-size"}  # help=argparse.SUPPRESS upstream
    assert {f.primary for f in sglang if not reference.flags[f.primary].help} == hidden
    assert reference.flags["--sglang-attention-backend"].help == "Choose the kernels for attention layers."
