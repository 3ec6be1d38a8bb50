"""The static bash reader: words, line numbers, arrays, variables, and what stays unresolved."""

from __future__ import annotations

import pytest

from core.launch.script import (
    MAX_SCRIPT_CHARS,
    SourcedModel,
    _arith,
    _Unresolved,
    decode_script_bytes,
    looks_like_arg_list,
    model_script_name,
    read_arg_list_text,
    read_launch_script,
)


def args_of(script: str, resolver=None) -> list[str]:
    cmd = read_launch_script(script, resolver).command
    assert cmd is not None, "no train command found"
    return [w.text for w in cmd.args]


@pytest.mark.parametrize(("script", "expected"), [
    ("python3 train.py --a 1 --b", ["--a", "1", "--b"]),
    ("python train_async.py --a=1", ["--a=1"]),
    ("python3 -u train.py --a 1", ["--a", "1"]),
    ("X=(--a 1\n  # --b 2\n  --c)\npython3 train.py ${X[@]}", ["--a", "1", "--c"]),
    ("X=(--a 1)\nX+=(--b 2)\npython3 train.py \"${X[@]}\"", ["--a", "1", "--b", "2"]),
    ('N=${N:-4}\npython3 train.py --n $N', ["--n", "4"]),
    ('python3 train.py --n ${UNSET:-7} --m "${UNSET:-a b}"', ["--n", "7", "--m", "a b"]),
    ("A=6\nB=4\npython3 train.py --x $((A / B * 3 + 1))", ["--x", "4"]),
    ("S='--a 1 --b 2'\npython3 train.py $S", ["--a", "1", "--b", "2"]),
    ('S="--a 1"\npython3 train.py "$S"', ["--a 1"]),
    ("X=('--p' 'two words')\npython3 train.py \"${X[@]}\"", ["--p", "two words"]),
    ("X=('--p' 'two words')\npython3 train.py ${X[@]}", ["--p", "two", "words"]),
    ("python3 train.py \\\n  --a 1 \\\n  --b 2 2>&1 | tee log.txt", ["--a", "1", "--b", "2"]),
    ("ray job submit --address=x -- python3 train.py --a 1", ["--a", "1"]),
    ('python3 "${ROOT}/train.py" --a 1', ["--a", "1"]),
    ("cat <<EOF\npython3 train.py --wrong\nEOF\npython3 train.py --right", ["--right"]),
    ("python3 train.py --a $'x\\ty'", ["--a", "x\ty"]),
    ("E=()\npython3 train.py --a ${E[@]} --b", ["--a", "--b"]),
], ids=str)
def test_words_of_the_train_command(script, expected):
    assert args_of(script) == expected


def test_words_keep_the_line_they_were_written_on():
    script = "ARGS=(\n   --a 1\n   --b 2\n)\n\npython3 train.py \\\n  --c 3 \\\n  ${ARGS[@]}\n"
    cmd = read_launch_script(script).command
    assert [(w.text, w.line) for w in cmd.args] == [("--c", 7), ("3", 7), ("--a", 2), ("1", 2), ("--b", 3),
                                                    ("2", 3)]
    assert cmd.entry == "train.py" and cmd.line == 6


@pytest.mark.parametrize(("script", "reason_part"), [
    ("N=$(nproc)\npython3 train.py --n $N", "command substitution"),
    ("python3 train.py --n `nproc`", "command substitution"),
    ("python3 train.py --n $FROM_ENV", "environment"),
    ("if [ -n \"$X\" ]; then N=1; else N=2; fi\npython3 train.py --n $N", "branch"),
    ("for i in 1 2; do N=$i; done\npython3 train.py --n $N", "loop"),
    ("printf -v N '%d' 3\npython3 train.py --n $N", "printf"),
    ("python3 train.py --n $((UNSET_VAR + 1))", "not known"),
    ("python3 train.py --n $((1 / 0))", "division by zero"),
], ids=str)
def test_values_that_need_the_shell_stay_unresolved(script, reason_part):
    cmd = read_launch_script(script).command
    value = cmd.args[1]
    assert not value.resolved and reason_part in value.reason


