"""Real problems from slime's GitHub threads run through `ask`'s search, and through the launch-script checker
where the input is a script: the share answered in the top 3, and the share whose first result points
confidently at the wrong place (a matched error, runtime message or known bug that is not an answer).

Three sets, reported separately: tests/knowledge/real_problems.yaml (the set the knowledge base was written against),
tests/knowledge/real_problems_heldout.yaml (threads no knowledge file cites, collected and measured before the ranking
changes made with it; kept to measure classes of misses, not tuned case by case) and
tests/knowledge/real_problems_drawn.yaml (threads drawn by a written procedure before issue 26's changes, frozen with its
expectations; its header holds the procedure and the figures before) and tests/knowledge/real_problems_fresh.yaml (a
second drawn set, frozen before the ranking changes of branch realprobs2, by the procedure in its header). Run with `-s` to see the
figures and the misses; the floors below are what each set reaches now."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, Field

from core.knowledge.search import get_index

SET_PATH = Path(__file__).with_name("real_problems.yaml")
HELDOUT_PATH = Path(__file__).with_name("real_problems_heldout.yaml")
DRAWN_PATH = Path(__file__).with_name("real_problems_drawn.yaml")
FRESH_PATH = Path(__file__).with_name("real_problems_fresh.yaml")
SETS = [SET_PATH, HELDOUT_PATH, DRAWN_PATH, FRESH_PATH]
# the fewest problems a set may hold: the fresh draw's procedure returned 25 threads (its header says why)
MIN_PROBLEMS = {SET_PATH.name: 40, FRESH_PATH.name: 25}
# "none" as an expectation: the index holds nothing that answers, so the only right outcome is no confident first
# result (an honest not-found or a pointer that does not claim to be the message).
NONE = "none"
KNOWLEDGE = Path(__file__).resolve().parents[2] / "knowledge"
TOP = 3
# set -> (least share answered in the top 3, most share confidently wrong first)
FLOORS = {SET_PATH.name: (0.90, 0.05), HELDOUT_PATH.name: (0.80, 0.05), DRAWN_PATH.name: (0.80, 0.05),
          FRESH_PATH.name: (0.80, 0.08)}
# A first result of these kinds is presented as "this is your message": wrong there is confidently wrong.
CONFIDENT_KINDS = {"error", "runtime", "bug"}
# Threads of the drawn set that the knowledge files came to cite after it was frozen: three fix pull requests the
# known-bugs table links because slime's git history names them as the fix (the entries were written from the
# diffs), and two threads the upstream-version entries were written from. Their problems are no longer uncited:
# the figures test reports the set with and without them.
CITED_AFTER_FREEZE = {"THUDM/slime/2243", "THUDM/slime/839", "THUDM/slime/452", "THUDM/slime/2280",
                      "THUDM/slime/1455"}


class Problem(BaseModel):
    id: str
    url: str = Field(pattern=r"^https://github\.com/")
    input: str = Field(min_length=1)
    expected: list[str] = Field(min_length=1)
    answer: str | None = None
    script: str | None = None
    script_rules: list[str] = Field(default_factory=list)


def load_problems(path: Path = SET_PATH) -> list[Problem]:
    return [Problem(**p) for p in yaml.safe_load(path.read_text(encoding="utf-8"))["problems"]]


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
    first = results[0] if results else None
    if wanted == {NONE}:
        confident_wrong = bool(first and first.kind in CONFIDENT_KINDS)
        return not confident_wrong, confident_wrong, shown
    hit = any(answer_keys(r.kind, r.id) & wanted for r in results[:TOP])
    confident_wrong = bool(first and first.kind in CONFIDENT_KINDS and not answer_keys(first.kind, first.id) & wanted)
    return hit, confident_wrong, shown


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_the_set_is_well_formed_and_points_at_things_that_exist(path):
    problems = load_problems(path)
    assert len(problems) >= MIN_PROBLEMS.get(path.name, 30)
    assert len({p.id for p in problems}) == len(problems)
    index = get_index()
    known = {f"{d.kind}:{d.id}" for d in index.docs}
    for p in problems:
        assert p.expected == [NONE] or NONE not in p.expected, p.id
        missing = [e for e in p.expected if e not in known and e != NONE]
        assert not missing, (p.id, missing)


def _thread(url: str) -> str:
    owner_repo, number = re.match(r"https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)", url).groups()
    return f"{owner_repo}/{number}"


@pytest.mark.parametrize("path", [HELDOUT_PATH, DRAWN_PATH, FRESH_PATH], ids=lambda p: p.stem)
def test_the_heldout_sets_are_disjoint_from_the_others_and_not_cited_by_the_knowledge_files(path):
    others = {_thread(p.url) for other in SETS if other != path for p in load_problems(other)}
    heldout = load_problems(path)
    assert not others & {_thread(p.url) for p in heldout}
    cited = set()
    for path in KNOWLEDGE.rglob("*"):
        if path.suffix in (".md", ".yaml"):
            for owner_repo, number in re.findall(r"github\.com/([^/\s]+/[^/\s]+)/(?:issues|pull)/(\d+)",
                                                  path.read_text(encoding="utf-8")):
                cited.add(f"{owner_repo}/{number}")
    threads = {_thread(p.url) for p in heldout}
    assert not (cited & threads) - CITED_AFTER_FREEZE
    assert CITED_AFTER_FREEZE & threads <= cited  # each exception is still a real citation


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_real_problems_top3_rate_and_confident_wrong_rate(path, capsys):
    problems = load_problems(path)
    hits = wrong = 0
    uncited = [0, 0, 0]  # problems, hits, confidently wrong: those whose thread no knowledge file cites
    misses = []
    for p in problems:
        hit, confident_wrong, shown = judge(p)
        hits += hit
        wrong += confident_wrong
        if _thread(p.url) not in CITED_AFTER_FREEZE:
            uncited = [uncited[0] + 1, uncited[1] + hit, uncited[2] + confident_wrong]
        if not hit or confident_wrong:
            why = "confidently wrong first" if confident_wrong else "missed"
            misses.append(f"  {p.id} ({why}): expected {p.expected}, top {TOP}: {shown}")
    rate, wrong_rate = hits / len(problems), wrong / len(problems)
    with capsys.disabled():
        print(f"\n{path.name}: {hits}/{len(problems)} answered in the top {TOP} ({rate:.0%}); "
              f"{wrong} confidently wrong first ({wrong_rate:.0%})"
              + (f"; uncited only: {uncited[1]}/{uncited[0]}, {uncited[2]} confidently wrong first"
                 if uncited[0] < len(problems) else ""))
        for line in misses:
            print(line)
    floor, ceiling = FLOORS[path.name]
    # the floors hold on the problems whose thread no knowledge file cites (a cited thread measures its citation)
    assert uncited[1] / uncited[0] >= floor, "\n".join(misses)
    assert uncited[2] / uncited[0] <= ceiling


def test_chinese_vocabulary_cites_lines_of_slime_docs_that_use_the_words():
    from core.knowledge.zh import ZH_TERMS_PATH, parse_zh_terms
    from core.pins import pinned_source_dir

    entries = parse_zh_terms(ZH_TERMS_PATH.read_text(encoding="utf-8"))
    assert len(entries) >= 20
    root = pinned_source_dir("slime")
    if not root.is_dir():
        pytest.skip("the pinned slime checkout is not here")
    for entry in entries:
        path, line = entry.source.split("@", 1)[0].rsplit(":", 1)
        lines = (root / path).read_text(encoding="utf-8").splitlines()
        assert any(word in lines[int(line) - 1] for word in entry.zh), entry


def test_a_question_in_chinese_finds_the_card_its_words_name():
    index = get_index()
    def cards(query: str) -> list[str]:
        return [r.id.split("#", 1)[0] for r in index.search(query, limit=3) if r.kind in ("card", "section")]

    assert {"gpu-memory", "symptom-oom-after-steps"} & set(cards("训练时显存一直涨，最后爆了"))
    assert {"symptom-garbage-output", "faq"} & set(cards("rollout 输出全是乱码"))
    assert {"symptom-hang"} & set(cards("训练卡住了，没有任何输出"))
    assert index.search("完全无关的句子") == [] or index.ask("完全无关的句子").results[0].match != "exact"


@pytest.mark.parametrize("problem", [p for p in load_problems() if p.script], ids=lambda p: p.id)
def test_script_problems_are_caught_by_check_args(problem):
    from core.launch import check_script_bytes

    report = check_script_bytes(problem.script.encode())
    codes = {f.code for f in report.findings}
    assert set(problem.script_rules) <= codes, codes


def test_symptom_words_point_at_cards_that_exist_and_outrank_hardware_words():
    from core.knowledge.symptoms import SYMPTOM_WORDS_PATH, parse_symptom_words, symptom_cards

    index = get_index()
    cards = {d.id for d in index.docs if d.kind == "card"}
    entries = parse_symptom_words(SYMPTOM_WORDS_PATH.read_text(encoding="utf-8"))
    assert entries and all(e.card in cards for e in entries)

    def top(query: str) -> list[str]:
        return [f"{r.kind}:{r.id.split('#', 1)[0]}" for r in index.search(query, limit=3)]

    assert "card:symptom-hang" in top("my job is stuck after the first step on 4 nodes of H800 with TP=8, PP=2")
    assert "card:symptom-garbage-output" in top("Qwen3-8B on 16 H20 GPUs with EP=8: responses are gibberish")
    assert top("what does --rollout-batch-size mean")[0] == "flag:--rollout-batch-size"
    assert symptom_cards("hanging") == ["symptom-hang"] and symptom_cards("change the config") == []
    assert symptom_cards("slowly") == []  # whole words only
    assert symptom_cards("the reward is always 0 after 500 steps") == ["symptom-reward-zero"]  # 500 is a count
    assert symptom_cards("HTTP/1.1 503 Service Unavailable") == ["symptom-http-errors"]


def test_vocabularies_are_bounded_on_hostile_input():
    import time

    from core.knowledge.symptoms import symptom_cards
    from core.knowledge.zh import english_words

    text = ("卡住 hang 乱码 " * 200_000)[:2_000_000]
    started = time.monotonic()
    assert set(english_words(text)) == {"hang", "stuck", "garbled", "garbage", "output"}
    assert symptom_cards(text) == ["symptom-hang"]
    get_index().ask(text)
    assert time.monotonic() - started < 10


def test_a_cut_traceback_is_searched_by_the_words_around_it():
    paste = ("Converting my Qwen2 hf checkpoint to torch_dist format with the conversion tool fails\n"
             "[rank0]: Traceback (most recent call last):\n"
             '[rank0]:   File "/home/me/my_convert.py", line 88, in main\n'
             "[rank0]:     model = build(args)\n")
    answer = get_index().ask(paste)
    assert answer.pasted_error and not answer.found
    top = [r.id.split("#", 1)[0] for r in answer.results[:3]]
    assert "checkpoints" in top, top
    assert answer.results[0].kind not in {"error", "log", "runtime", "bug"}
