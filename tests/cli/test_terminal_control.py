"""Terminal control characters from the user's files never reach the terminal (issue 28, hostile item 8).

A `.git/HEAD` ref, Dockerfile `ARG` values, W&B host and run names, file names and pastes may hold OSC/CSI
sequences (set the window title, clear the screen, hide text): text output shows them as visible `\\x1b`
escapes and cuts a 500,000-character value; JSON output carries them as JSON escapes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.cli import main
from core.cli.output import json_text
from core.text import TERMINAL_LINE_LIMIT, for_terminal

TITLE = "\x1b]0;pwned\x07"  # OSC: sets the terminal window's title
CLEAR = "\x1b[2J"  # CSI: clears the screen
HIDE = "\x1b[8mhidden\x1b[0m"  # CSI: text the terminal does not show
C1_CSI = "\x9b2J"  # the one-character CSI of the C1 set
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def assert_no_raw_control(text: str) -> None:
    found = RAW_CONTROL.findall(text)
    assert not found, f"raw control characters reached the output: {sorted(set(found))!r}"


def strings(value: object) -> list[str]:
    """Every string of a parsed JSON document."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


@pytest.mark.parametrize("raw, visible", [
    (TITLE, "\\x1b]0;pwned\\x07"), (CLEAR, "\\x1b[2J"), (C1_CSI, "\\x9b2J"), ("a\rb\bc\x7f", "a\\x0db\\x08c\\x7f"),
    ("tab\tand\nnewline", "tab\tand\nnewline"), ("bad byte \udcff", "bad byte \\xff"), ("plain é", "plain é"),
], ids=str)
def test_for_terminal_escapes_every_control_but_tab_and_newline(raw, visible):
    assert for_terminal(raw) == visible


def test_for_terminal_cuts_a_long_line_in_its_middle_and_says_how_much():
    text = "short\n" + "x" * 500_000 + "\nend"
    out = for_terminal(text)
    lines = out.split("\n")
    assert lines[0] == "short" and lines[2] == "end"
    head = TERMINAL_LINE_LIMIT * 3 // 4
    assert lines[1] == ("x" * head + f" ... ({500_000 - TERMINAL_LINE_LIMIT:,} characters not shown) ... "
                        + "x" * (TERMINAL_LINE_LIMIT - head))
    assert for_terminal("a" * 30 + "b" * 20 + " is too long", limit=20) == (
        "a" * 15 + " ... (42 characters not shown) ... " + " long")  # the end of a message stays
    assert for_terminal("y" * 50, limit=None) == "y" * 50


def test_json_escapes_the_controls_json_dumps_leaves():
    document = json.dumps({"name": TITLE + C1_CSI + "\x7f"}, ensure_ascii=False)
    out = json_text(document)
    assert_no_raw_control(out)
    assert json.loads(out) == {"name": TITLE + C1_CSI + "\x7f"}


def hostile_checkout(root: Path) -> Path:
    """A slime checkout whose Dockerfile ARGs and .git/HEAD ref hold control sequences (one 500,000 long)."""
    from tests.launch.test_versions import old_tree

    old_tree(root, sglang="v0.4.9" + TITLE + CLEAR, megatron="core" + HIDE + "x" * 500_000)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{TITLE}main{CLEAR}\n")
    return root


def test_check_args_shows_a_hostile_checkout_escaped(tmp_path, capsys):
    checkout = hostile_checkout(tmp_path / "co")
    script = tmp_path / "args.txt"
    script.write_text("--rollout-batch-size 8 --num-rollout 2 --hf-checkpoint /m --colocate\n")
    main(["check-args", str(script), "--slime-checkout", str(checkout)])
    out, err = capsys.readouterr()
    assert_no_raw_control(out + err)
    assert "\\x1b]0;pwned\\x07" in out and "\\x1b[8mhidden" in out  # said, visibly
    assert "characters not shown" in out
    assert max(len(line) for line in out.splitlines()) < TERMINAL_LINE_LIMIT + 100
    main(["check-args", str(script), "--slime-checkout", str(checkout), "--format", "json"])
    out, _ = capsys.readouterr()
    assert_no_raw_control(out)
    assert any(TITLE in text for text in strings(json.loads(out)))  # the value itself, as JSON escapes


