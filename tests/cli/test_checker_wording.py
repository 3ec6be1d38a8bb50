"""A newcomer's first hour (issue 28), the command line and the checker's words: a misspelt required flag says
the run will not start, a required flag shows "required" (not "default unset"), `check-args` on a data file is
an error, `--gpus N` is named as given, `check-data`'s count is the page's, one wording for a missing file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main as cli_main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"


def _script(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/bash\npython3 train.py {flags}\n", encoding="utf-8")
    return path


def test_a_misspelt_required_flag_says_the_run_will_not_start(tmp_path, capsys):
    path = _script(tmp_path, "--rollout-batch-szie 32 --n-samples-per-prompt 8 --global-batch-size 256")
    assert cli_main(["check-args", str(path), "--format", "json"]) == 1
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "will not start" in found["ARG001"]["message"] and "--rollout-batch-size" in found["ARG001"]["message"]
    assert "default" not in found["ARG001"]["message"] and found["ARG001"]["fix"] == "write --rollout-batch-size 32"
    assert "ARG009" in found  # the two findings agree


def test_a_misspelt_optional_flag_still_says_the_default_is_used(tmp_path, capsys):
    path = _script(tmp_path, "--rollout-batch-size 32 --n-samples-per-promt 8")
    cli_main(["check-args", str(path), "--format", "json"])
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "run with the default" in found["ARG001"]["message"]


def test_a_required_flag_shows_required_in_the_reference_and_ask(capsys):
    from core.knowledge.flags import flag_rows
    from core.launch import load_catalog

    rows = {r.flag: r for r in flag_rows(load_catalog())}
    assert rows["--rollout-batch-size"].default.startswith("required")
    assert rows["--n-samples-per-prompt"].default == "1"
    assert cli_main(["ask", "--rollout-batch-size"]) == 0
    out = capsys.readouterr().out
    first = out.split("\n\n")[0]
    assert "type int, required (no default" in first and "unset" not in first


def test_check_args_on_a_data_file_is_an_error(tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text('{"prompt": "1+1?", "label": "2"}\n{"prompt": "2+2?", "label": "4"}\n', encoding="utf-8")
    assert cli_main(["check-args", str(data)]) == 1
    out = capsys.readouterr().out
    assert "ERROR   SCRIPT005" in out and "is not a launch script" in out and "check-data" in out
    notes = tmp_path / "notes.txt"
    notes.write_text("just some words\n", encoding="utf-8")
    assert cli_main(["check-args", str(notes)]) == 1


def test_a_flag_list_without_a_train_command_is_still_checked(capsys):
    cli_main(["check-args", str(FIXTURES / "bare_args.txt"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["flags"] > 0 and not any(f["code"] == "SCRIPT005" for f in report["findings"])


def test_gpus_given_on_the_command_line_are_named_so(tmp_path, capsys):
    path = _script(tmp_path, "--rollout-batch-size 32 --n-samples-per-prompt 8 --global-batch-size 256 "
                             "--actor-num-nodes 2 --actor-num-gpus-per-node 8 --colocate")
    cli_main(["check-args", str(path), "--gpus", "8", "--gpus-per-node", "4"])
    out = capsys.readouterr().out
    assert "you have 8 (--gpus 8)" in out and "(--gpus-per-node 4)" in out and "profile" not in out


def test_check_data_counts_the_rows_the_page_calls_fine(tmp_path, capsys):
    from core.data import DataKeys
    from core.data.scan import check_path

    rows = [json.dumps({"prompt": f"q{i}", "label": str(i)}) for i in range(49)]
    rows.insert(10, "{not json")
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    summary = check_path(data, DataKeys(input_key="prompt", label_key="label")).summary
    cli_main(["check-data", str(data), "--input-key", "prompt", "--label-key", "label"])
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith(f"50 line(s); {summary.rows_used} row(s) read fine") and summary.rows_used == 49
    assert "50 row(s)" not in head


@pytest.mark.parametrize("command", [["check-args"], ["check-data"], ["logs"]])
def test_a_missing_file_is_worded_the_same_everywhere(tmp_path, capsys, command):
    missing = tmp_path / "nothing-here"
    assert cli_main([*command, str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such file or folder" in err, err


def test_make_run_takes_a_port_and_leaves_streamlits_own_variable_working():
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    run = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "$(if $(PORT),--server.port $(PORT))" in run  # no PORT: STREAMLIT_SERVER_PORT still decides
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "make run PORT=8502" in readme and "STREAMLIT_SERVER_PORT" in readme
