"""Property tests (Hypothesis): random text, random bytes and random bash-like scripts given to the launch
reader and to check-args' core entry never raise, and what they return stays bounded by the input."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.findings import dumps
from core.launch import render_report_text, report_json
from core.launch.check import CheckOptions, check_launch_script, check_script_bytes
from core.launch.script import (
    MAX_EXPANSION_WORK,
    decode_script_bytes,
    looks_like_arg_list,
    read_arg_list_text,
    read_launch_script,
)

QUICK = settings(max_examples=200, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Characters that matter to bash, plus the odd ones that used to break the reader.
BASH_CHARS = list(" \t\n\\'\"$`#;&|()<>{}[]=+-*/%!?@:,.~^") + list("aAxZ09_") + [
    "\r", "\xa0", "\x0b", "\x0c", "\u2028", "\u2029", "\u3000", "\u200b", "\ufeff", "\x00", "\x1b", "\u00b2", "é"]
bash_text = st.text(alphabet=st.sampled_from(BASH_CHARS), max_size=400)
any_text = st.text(max_size=400)

names = st.sampled_from(["A", "B", "ARGS", "MODEL_ARGS", "N", "X_1"])
flags = st.sampled_from(["--lr", "--seed", "--num-rollout", "--rollout-batch-size", "--colocate", "--tp",
                         "--tensor-model-parallel-size", "--n-samples-per-prompt", "--hf-checkpoint", "-x"])
odd = st.sampled_from(["", "", "", "\xa0", "\r", "\u3000", "\x0b", "\\\n", "'", '"', "$", "`", ")", "}"])
numbers = st.one_of(st.integers(-10, 10**6).map(str), st.just("9" * 5000), st.just("0" * 30 + "7"))


@st.composite
def words(draw) -> str:
    kind = draw(st.sampled_from(["plain", "var", "default", "arith", "array", "squote", "dquote", "cmd", "flag"]))
    name = draw(names)
    if kind == "plain":
        return draw(st.text(alphabet="abc019._/-", min_size=1, max_size=12))
    if kind == "var":
        return f"${name}"
    if kind == "default":
        return f"${{{name}:-{draw(numbers)}}}"
    if kind == "arith":
        return f"$(({name} {draw(st.sampled_from(['+', '*', '/', '%', '**']))} {draw(numbers)}))"
    if kind == "array":
        return f'"${{{name}[@]}}"'
    if kind == "squote":
        return f"'{draw(bash_text.map(lambda s: s.replace(chr(39), '')))}'"
    if kind == "dquote":
        return f'"{draw(st.text(alphabet="ab $-x", max_size=10))}${name}"'
    if kind == "cmd":
        return f"$(echo {name})"
    return draw(flags) + draw(odd)


@st.composite
def statements(draw) -> str:
    kind = draw(st.sampled_from(["assign", "double", "append", "array", "array_double", "train", "if", "for",
                                 "source", "heredoc", "export", "raw"]))
    name = draw(names)
    ws = draw(st.lists(words(), max_size=6))
    if kind == "assign":
        return f"{name}={draw(words())}{draw(odd)}"
    if kind == "double":
        return f'{name}="${name}${name}"'
    if kind == "append":
        return f"{name}+=${name}"
    if kind == "array":
        return f"{name}=({' '.join(ws)})"
    if kind == "array_double":
        return f'{name}=("${{{name}[@]}}" "${{{name}[@]}}")'
    if kind == "train":
        return f"python3 train.py {' '.join(ws)} \\\n  {draw(flags)} {draw(numbers)}{draw(odd)}"
    if kind == "if":
        return f"if [ -n \"${name}\" ]; then\n  {name}={draw(words())}\nelse\n  {name}=({' '.join(ws)})\nfi"
    if kind == "for":
        return f"for {name} in {' '.join(ws)}; do\n  ARGS+=(${name})\ndone"
    if kind == "source":
        return f"source scripts/models/{draw(st.sampled_from(['qwen3-4B', 'x', '../../etc/passwd']))}.sh"
    if kind == "heredoc":
        return f"cat <<EOF\n{' '.join(ws)}\nEOF"
    if kind == "export":
        return f"export {name}={draw(numbers)}"
    return draw(bash_text)


scripts = st.lists(statements(), max_size=25).map("\n".join)


def _bounded(read, text: str) -> None:
    produced = sum(len(w.text) for c in read.commands for w in c.args)
    assert produced <= MAX_EXPANSION_WORK + len(text)
    assert len(read.notes) <= 30 * (text.count("\n") + 2)
    assert all(v is None or len(v) <= max(len(text), 100_000) for v in read.scalars.values())


@QUICK
@given(any_text)
def test_reader_survives_any_text(text):
    _bounded(read_launch_script(text), text)
    read_arg_list_text(text)
    looks_like_arg_list(text)


@QUICK
@given(bash_text)
def test_reader_survives_bash_punctuation(text):
    _bounded(read_launch_script(text), text)
    words_, notes, _ = read_arg_list_text(text)
    assert sum(len(w.text) for w in words_) <= MAX_EXPANSION_WORK + len(text)


@QUICK
@given(scripts)
def test_reader_survives_structured_scripts(text):
    _bounded(read_launch_script(text), text)


def _report_is_bounded(report, size: int) -> None:
    text = render_report_text(report)
    blob = dumps(report_json(report))
    json.loads(blob)
    text.encode("utf-8", errors="strict")
    assert len(blob) <= 60 * size + MAX_EXPANSION_WORK + 200_000


@QUICK
@given(st.binary(max_size=600))
def test_check_args_core_survives_any_bytes(data):
    decode_script_bytes(data)
    _report_is_bounded(check_script_bytes(data, CheckOptions(entry=None)), len(data))


@QUICK
@given(scripts, st.sampled_from([None, "train.py", "train_async.py"]), st.sampled_from([None, 1, 8, 4096]))
def test_check_args_core_survives_structured_scripts(text, entry, gpus):
    _report_is_bounded(check_launch_script(text, CheckOptions(entry=entry, gpus=gpus)), len(text))
    _report_is_bounded(check_script_bytes(text.encode("utf-8", errors="surrogatepass"), CheckOptions(entry=entry)),
                       len(text))