def hostile_wandb_run(root: Path) -> Path:
    """A W&B run file whose host name and display name hold control sequences and 500,000 characters."""
    pytest.importorskip("wandb")
    from core.monitor.gpu.synthetic import Layout, wandb_stats_payloads
    from core.monitor.tensorboard.synthetic import Scenario
    from core.monitor.wandb.proto import record_class
    from core.monitor.wandb.synthetic import frame_wandb_records, history_record, metric_record

    record = record_class()()
    record.run.run_id = "evil"
    record.run.host = TITLE + "node" + CLEAR + HIDE + "h" * 500_000
    record.run.display_name = "run" + TITLE + C1_CSI + "n" * 500_000
    rows = [metric_record("rollout/*", "rollout/step")]
    rows += [history_record({"rollout/raw_reward": 0.1 * i, "rollout/step": i, "_timestamp": 1e9 + i})
             for i in range(6)]
    stats = wandb_stats_payloads(Layout(nodes=1, gpus_per_node=2), 0, Scenario(rollouts=6))
    folder = root / "wandb" / "offline-run-20250101_000000-evil"
    folder.mkdir(parents=True)
    (folder / "run-evil.wandb").write_bytes(frame_wandb_records([record.SerializeToString(), *rows, *stats]))
    return root / "wandb"


def test_logs_shows_hostile_wandb_names_escaped(tmp_path, capsys):
    runs = hostile_wandb_run(tmp_path)
    main(["logs", str(runs), "--no-cache"])
    out, err = capsys.readouterr()
    assert_no_raw_control(out + err)
    assert "run\\x1b]0;pwned\\x07\\x9b2J" in out  # the run's name, visibly
    assert "\\x1b]0;pwned\\x07node\\x1b[2J" in out  # the host of the GPU series, visibly
    assert "characters not shown" in out
    assert max(len(line) for line in out.splitlines()) < TERMINAL_LINE_LIMIT + 100
    main(["logs", str(runs), "--no-cache", "--format", "json"])
    out, _ = capsys.readouterr()
    assert_no_raw_control(out)
    assert any("run" + TITLE + C1_CSI in text for text in strings(json.loads(out)))


def test_check_data_shows_a_hostile_file_name_escaped(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    path = tmp_path / f"data{TITLE}{CLEAR}.jsonl"
    path.write_text('{"input": "a", "label": "b"}\n{"input": 3}\n' + '{"' + CLEAR + '": 1}\n')
    main(["check-data", str(path)])
    out, err = capsys.readouterr()
    assert_no_raw_control(out + err)
    assert "data\\x1b]0;pwned\\x07\\x1b[2J.jsonl" in out + err


def test_ask_shows_a_hostile_paste_escaped(tmp_path, capsys, monkeypatch):
    import io

    paste = f"Traceback (most recent call last):\nRuntimeError: {TITLE}boom{CLEAR}{HIDE}\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(paste))
    main(["ask", "-"])
    out, err = capsys.readouterr()
    assert_no_raw_control(out + err)
    assert out.strip()  # something was answered (or "Nothing found"), and it was checked


def test_plan_and_draft_show_hostile_values_escaped(tmp_path, capsys):
    script = tmp_path / f"run{CLEAR}.sh"
    script.write_text(f"python train.py --hf-checkpoint /m{TITLE} --rollout-batch-size 8 --colocate\n")
    main(["plan", str(script), "--gpu", "H100-80GB"])
    out, err = capsys.readouterr()
    assert_no_raw_control(out + err)
    assert out + err
    main(["draft", "grpo", "--model", "Qwen3-4B", "--data", "/d/t.jsonl", "--gpus", "8", "--input-key", f"prompt{TITLE}"])
    out, err = capsys.readouterr()
    assert_no_raw_control(out + err)
    assert "prompt\\x1b]0;pwned\\x07" in out + err


def test_a_drafted_script_is_printed_whole(capsys):
    """The script is saved and run: a line longer than the terminal limit (a long --data path) is not cut."""
    data = "/d/" + ("a" * 200 + "/") * 20 + "x.jsonl"
    main(["draft", "grpo", "--model", "Qwen3-4B", "--data", data, "--gpus", "8"])
    out, _ = capsys.readouterr()
    [line] = [s for s in out.splitlines() if data in s]
    assert len(line) > TERMINAL_LINE_LIMIT and "not shown" not in out
