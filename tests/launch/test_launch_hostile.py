"""Hostile launch scripts and checkouts (issue 15): odd characters, huge integers, doubling values, and files
read through a checkout that lead outside it. Each reproducer must end in a finding, never a traceback."""

from __future__ import annotations

import json
import os

import pytest

from core.cli import main
from core.launch.check import CheckOptions, check_launch_script, check_script_bytes
from core.launch.script import (
    MAX_EXPANSION_WORK,
    MAX_VALUE_CHARS,
    read_arg_list_text,
    read_launch_script,
)

ODD_CHARACTERS = ["\r", "\xa0", "\x0b", "\x0c", "\u2028", "\u3000", "\u2029", "\u200b", "\ufeff", "\x1b", "\x85"]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("char", ODD_CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_odd_whitespace_is_part_of_a_word_and_reported(char):
    script = f"python3 train.py --lr{char}1e-6 --seed \"4{char}2\"{char} --x 'a{char}'\n"
    read = read_launch_script(script)
    assert [w.text for w in read.command.args] == [f"--lr{char}1e-6", "--seed", f"4{char}2{char}", "--x", f"a{char}"]
    notes = [n for n in read.notes if n.kind == "unusual_char"]
    assert len(notes) == 1 and notes[0].line == 1 and f"U+{ord(char):04X}" in notes[0].message
    report = check_launch_script(script, CheckOptions(entry=None))
    assert any(f.code == "SCRIPT014" and f.line == 1 for f in report.findings)


@pytest.mark.parametrize("char", ODD_CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_odd_whitespace_everywhere_in_the_syntax_never_crashes(char):
    script = char.join(["X=1", "A=(", "a", ")", "if", "[", "$X", "];", "then", "python3", "train.py", "${A[@]}",
                        "$((X", "+", "1))", "<<EOF", "\nEOF\n", "fi", "#", "\n"])
    read_launch_script(script)
    read_arg_list_text(f"--a{char}1 --b {char}2")


def test_odd_characters_on_many_lines_give_a_bounded_number_of_notes():
    read = read_launch_script("X=1\xa0\n" * 5000 + "python3 train.py --a 1\n")
    notes = [n for n in read.notes if n.kind == "unusual_char"]
    assert len(notes) == 20 and "4981 more line(s)" in notes[-1].message


@pytest.mark.parametrize("script", [
    "python3 train.py --a $((" + "9" * 5000 + "))\n",
    "N=" + "9" * 5000 + "\npython3 train.py --a $((N*2))\n",
    "N=" + "9" * 20 + "\npython3 train.py --a $((N+1))\n",
    "A=(x y)\nA[" + "9" * 5000 + "]=z\npython3 train.py ${A[@]}\n",
    "python3 train.py --a $((\u00b2+1))\n",
], ids=["literal", "variable", "20-digits", "index", "superscript-digit"])
def test_integers_beyond_64_bits_are_left_unresolved(script):
    read = read_launch_script(script)
    assert read.command is not None
    assert any(not w.resolved for w in read.command.args)


def test_doubling_a_variable_is_capped_and_reported():
    script = 'A="x"\n' + 'A="$A$A"\n' * 40 + "python3 train.py --a $A\n"
    read = read_launch_script(script)
    assert len(script.encode()) < 500
    word = read.command.args[1]
    assert not word.resolved and str(MAX_VALUE_CHARS // 1000) in word.reason.replace(",", "")
    assert max(len(v or "") for v in read.scalars.values()) <= MAX_VALUE_CHARS
    assert any(n.kind == "too_big" for n in read.notes)
    report = check_launch_script(script, CheckOptions(entry=None))
    assert any(f.code == "SCRIPT013" for f in report.findings)


@pytest.mark.parametrize("script", [
    "A=x\n" + "A+=$A\n" * 40 + "python3 train.py --a $A\n",
    "A=(" + "abcdefghij " * 50 + ")\n" + 'A=("${A[@]}" "${A[@]}")\n' * 200 + 'python3 train.py "${A[@]}"\n',
    'A="' + "x " * 49_000 + '"\n' + "python3 train.py $A $A $A $A $A $A $A $A\n" * 20,
], ids=["append", "array", "many-words"])
def test_total_expansion_work_is_bounded(script):
    read = read_launch_script(script)
    assert any(n.kind == "too_big" for n in read.notes)
    produced = sum(len(w.text) for w in read.command.args) if read.command else 0
    assert produced <= MAX_EXPANSION_WORK


def test_arg_lists_are_bounded_too():
    words, notes, complete = read_arg_list_text('--a "' + "x" * 200_000 + '" ' + "--b 1 " * 40_000)
    assert sum(len(w.text) for w in words) <= MAX_EXPANSION_WORK + 200_000


@pytest.mark.parametrize(("data", "code"), [
    ("python3 train.py --lr\xa01e-6\n".encode(), "SCRIPT014"),
    (b"python3 train.py --lr 1e-6\r--seed 1\n", "SCRIPT014"),
    (("python3 train.py --a $((" + "9" * 5000 + "))\n").encode(), "SCRIPT004"),
    (('A="x"\n' + 'A="$A$A"\n' * 40 + "python3 train.py --a $A\n").encode(), "SCRIPT013"),
], ids=["nbsp", "lone-cr", "big-int", "doubling"])
def test_cli_reports_hostile_scripts_as_findings(capsys, tmp_path, data, code):
    path = tmp_path / "run.sh"
    path.write_bytes(data)
    for fmt in ("json", "text"):
        rc, out, err = run_cli(capsys, "check-args", str(path), "--format", fmt)
        assert rc in (0, 1) and not err and "Traceback" not in out
        assert code in out
    assert any(f["code"] == code for f in json.loads(run_cli(capsys, "check-args", str(path), "--format",
                                                              "json")[1])["findings"])


def test_check_script_bytes_with_every_odd_character_at_once():
    data = ("python3 train.py " + " ".join(f"--a{c}b" for c in ODD_CHARACTERS) + "\n").encode()
    report = check_script_bytes(data, CheckOptions(entry=None))
    assert any(f.code == "SCRIPT014" for f in report.findings)


# --------------------------------------------------------------------------------------------------
# Files read through a checkout stay inside the roots (items 16 and 17)
# --------------------------------------------------------------------------------------------------
SECRET_FLAG = "--secret-from-outside"


@pytest.fixture
def checkout(tmp_path):
    """A checkout whose model script and arguments.py are links to files outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.sh").write_text(f"MODEL_ARGS=({SECRET_FLAG} 1)\n")
    (outside / "arguments.py").write_text(
        "def get_slime_extra_args_provider():\n    def add(parser):\n"
        f"        parser.add_argument('{SECRET_FLAG}', type=int)\n        return parser\n    return add\n")
    co = tmp_path / "root" / "slime"
    (co / "scripts" / "models").mkdir(parents=True)
    (co / "slime" / "utils").mkdir(parents=True)
    (co / "scripts" / "models" / "evil.sh").symlink_to(outside / "evil.sh")
    (co / "slime" / "utils" / "arguments.py").symlink_to(outside / "arguments.py")
    return co


SOURCING = 'source "scripts/models/evil.sh"\npython3 train.py "${MODEL_ARGS[@]}" --lr 1e-6\n'


@pytest.mark.parametrize("roots", ["checkout", "configured"])
def test_a_model_script_linking_outside_is_not_read(checkout, monkeypatch, roots):
    if roots == "configured":
        monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(checkout.parent))
    report = check_launch_script(SOURCING, CheckOptions(entry="train.py", catalog_path=str(checkout)))
    shown = json.dumps([f.model_dump(mode="json") for f in report.findings])
    assert SECRET_FLAG not in shown
    assert any(f.code == "SCRIPT007" and "cannot read" in f.message for f in report.findings)


def test_an_arguments_file_linking_outside_is_not_read(checkout, capsys):
    script = checkout.parent / "run.sh"
    script.write_text(f"python3 train.py {SECRET_FLAG} 1\n")
    rc, out, err = run_cli(capsys, "check-args", str(script), "--slime-checkout", str(checkout), "--format", "json")
    findings = json.loads(out)["findings"]
    refused = [f for f in findings if "could not be used" in f["message"]]
    assert refused and "outside" in refused[0]["message"]
    assert any(f["code"] == "ARG001" and f["flag"] == SECRET_FLAG for f in findings)  # unknown: not read


def test_a_link_inside_the_checkout_is_still_read(tmp_path):
    co = tmp_path / "slime"
    (co / "scripts" / "models").mkdir(parents=True)
    (co / "slime" / "utils").mkdir(parents=True)
    (co / "slime" / "utils" / "arguments.py").write_text("")
    (co / "scripts" / "real.sh").write_text("MODEL_ARGS=(--num-layers 3)\n")
    os.symlink(co / "scripts" / "real.sh", co / "scripts" / "models" / "evil.sh")
    report = check_launch_script(SOURCING, CheckOptions(entry="train.py", catalog_path=str(co)))
    assert any(f.code == "SCRIPT007" and "Read the sourced file" in f.message for f in report.findings)


# --------------------------------------------------------------------------------------------------
# Output formats: every command accepts --format json
# --------------------------------------------------------------------------------------------------
def test_list_rules_prints_json_when_asked(capsys):
    rc, out, err = run_cli(capsys, "check-args", "--list-rules", "--format", "json")
    rules = json.loads(out)
    assert rc == 0 and not err
    codes = [r["code"] for r in rules]
    assert "ARG001" in codes and "SCRIPT013" in codes and "SCRIPT014" in codes and len(codes) == len(set(codes))
    assert set(rules[0]) == {"code", "severity", "title", "source", "card"}
    assert all(r["severity"] in ("error", "warning", "info") for r in rules)


DRAFT = ["draft", "grpo", "--model", "Qwen3-4B", "--data", "/data/train.jsonl", "--gpus", "8"]


def test_draft_prints_one_json_object(capsys):
    rc, out, err = run_cli(capsys, *DRAFT, "--format", "json")
    got = json.loads(out)
    assert rc == 0 and not err
    assert got["ready"] is True and got["workflow"] == "grpo" and got["output"] is None
    assert got["script"].startswith("#!/bin/bash") and "train.py" in got["script"]
    assert got["summary_markdown"] and got["filename"].endswith(".sh")
    assert got["counts"]["error"] == 0 and all(set(f) >= {"code", "severity", "message"} for f in got["findings"])
    rc_text, text, _ = run_cli(capsys, *DRAFT)
    assert text == got["script"]


def test_draft_json_with_output_writes_the_file_and_says_where(capsys, tmp_path):
    target = tmp_path / "run.sh"
    rc, out, err = run_cli(capsys, *DRAFT, "--format", "json", "--output", str(target))
    got = json.loads(out)
    assert rc == 0 and got["output"] == str(target) and target.read_text() == got["script"]


def test_draft_json_usage_problem_is_one_line_on_stderr(capsys):
    rc, out, err = run_cli(capsys, "draft", "grpo", "--model", "Qwen3-4B", "--data", "/d.jsonl", "--gpus", "0",
                           "--format", "json")
    assert rc == 2 and not out and len(err.strip().splitlines()) == 1


def test_blocks_nested_past_the_limit_stop_the_reader_with_a_finding():
    from core.launch.script import MAX_BLOCK_DEPTH

    script = "if x; then\n" * (MAX_BLOCK_DEPTH + 5) + "python3 train.py --a 1\n" + "fi\n" * (MAX_BLOCK_DEPTH + 5)
    read = read_launch_script(script)
    assert any(n.kind == "unterminated" and str(MAX_BLOCK_DEPTH) in n.message for n in read.notes)


def test_branches_see_only_the_names_they_changed():
    """The journal of changes must not lose a change: values set in one branch only become unknown, values
    all branches agree on stay, arrays that only grow keep their shared start."""
    script = ("A=1\nB=1\nARGS=(--a 1)\nif x; then\n  A=2\n  ARGS+=(--b 2)\nelse\n  B=1\nfi\n"
              "for i in 1 2; do C=3; done\npython3 train.py ${ARGS[@]} --c $A --d $B\n")
    read = read_launch_script(script)
    assert read.scalars["A"] is None and read.scalars["B"] == "1" and read.scalars["C"] is None
    assert [w.text for w in read.arrays["ARGS"]] == ["--a", "1", "--b", "2"]
    assert [w.conditional for w in read.arrays["ARGS"]] == [False, False, True, True]
