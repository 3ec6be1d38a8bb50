"""Issue 15 items 9, 12, 14, 15 and issue 10/11 monitor items: hostile zips, checksums at memory speed, a
tag filter that never compiles user text, bounded statistics, KL judged on magnitude, `eval/<name>` tags."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from core.monitor import verdicts as v
from core.monitor.archive import unpack_zip
from core.monitor.report import evidence_rows
from core.monitor.runs import RunData, Series
from core.monitor.slime_metrics import eval_score_tags, filter_tags, glob_search
from core.monitor.tensorboard import crc
from core.monitor.tensorboard.events import scan_event_bytes
from core.monitor.tensorboard.run import walk_runs
from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event

# -- item 9: zip members that clash, name nothing, or are too long ----------------------------------------


def unzip(tmp_path, members: list[tuple[str, bytes]]):
    archive = tmp_path / "upload.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in members:
            zf.writestr(name, data)
    return unpack_zip(archive, tmp_path)


@pytest.mark.parametrize("members, kept, reason", [
    ([("run", b"x"), ("run/events.out.tfevents.1", b"y")], 1, "an earlier member is a file named 'run'"),
    ([("run/events.out.tfevents.1", b"y"), ("run", b"x")], 1, "made a folder of the same name"),
    ([(".", b"x")], 0, "it names no file"),
    ([("a/" * 3000 + "events.out.tfevents.1", b"x")], 0, "folders deep; at most 32"),
    ([("r/" + "b" * 300, b"x")], 0, "300 characters long; at most 200"),
    ([("r/events.out.tfevents.1", b"1"), ("r/events.out.tfevents.1", b"2")], 1, "the same name"),
], ids=["file-then-dir", "dir-then-file", "dot", "3000-deep", "300-chars", "duplicate"])
def test_zip_members_refused_with_a_message(tmp_path, members, kept, reason):
    with pytest.warns(UserWarning) if members[0][0] == members[-1][0] and len(members) > 1 else _no_warning():
        got = unzip(tmp_path, members)
    assert len(got.files) == kept
    messages = " ".join(n.message for n in got.notices)
    assert reason in messages
    assert all(len(n.message) < 400 for n in got.notices)  # long names are shortened in messages


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_first_member_kept_intact_on_duplicate(tmp_path):
    with pytest.warns(UserWarning):
        got = unzip(tmp_path, [("r/events.out.tfevents.1", b"first"), ("r/events.out.tfevents.1", b"second")])
    assert open(got.files[0], "rb").read() == b"first"


def test_dot_directory_members_are_ignored_quietly(tmp_path):
    got = unzip(tmp_path, [("./", b""), ("./run/events.out.tfevents.1", b"x")])
    assert len(got.files) == 1 and not got.notices


# -- item 12: every record's checksum at memory speed ----------------------------------------------------

def test_c_checksum_is_used_and_agrees_with_the_fallback():
    pytest.importorskip("crc32c")
    assert crc._c_crc32c() is not None
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 50_000, dtype=np.uint8)
    offsets = np.array([0, 10, 1000, 20_000, 49_999])
    lengths = np.array([10, 990, 19_000, 29_999, 1])
    fast = crc.masked_crc32c_many(buf, offsets, lengths)
    slow = crc.masked_crc32c_many(buf, offsets, lengths, use_c=False)
    assert (fast == slow).all()


def test_large_record_is_still_verified():
    """A 2 MB record (an image, say) passes through at C speed, and a flipped byte in it is still caught."""
    pytest.importorskip("crc32c")
    from tensorboard.compat.proto import event_pb2

    big = event_pb2.Event(step=1, wall_time=1.0)
    value = big.summary.value.add(tag="image")
    value.image.encoded_image_string = bytes(2 * 1024 * 1024)
    records = [frame_record(file_version_event()), frame_record(big.SerializeToString()),
               frame_record(scalar_event("rollout/raw_reward", 0.5, 1))]
    data = b"".join(records)
    scan = scan_event_bytes(data)
    assert len(scan.steps) == 1 and not scan.damage and scan.non_scalar_values == 1
    damaged = bytearray(data)
    damaged[len(records[0]) + 1_000_000] ^= 1
    scan = scan_event_bytes(bytes(damaged))
    assert [d.kind for d in scan.damage] == ["bad_payload_crc"]
    assert len(scan.steps) == 1  # the scalar after the damaged record is kept


# -- item 14: the tag filter never compiles the user's text -----------------------------------------------

TAGS = ["rollout/raw_reward", "train/kl_loss", "train/entropy_loss", "perf/rollout_time", "a" * 25]


def test_filter_takes_regex_syntax_literally(monkeypatch):
    import re

    def refuse(*args, **kwargs):
        raise AssertionError("the filter must not compile user text")

    monkeypatch.setattr(re, "compile", refuse)
    assert filter_tags(TAGS, "(a+)+$") == ([], None)
    assert filter_tags(["x(a+)+$y"], "(a+)+$") == (["x(a+)+$y"], None)


@pytest.mark.parametrize("pattern, expected", [
    ("reward", ["rollout/raw_reward"]),
    ("REWARD", ["rollout/raw_reward"]),
    ("kl entropy", ["train/kl_loss", "train/entropy_loss"]),
    ("kl|entropy", ["train/kl_loss", "train/entropy_loss"]),
    ("train/*loss", ["train/kl_loss", "train/entropy_loss"]),
    ("r?ll", ["rollout/raw_reward", "perf/rollout_time"]),
    ("*", TAGS),
    ("", TAGS),
])
def test_filter_words_and_wildcards(pattern, expected):
    assert filter_tags(TAGS, pattern)[0] == expected


def test_glob_search_has_no_backtracking_blowup():
    assert not glob_search("*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000)
    assert glob_search("a*b", "xxaxxbxx")


# -- item 15: every statistic has a bounded cost ------------------------------------------------------------

def make_run(curves: dict[str, tuple]) -> RunData:
    run = RunData(name="r", path="/r")
    for tag, (steps, values) in curves.items():
        steps = np.asarray(steps, dtype=np.int64)
        run.series[tag] = Series(tag=tag, steps=steps, values=np.asarray(values, dtype=np.float64),
                                 wall_times=steps.astype(float), files=np.zeros(len(steps), np.int32))
    return run


def test_mann_kendall_bins_long_series(monkeypatch):
    seen = []
    real = np.triu_indices

    def spy(n, k=0, m=None):
        seen.append(n)
        return real(n, k, m)

    monkeypatch.setattr(v.np, "triu_indices", spy)
    steps = np.arange(20_000)
    run = make_run({"rollout/raw_reward": (steps, steps * 1e-4), "eval/aime": (steps, steps * 1e-4)})
    verdict = v.check_eval_tracks_training(run)
    assert verdict.status == "ok"
    assert seen and max(seen) <= v.MAX_TREND_POINTS
    assert v.mann_kendall_z(np.arange(20_000.0)) > v.Z_SIGNIFICANT


# -- issue 10: KL judged on trend and magnitude ----------------------------------------------------------------

def test_tiny_kl_growth_is_not_a_warning():
    steps = np.arange(200)
    kl = np.linspace(0.00016, 0.00067, 200)
    verdict = v.check_kl_growth(make_run({"train/ppo_kl": (steps, kl)}))
    assert verdict.status == "ok"
    assert "below 0.01" in verdict.message and "grew" in verdict.message
    assert verdict.evidence["threshold_applied"] == "level below 0.01"
    assert verdict.source.startswith("slime/backends/megatron_utils/loss.py:1033")


def test_kl_warning_and_failure_say_the_threshold():
    steps = np.arange(200)
    warn = v.check_kl_growth(make_run({"train/kl_loss": (steps, np.linspace(0.004, 0.03, 200))}))
    fail = v.check_kl_growth(make_run({"train/kl_loss": (steps, np.linspace(0.01, 0.5, 200))}))
    assert warn.status == "warn" and ">= 3x its start and at least 0.01" in warn.message
    assert fail.status == "fail" and ">= 10x its start and at least 0.1" in fail.message
    assert fail.source.startswith("slime/backends/megatron_utils/loss.py:1153")


# -- issue 11: eval/<dataset> with any name ---------------------------------------------------------------------

def test_eval_tags_with_dashes_are_read():
    tags = ["eval/retail-dev", "eval/retail-dev-truncated_ratio", "eval/retail-dev-pass@4", "eval/aime",
            "eval/aime/response_len/mean", "eval/gsm8k-test"]
    assert eval_score_tags(tags) == ["eval/aime", "eval/gsm8k-test", "eval/retail-dev"]


# -- issue 10: evidence for people, not JSON --------------------------------------------------------------------

def test_evidence_rows_are_words_and_short_values():
    rows = evidence_rows({"tag": "train/kl_loss", "first_10pct_mean": 0.000161234, "eval/aime:z": 2.5,
                          "spike_steps": list(range(30)), "missing": None, "empty": []})
    assert rows[0] == {"what": "curve", "value": "train/kl_loss"}
    assert rows[1] == {"what": "mean of the first tenth", "value": "0.0001612"}
    assert rows[2]["what"] == "eval/aime: trend z (Mann-Kendall)"
    assert rows[3]["value"].endswith("(and 20 more)")
    assert rows[4]["value"] == "-" and rows[5]["value"] == "none"
    assert not any("{" in r["value"] for r in rows)


# -- item 7: the walk is iterative and bounded -------------------------------------------------------------------

def test_walk_stops_at_the_depth_limit_with_a_note(tmp_path):
    deep = tmp_path
    for _ in range(40):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "events.out.tfevents.1").write_bytes(b"")
    (tmp_path / "events.out.tfevents.0").write_bytes(b"")
    runs, notes = walk_runs(tmp_path)
    assert runs == [tmp_path]
    assert "more than 32 levels down" in notes[0]
    runs, notes = walk_runs(tmp_path, max_depth=64)
    assert len(runs) == 2 and not notes


# -- the reader's purge rules cost O(n log n), whatever the order of steps ---------------------------------

def reference_keep_mask(scan) -> np.ndarray:
    """TensorBoard's purge rules one event at a time (quadratic; the definition the fast version must match)."""
    from core.monitor.scan import KIND_START, KIND_SUMMARY

    n = scan.compat_scalars
    keep = np.ones(n, dtype=bool)
    v2 = scan.file_version is not None and scan.file_version >= 2
    most_recent = -1
    for e in range(scan.compat_events):
        kind, step = int(scan.event_kinds[e]), int(scan.event_steps[e])
        first, count = int(scan.event_first[e]), int(scan.event_counts[e])
        if v2:
            if kind == KIND_START:
                keep[:first] &= scan.steps[:first] < step
        elif step < most_recent and kind == KIND_SUMMARY:
            for tid in set(scan.tag_ids[first:first + count].tolist()):
                sel = np.flatnonzero(scan.tag_ids[:first] == tid)
                keep[sel[scan.steps[sel] >= step]] = False
        else:
            most_recent = step
    return keep


