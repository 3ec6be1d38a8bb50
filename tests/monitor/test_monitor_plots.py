"""Plot builder: raw faintly behind the smoothed line, runs overlaid, restarts marked, file text made inert."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from core.monitor.plots import plot_text, scalar_figure
from core.monitor.runs import RestartMark, RunData, Series
from core.monitor.smoothing import smooth
from core.monitor.views import RolloutAlignment, XAxis, shown_table, spreadsheet_safe, table_csv

ALIGN = RolloutAlignment(stride=1, steps_per_rollout=2, how="")


def _run(name: str, tag: str, n: int = 20) -> RunData:
    steps = np.arange(n)
    run = RunData(name=name, path="/x", start_time=1000.0)
    run.series[tag] = Series(tag=tag, steps=steps, values=np.sin(steps / 3.0), wall_times=1000.0 + 60 * steps,
                             files=np.zeros(n, np.int32))
    return run


def test_two_runs_overlaid_with_raw_behind_smoothed():
    runs = [_run("a", "train/loss"), _run("b", "train/loss")]
    fig = scalar_figure(runs, "train/loss", axis=XAxis.STEP, weight=0.6, ignore_outliers=False,
                        alignments={"a": ALIGN, "b": ALIGN})
    names = [t.name for t in fig.data]
    assert names == ["a (raw)", "a", "b (raw)", "b"]
    assert "0.25" in fig.data[0].line.color  # raw drawn faintly
    np.testing.assert_allclose(fig.data[1].y, smooth(np.sin(np.arange(20) / 3.0), 0.6))
    assert list(fig.data[1].customdata[:, 1]) == list(np.sin(np.arange(20) / 3.0))  # exact values on hover


def test_restart_is_marked_and_rollout_axis_divides_train_steps():
    run = _run("a", "train/loss")
    run.restarts.append(RestartMark(tag="train/loss", step=10, file="f", replaced=4, wall_time=1600.0))
    fig = scalar_figure([run], "train/loss", axis=XAxis.ROLLOUT, weight=0.0, ignore_outliers=True,
                        alignments={"a": ALIGN})
    assert len(fig.data) == 1
    assert fig.layout.shapes[0].x0 == 5.0  # train step 10 with 2 steps per rollout
    assert "4 replaced" in fig.layout.annotations[0].text
    assert fig.data[0].x[-1] == 19 / 2


def test_time_axes():
    run = _run("a", "rollout/raw_reward")
    rel = scalar_figure([run], "rollout/raw_reward", axis=XAxis.RELATIVE, weight=0.0, ignore_outliers=False,
                        alignments={"a": ALIGN})
    assert rel.data[0].x[1] == 60 / 3600.0


def test_names_from_files_cannot_inject_markup_or_templates():
    assert "<" not in plot_text("<b>x</b>%{y}") and "%{" not in plot_text("%{y}")
    fig = scalar_figure([_run("<script>%{x}", "<img>")], "<img>", axis=XAxis.STEP, weight=0.5, ignore_outliers=False,
                        alignments={"<script>%{x}": ALIGN})
    assert "<" not in fig.layout.title.text and "<script" not in fig.data[1].name


def test_shown_table_has_every_point():
    runs = [_run("a", "train/loss", 5), _run("b", "train/loss", 3)]
    table = shown_table(runs, ["train/loss"], XAxis.STEP, 0.6, {"a": ALIGN, "b": ALIGN})
    assert len(table) == 8 and list(table.columns) == ["run", "tag", "step", "x", "value", "smoothed", "wall_time"]


# -- the CSV download opens safely in a spreadsheet (issue 28, hostile item 15) ------------------------------
@pytest.mark.parametrize("name, cell", [
    ('=HYPERLINK("http://x","y")', "'=HYPERLINK(\"http://x\",\"y\")"), ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("+1+1", "'+1+1"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("run-1", "run-1"), ("a=b", "a=b"), ("", ""),
], ids=repr)
def test_spreadsheet_safe_prefixes_formula_starts(name, cell):
    assert spreadsheet_safe(name) == cell


def test_csv_download_neutralizes_names_but_not_negative_numbers():
    runs = [_run("=cmd|' /C calc'!A0", "-tag", 20), _run("@run", "+loss", 20)]
    aligns = {r.name: ALIGN for r in runs}
    table = pd.concat([shown_table(runs[:1], ["-tag"], XAxis.STEP, 0.0, aligns),
                       shown_table(runs[1:], ["+loss"], XAxis.STEP, 0.0, aligns)], ignore_index=True)
    assert (table["value"] < 0).any()  # sin() gives negative values: numbers, not formulas
    rows = list(csv.reader(io.StringIO(table_csv(table).decode("utf-8"))))
    assert rows[0] == ["run", "tag", "step", "x", "value", "smoothed", "wall_time"]
    body = rows[1:]
    assert {r[0] for r in body} == {"'=cmd|' /C calc'!A0", "'@run"} and {r[1] for r in body} == {"'-tag", "'+loss"}
    values = [float(r[4]) for r in body]
    assert values == list(table["value"]) and any(v < 0 for v in values)
    assert not any(r[4].startswith("'") or r[5].startswith("'") for r in body)
    assert table["run"].iloc[0] == "=cmd|' /C calc'!A0"  # the table shown on the page is left as it is