def test_branches_that_agree_keep_their_value():
    script = "if [ -z \"$X\" ]; then N=8; else N=8; fi\npython3 train.py --n $N"
    assert args_of(script) == ["--n", "8"]


def test_array_differing_between_branches_is_kept_but_marked_conditional():
    script = ("if [ -n \"$KEY\" ]; then\n  W=(--use-wandb --wandb-key x)\nelse\n  W=()\nfi\n"
              "python3 train.py --a 1 ${W[@]}")
    cmd = read_launch_script(script).command
    assert [w.text for w in cmd.args] == ["--a", "1", "--use-wandb", "--wandb-key", "x"]
    assert [w.conditional for w in cmd.args] == [False, False, True, True, True]


def test_unquoted_unknown_expansion_may_hide_words():
    cmd = read_launch_script("python3 train.py --a 1 $EXTRA \"$QUOTED\"").command
    spread = {w.text: w.spread for w in cmd.args if not w.resolved}
    assert spread == {"$EXTRA": True, '"$QUOTED"': False}


def test_model_script_is_sourced_from_the_catalog():
    def resolver(path):
        assert path.endswith("models/qwen3-4B.sh")
        return SourcedModel(path="scripts/models/qwen3-4B.sh", source="scripts/models/qwen3-4B.sh@x",
                            model_args=["--num-layers", "36", "--moe-layer-freq", "$MOE"])
    script = 'source "${DIR}/models/qwen3-4B.sh"\npython3 train.py ${MODEL_ARGS[@]} --a 1'
    read = read_launch_script(script, resolver)
    words = read.command.args
    assert [w.text for w in words] == ["--num-layers", "36", "--moe-layer-freq", "$MOE", "--a", "1"]
    assert words[0].origin == "scripts/models/qwen3-4B.sh" and words[0].line == 1
    assert not words[3].resolved
    assert any(n.kind == "source_model" for n in read.notes)


def test_sourced_text_is_read_in_place_with_prefix_assignments():
    files = {"base.sh": "MODEL_ARGS=(--rotary-base \"${ROT:-100}\" --layers 4)",
             "variant.sh": 'ROT=500 source "$(dirname x)/base.sh"\nMODEL_ARGS[3]=8'}

    def resolver(path):
        return files.get(path.rsplit("/", 1)[-1])
    read = read_launch_script('source variant.sh\npython3 train.py ${MODEL_ARGS[@]}', resolver)
    assert [w.text for w in read.command.args] == ["--rotary-base", "500", "--layers", "8"]
    assert "ROT" not in read.scalars  # the prefix assignment lasted only for the source


def test_unknown_source_makes_unset_variables_unknown():
    read = read_launch_script("source ./env.sh\npython3 train.py --n ${N:-3} ${MORE[@]}")
    assert [w.resolved for w in read.command.args] == [True, False, False]
    assert any(n.kind == "source_unknown" for n in read.notes)


@pytest.mark.parametrize(("script", "cause"), [
    ("python3 train.py \\\n  --a 1 \\\n  # --b 2 \\\n  --c 3\n", "comment on line 3"),
    ("python3 train.py \\\n  --a 1\n  --c 3\n", "line 2 does not end with"),
    ("python3 train.py \\\n  --a 1 \\ \n  --c 3\n", "spaces after"),
    ("X=(--c 3)\npython3 train.py --a 1\n${X[@]}\n", "line 2 does not end with"),
], ids=str)
def test_flags_cut_off_from_the_command_are_found(script, cause):
    read = read_launch_script(script)
    assert [w.text for w in read.command.args][:2] == ["--a", "1"]  # `\ ` also passes a lone space
    assert len(read.stray_commands) == 1
    assert read.stray_commands[0].flags == ["--c"] and cause in read.stray_commands[0].cause