def random_scan(rng, n_events: int, version):
    from core.monitor.scan import FileScan

    kinds = rng.choice([0, 1, 1, 1, 2], n_events).astype(np.int8)
    steps = rng.integers(0, 10, n_events).astype(np.int64)
    counts = np.where(kinds == 1, rng.integers(0, 3, n_events), 0).astype(np.int32)
    firsts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    n = int(counts.sum())
    scan = FileScan(path="", size=0, mtime_ns=0, steps=np.repeat(steps, counts),
                    tag_ids=rng.integers(0, 3, n).astype(np.int32), values=np.zeros(n), wall_times=np.zeros(n),
                    event_steps=steps, event_kinds=kinds, event_first=firsts, event_counts=counts,
                    file_version=version)
    scan.compat_scalars, scan.compat_events = n, n_events
    return scan


@pytest.mark.parametrize("version", [None, 1.0, 2.0])
def test_purge_rules_match_the_definition(version):
    from core.monitor.scan import accumulator_keep_mask

    rng = np.random.default_rng(11)
    for _ in range(400):
        scan = random_scan(rng, int(rng.integers(1, 40)), version)
        assert (accumulator_keep_mask(scan, compatible=True) == reference_keep_mask(scan)).all()


def test_purge_rules_on_a_hostile_order_finish():
    """200,000 events whose steps go back every time (and as many STARTs): one pass, not 200,000."""
    from core.monitor.scan import accumulator_keep_mask

    rng = np.random.default_rng(5)
    for version in (1.0, 2.0):
        scan = random_scan(rng, 200_000, version)
        assert len(accumulator_keep_mask(scan, compatible=True)) == scan.compat_scalars


