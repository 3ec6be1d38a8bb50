"""What Check my data says in one line and keeps (issue 28, first hour 3 and 9): the status line worded for
people, and the saved report read back as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import core.data.scan as dc
from core.data.report import status_summary
from core.data.rules import DataKeys

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"


@pytest.mark.parametrize("fixture, keys, summary", [
    ("text_ok.jsonl", {"input_key": "prompt", "label_key": "label"},
     "text_ok.jsonl: slime would use all 10 rows; prompts are plain text"),
    ("mixed_problems.jsonl", {"input_key": "prompt", "label_key": "label"},
     "mixed_problems.jsonl: slime would skip 1 line and crash on 8 rows (6 of 15 rows usable); prompts mix plain "
     "text and message lists"),
    ("latin1.jsonl", {"input_key": "prompt"}, "latin1.jsonl: slime would stop at start-up at line 1: "),
], ids=str)
def test_status_summary_is_worded_for_people(fixture, keys, summary):
    """The page's status line and What's done (issue 28, first hour 9): no "prompts text (not usable as is)"."""
    path = FIXTURES / fixture
    s = dc.check_path(str(path), DataKeys(**keys), name=fixture).summary
    assert status_summary(s).startswith(summary) and not status_summary(s).endswith(".")


def test_a_report_comes_back_from_its_json():
    """The saved record of the last check is shown again as it was (issue 28, first hour 3)."""
    path = FIXTURES / "mixed_problems.jsonl"
    report = dc.check_path(str(path), DataKeys())
    again = dc.DataReport.from_json(json.dumps(report.to_json()))
    assert again is not None and again.to_json() == report.to_json() and again.summary == report.summary
    assert [(f.code, f.line, f.card) for f in again.findings] == [(f.code, f.line, f.card) for f in report.findings]
    for damaged in ("", "[1]", '{"findings": [{}], "summary": {}}', '{"findings": [], "summary": {"rows": "x"}}',
                    "[" * 100_000):
        assert dc.DataReport.from_json(damaged) is None
