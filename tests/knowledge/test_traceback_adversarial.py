"""The traceback reader against inputs built to defeat its patterns (issue 28, defects 4 and 10).

Every regular expression that reads a paste is run on lines made of the pieces it looks for, repeated tens of
thousands of times (runs of spaces, `[` without `]`, `x.py:` without a line number, `pid=` without a value...):
a pattern with nested quantifiers over the same characters takes seconds on such a line, a linear one
milliseconds. The bounds are loose (the machine is shared); what they catch is quadratic time, not a slow
second."""

from __future__ import annotations

import io
import re
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.knowledge.search as search_module
import core.knowledge.traceback as traceback_module
from core.cli.ask import MAX_STDIN_CHARS, read_query_cut
from core.knowledge.search import get_index
from core.knowledge.traceback import MAX_LINE_CHARS, read_paste

# The literal pieces and character classes of the patterns in core/knowledge/traceback.py and the paste
# patterns of core/knowledge/search.py.
ATOMS = (" ", "\t", "[", "]", "x", "a", "_", ".", ":", "-", "0", "9", "(", ")", ",", "=", "pid=", "ip=", "node_id=",
         "INFO", "ERROR ", "WARNING:", "File \"", "\"", ", line ", ", in ", "Error", "Exception", "x.py:", "x.py:1 -",
         "[repeated ", "3x across cluster]", "\x1b[", "\x1b]0;", "0x", "During handling of the above exception",
         "Traceback (most recent call last)", "[rank0]:", "2026-01-01 00:00:00", "12:34:56", "^", "~", "ray::",
         "deadbeef", "10.0.0.1:", "\r", "\x00", "\n")
BOUND_S = 10.0


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    found = [(f"traceback.{n}", p) for n, p in vars(traceback_module).items() if isinstance(p, re.Pattern)]
    found += [(f"search.{n}", getattr(search_module, n)) for n in ("_FRAME_OR_CODE_RE", "_LOG_MARK_RE")]
    return found


def test_every_pattern_of_the_reader_is_linear_on_long_runs_of_what_it_looks_for():
    slow = []
    for name, pattern in _patterns():
        for atom in ATOMS:
            for tail in ("", "!", "\n"):
                line = atom * (10_000 // len(atom)) + tail
                started = time.monotonic()
                if name == "search._LOG_MARK_RE":
                    pattern.search(line)
                elif name.startswith("search."):
                    pattern.match(line)
                else:
                    pattern.sub("", line[:MAX_LINE_CHARS])
                    pattern.match(line)
                took = time.monotonic() - started
                if took > 1.0:
                    slow.append((name, repr(atom), tail, round(took, 2)))
    assert not slow, slow


@st.composite
def adversarial_paste(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(ATOMS), st.integers(1, 40_000)), min_size=1, max_size=6))
    text = "".join(atom * count for atom, count in parts)
    return text[:400_000]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(adversarial_paste())
def test_reading_and_asking_stay_bounded_on_built_pastes(text):
    started = time.monotonic()
    read_paste(text)
    get_index().ask(text)
    assert time.monotonic() - started < BOUND_S


def test_the_reproducers_of_defect_4_finish_quickly():
    index = get_index()
    for text in ("ValueError: bad value" + " " * 200_000 + "\n",
                 "hello\n" + " " * 200_000 + "\nworld\n",
                 "[" + "x" * 200_000 + "] INFO " + " " * 1000 + "\n",
                 "[x] INFO " + " " * 200_000 + "model.py:12 - step 1\n"):
        started = time.monotonic()
        index.ask(text)
        assert time.monotonic() - started < BOUND_S


TRACEBACK = ("ValueError: rollout_routed_experts is required in rollout_data when use_rollout_routing_replay "
             "is set.\n")
LOG_LINES = "".join(f"(MegatronTrainRayActor pid=1) [2026-01-01 00:00:00] model.py:649 - step {i}: "
                    f"{{'train/loss': 0.1, 'train/grad_norm': 0.07, 'train/step': {i}}} and some padding\n"
                    for i in range(4000))


def test_a_long_log_before_the_traceback_still_finds_the_message_and_says_the_beginning_was_cut():
    index = get_index()
    alone = index.ask(TRACEBACK)
    assert alone.found and alone.results[0].match == "exact"
    for prefix in (LOG_LINES, "\r" * 300_000, "\x00" * 300_000, "\r\n" * 200_000):
        answer = index.ask(prefix + TRACEBACK)
        assert answer.found, prefix[:20]
        assert answer.results[0].id == alone.results[0].id and answer.results[0].match == "exact"
    assert index.ask(LOG_LINES + TRACEBACK).cut_chars > 0


def test_ask_reads_the_end_of_a_long_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(LOG_LINES + TRACEBACK))
    text, replaced, cut = read_query_cut(["-"])
    assert not replaced and len(text) == MAX_STDIN_CHARS and text.endswith(TRACEBACK)
    assert cut == len(LOG_LINES + TRACEBACK) - MAX_STDIN_CHARS
    monkeypatch.setattr("sys.stdin", io.StringIO(TRACEBACK))
    assert read_query_cut(["-"]) == (TRACEBACK, False, 0)
