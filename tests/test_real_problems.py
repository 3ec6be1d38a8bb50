"""Real problems from slime's GitHub threads (tests/real_problems.yaml) run through `ask`'s search, and through
the launch-script checker where the input is a script: the share answered in the top 3, and the share whose
first result points confidently at the wrong place (a matched error, runtime message or known bug that is not
an answer). Run with `-s` to see the figures and the misses; the floors below are what the set reaches now."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, Field

from core.knowledge.search import get_index

SET_PATH = Path(__file__).with_name("real_problems.yaml")
TOP = 3
TOP3_FLOOR = 0.85
CONFIDENT_WRONG_CEILING = 0.05
# A first result of these kinds is presented as "this is your message": wrong there is confidently wrong.
CONFIDENT_KINDS = {"error", "runtime", "bug"}


class Problem(BaseModel):
    id: str
    url: str = Field(pattern=r"^https://github\.com/")
    input: str = Field(min_length=1)
    expected: list[str] = Field(min_length=1)
    script: str | None = None
    script_rules: list[str] = Field(default_factory=list)


def load_problems() -> list[Problem]:
    return [Problem(**p) for p in yaml.safe_load(SET_PATH.read_text(encoding="utf-8"))["problems"]]


def answer_keys(kind: str, key: str) -> set[str]:
    """How a result can satisfy an expectation: itself, and for a card section its card."""
    keys = {f"{kind}:{key}"}
    if kind == "section":
        keys.add(f"card:{key.split('#', 1)[0]}")
    return keys


def judge(problem: Problem) -> tuple[bool, bool, list[str]]:
    results = get_index().search(problem.input, limit=10)
    shown = [f"{r.kind}:{r.id}" for r in results[:TOP]]
    wanted = set(problem.expected)
    hit = any(answer_keys(r.kind, r.id) & wanted for r in results[:TOP])
    first = results[0] if results else None
    confident_wrong = bool(first and first.kind in CONFIDENT_KINDS and not answer_keys(first.kind, first.id) & wanted)
    return hit, confident_wrong, shown


def test_the_set_is_well_formed_and_points_at_things_that_exist():
    problems = load_problems()
    assert len(problems) >= 40
    assert len({p.id for p in problems}) == len(problems)
    index = get_index()
    known = {f"{d.kind}:{d.id}" for d in index.docs}
    for p in problems:
        missing = [e for e in p.expected if e not in known]
        assert not missing, (p.id, missing)


def test_real_problems_top3_rate_and_confident_wrong_rate(capsys):
    problems = load_problems()
    hits = wrong = 0
    misses = []
    for p in problems:
        hit, confident_wrong, shown = judge(p)
        hits += hit
        wrong += confident_wrong
        if not hit or confident_wrong:
            why = "confidently wrong first" if confident_wrong else "missed"
            misses.append(f"  {p.id} ({why}): expected {p.expected}, top {TOP}: {shown}")
    rate, wrong_rate = hits / len(problems), wrong / len(problems)
    with capsys.disabled():
        print(f"\nreal problems: {hits}/{len(problems)} answered in the top {TOP} ({rate:.0%}); "
              f"{wrong} confidently wrong first ({wrong_rate:.0%})")
        for line in misses:
            print(line)
    assert rate >= TOP3_FLOOR, "\n".join(misses)
    assert wrong_rate <= CONFIDENT_WRONG_CEILING


@pytest.mark.parametrize("problem", [p for p in load_problems() if p.script], ids=lambda p: p.id)
def test_script_problems_are_caught_by_check_args(problem):
    from core.launch import check_script_bytes

    report = check_script_bytes(problem.script.encode())
    codes = {f.code for f in report.findings}
    assert set(problem.script_rules) <= codes, codes
