"""Property tests (Hypothesis): random bytes to the event-file reader, random structured inputs to the
`logs` command's core entry; neither may raise, whatever it is given."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from core.cli.logs import collect_runs, exit_code, render_run_text, run_to_json  # noqa: E402
from core.cli.output import json_text  # noqa: E402
from core.monitor.report import evidence_rows, read_findings  # noqa: E402
from core.monitor.tensorboard.events import scan_event_bytes  # noqa: E402
from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event  # noqa: E402
from core.monitor.verdicts import run_verdicts  # noqa: E402

SETTINGS = settings(max_examples=200, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

VALID = b"".join([frame_record(file_version_event())]
                 + [frame_record(scalar_event(t, float(i), i)) for i in range(30)
                    for t in ("rollout/raw_reward", "train/kl_loss", "eval/retail-dev")])


def check_scan(data: bytes) -> None:
    scan = scan_event_bytes(data)
    assert len(scan.steps) == len(scan.values) == len(scan.tag_ids) == len(scan.wall_times)
    assert all(0 <= d.offset <= len(data) for d in scan.damage)


@SETTINGS
@given(st.binary(max_size=4096))
def test_random_bytes_never_raise(data):
    check_scan(data)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=20),
       st.integers(0, len(VALID)))
def test_mutated_event_files_never_raise(flips, cut):
    buf = bytearray(VALID[:cut] if cut else VALID)
    for pos, byte in flips:
        if pos < len(buf):
            buf[pos] = byte
    check_scan(bytes(buf))


@SETTINGS
@given(st.lists(st.binary(max_size=64), max_size=8), st.integers(0, 2**64 - 1))
def test_well_framed_garbage_and_huge_lengths_never_raise(payloads, length):
    data = b"".join(frame_record(p) for p in payloads) + struct.pack("<Q", length) + b"\0" * 8
    check_scan(data)


NAMES = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
RAW_NAMES = st.binary(min_size=1, max_size=12).map(lambda b: os.fsdecode(b.replace(b"/", b"_").replace(b"\0", b"_")))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return tmp_path_factory.mktemp("prop")


@SETTINGS
@given(st.lists(st.tuples(st.one_of(NAMES, RAW_NAMES), st.sampled_from(["file", "dir", "events", "damaged"]),
                          st.binary(max_size=200)), min_size=1, max_size=4),
       st.lists(st.one_of(NAMES, RAW_NAMES, st.sampled_from(["~nosuchuser-x/y", "", ".", "..", "fifo",
                                                              "/dev/null", "x" * 300])), max_size=3))
def test_logs_core_entry_never_raises(tree, entries, extra_paths):
    """Only this case's own folder is read: `.`, `..` and plain names are taken inside it (never the working
    directory or its parent); `/dev/null` is refused by its kind before any open, `~nosuchuser` before any look."""
    case = tree / f"case{np.random.default_rng().integers(1 << 62)}"
    (case / "inner").mkdir(parents=True)
    os.mkfifo(case / "inner" / "fifo")
    base = os.fsencode(case)
    paths = []
    for name, kind, data in entries:
        target = base + b"/" + os.fsencode(name).replace(b"\0", b"_").replace(b"/", b"_")[:200]
        if target.endswith((b"/.", b"/..")) or os.path.lexists(target):
            continue
        if kind == "dir":
            os.makedirs(target + b"/events.out.tfevents.x", exist_ok=True)
        elif kind == "events":
            with open(target, "wb") as fh:
                fh.write(VALID)
        elif kind == "damaged":
            with open(target, "wb") as fh:
                fh.write(VALID[: len(data) * 10] + data)
        else:
            with open(target, "wb") as fh:
                fh.write(data)
        paths.append(os.fsdecode(target))
    inner = base + b"/inner/"
    paths.extend(p if p in ("", "/dev/null") or p.startswith("~") else os.fsdecode(inner + os.fsencode(p)[:200])
                 for p in extra_paths)
    assert all(p in ("", "/dev/null") or p.startswith("~") or p.startswith(str(case)) for p in paths)
    paths.append(str(case))
    notes: list[str] = []
    runs, problems = collect_runs(paths, cache=None, notes=notes)
    results = [(run, run_verdicts(run)) for run in runs]
    assert exit_code(results, problems) in (0, 1, 2, 3)
    for run, verdicts in results:
        render_run_text(run, verdicts)
        json_text(str(run_to_json(run, verdicts)))
        read_findings(run)
        for v in verdicts:
            evidence_rows(v.evidence)