def test_a_run_that_restarts_thousands_of_times_lists_twenty(tmp_path):
    """Steps that go back on every record: the findings and the text list 20 restarts and count the rest."""
    from core.cli.logs import render_run_text
    from core.monitor.report import read_findings
    from core.monitor.tensorboard.run import read_run
    from core.monitor.tensorboard.synthetic import write_raw_event_file
    from core.monitor.verdicts import run_verdicts

    payloads = [file_version_event()]
    for i in range(3000):
        payloads.append(scalar_event("rollout/raw_reward", float(i), 3000 - i))  # each one goes back
    write_raw_event_file(tmp_path / "events.out.tfevents.1", payloads)
    run = read_run(tmp_path)
    findings = read_findings(run)
    assert sum(f.code == "MON110" for f in findings) == 20
    assert any(f.code == "MON111" and "more restarts" in f.message for f in findings)
    text = render_run_text(run, run_verdicts(run))
    assert text.count("restart:") == 20 and "more restarts" in text


# -- issue 28, defect 12 and first-hour item 1: many files, a big parent folder ------------------------------
def cut_event_files(run_dir, n: int, start: int = 0) -> None:
    """`n` small event files, each ending inside its last record (as a copy cut short)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    head = frame_record(file_version_event()) + frame_record(scalar_event("rollout/raw_reward", 0.5, 1))
    for i in range(start, start + n):
        cut = frame_record(scalar_event("rollout/raw_reward", 0.5, i + 2))
        (run_dir / f"events.out.tfevents.{1_750_000_000 + i}.host").write_bytes(head + cut[: len(cut) // 2])


def test_a_run_reads_at_most_its_file_limit_the_newest_first(tmp_path, monkeypatch):
    import core.monitor.tensorboard.run as tb_run
    from core.cli.logs import collect_runs, render_run_text
    from core.monitor.report import read_findings

    monkeypatch.setattr(tb_run, "MAX_EVENT_FILES_PER_RUN", 20)  # 200 in the product; 100,000 files in the issue
    cut_event_files(tmp_path / "run", 100)
    [run], problems = collect_runs([str(tmp_path / "run")])
    assert len(run.files) == 20 and run.files[0].name == "events.out.tfevents.1750000080.host" and not problems
    assert run.notes == ["80 older event file(s) of this folder were left out: at most 20 are read per run, the "
                         "newest by name (a run writes a few; are many runs or copies in one folder?)"]
    text = render_run_text(run, v.run_verdicts(run))
    assert sum("end inside a record" in line for line in text.splitlines()) == 1  # one line per kind of damage
    assert "! 20 files end inside a record" in text
    findings = read_findings(run)
    assert [f.code for f in findings].count("MON103") == 1 and any(f.code == "MON108" for f in findings)


def test_a_big_parent_folder_stays_within_the_files_one_command_reads(tmp_path, monkeypatch):
    import core.cli.logs as logs

    monkeypatch.setattr(logs, "MAX_FILES_PER_CALL", 25)  # 600 in the product
    for k in range(6):
        cut_event_files(tmp_path / "parent" / f"run{k}", 10, start=100 * k)
    notes: list[str] = []
    runs, problems = logs.collect_runs([str(tmp_path / "parent")], notes=notes)
    assert [r.name for r in runs] == ["run0", "run1"] and not problems
    assert notes == [f"{tmp_path / 'parent'}: 4 run(s) were not read (run2, run3, run4 and 1 more): one command "
                     "reads at most 25 run files; name the runs' own folders to read them"]