@pytest.mark.parametrize(("script", "kind"), [
    ('python3 train.py --a "unclosed', "unterminated"),
    ("python3 train.py --a 'unclosed", "unterminated"),
    ("X=(--a 1\npython3 train.py", "unterminated"),
    ("python3 train.py --a $(echo", "unterminated"),
    ("python3 train.py --a ${X", "unterminated"),
    ("cat <<EOF\nnever closed\n", "heredoc"),
], ids=str)
def test_unbalanced_input_is_a_note_not_a_crash(script, kind):
    read = read_launch_script(script)
    assert any(n.kind == kind for n in read.notes)


def test_several_train_commands_are_all_found():
    read = read_launch_script("python3 train.py --a 1\npython3 train_async.py --b 2\n")
    assert [c.entry for c in read.commands] == ["train.py", "train_async.py"]
    assert read.command.entry == "train_async.py"


def test_command_inside_a_function_is_conditional():
    read = read_launch_script("run() {\n  python3 train.py --a 1\n}\nrun\n")
    assert read.command.conditional


def test_nothing_is_executed(tmp_path):
    marker = tmp_path / "ran"
    script = f"X=$(touch {marker})\npython3 train.py --a `touch {marker}` --b $(touch {marker})"
    read_launch_script(script)
    assert not marker.exists()


@pytest.mark.parametrize(("expr", "value"), [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3), ("-7 / 2", -3), ("7 % 3", 1), ("2 ** 10", 1024),
    ("A * B", 12), ("$A + 1", 4),
], ids=str)
def test_integer_arithmetic_follows_bash(expr, value):
    assert _arith(expr, {"A": "3", "B": "4"}.get) == value


@pytest.mark.parametrize("expr", ["2 ** 100000", "1 << 2", "A +", "C + 1", "10 ** 10 ** 10"], ids=str)
def test_arithmetic_refuses_what_it_cannot_do_safely(expr):
    with pytest.raises(_Unresolved):
        _arith(expr, {"A": "3"}.get)


def test_expansion_bombs_are_capped():
    script = "A=(x)\n" + "A=(${A[@]} ${A[@]})\n" * 40 + "python3 train.py ${A[@]}"
    cmd = read_launch_script(script).command
    assert len(cmd.args) <= 20_001


@pytest.mark.parametrize(("data", "kind"), [
    (b"\x7fELF\x02\x01\x01\0\0\0" * 10, "binary"),
    (b"python3 train.py --a 1\n" * (MAX_SCRIPT_CHARS // 10), "too_large"),
    (b"python3 train.py --name caf\xe9\n", "not_utf8"),
], ids=str)
def test_bytes_that_are_not_a_script_get_a_specific_note(data, kind):
    decoded = decode_script_bytes(data)
    assert [n.kind for n in decoded.notes] == [kind]
    assert (decoded.text is None) == (kind != "not_utf8")


def test_nul_characters_in_text_are_refused():
    read = read_launch_script("python3 train.py --a\0 1")
    assert read.command is None and read.notes[0].kind == "binary"


def test_bare_argument_lists_are_recognised_and_split():
    text = "# my args\n--a 1 \\\n  --b 'x y'\n--c\n"
    assert looks_like_arg_list(text) and not looks_like_arg_list("#!/bin/bash\npython3 train.py")
    words, notes, complete = read_arg_list_text(text)
    assert [w.text for w in words] == ["--a", "1", "--b", "x y", "--c"] and complete and not notes


@pytest.mark.parametrize(("path", "name"), [
    ("${SCRIPT_DIR}/models/qwen3-4B.sh", "qwen3-4B"),
    ("/root/slime/scripts/models/glm4-9B.sh", "glm4-9B"),
    ('$(dirname -- "${BASH_SOURCE[0]}")/qwen3-4B.sh', "qwen3-4B"),
    ("./env.sh", None),
    ("my_models/qwen3-4B.sh", None),
], ids=str)
def test_model_script_names(path, name):
    assert model_script_name(path) == name
