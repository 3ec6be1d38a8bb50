"""W&B run files: what we read equals what the wandb SDK logged; restarts, damage, cache, CLI as for TensorBoard.

The runs are written once per session by the real `wandb` SDK in offline mode (no network), in slime's
layout: a primary run with the config, then the rollout manager and the actor joining the same id; then a
resumed run (same id) that goes back to rollout 15 (fixtures `wandb_root` and `tb_twin` in conftest.py).
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import diskcache
import numpy as np
import pytest

from core.monitor.sources import describe_found, find_runs, open_run
from core.monitor.tensorboard.synthetic import slime_like_calls
from core.monitor.verdicts import run_verdicts
from core.monitor.views import XAxis, rollout_alignment, shown_table
from core.monitor.wandb.log import BLOCK, CHUNK_HEADER, FILE_HEADER, scan_wandb_bytes, scan_wandb_file
from core.monitor.wandb.run import read_wandb_run
from core.monitor.wandb.synthetic import WANDB_FIRST, WANDB_RESUMED
from core.pins import pinned_source_dir

pytestmark = pytest.mark.wandb_sdk
FIRST, RESUMED = WANDB_FIRST, WANDB_RESUMED

RUN_ID = "slimerun1"


def _files(root: Path) -> list[Path]:
    return sorted((root / "wandb").glob(f"*run-*/run-{RUN_ID}.wandb"))


def test_every_file_holds_exactly_what_its_process_logged(wandb_root):
    files = [describe for describe in find_runs(wandb_root)[0].files]
    assert len(files) == 5  # primary, manager, actor; then manager and actor of the resumed run
    scans = [scan_wandb_file(f) for f in files]
    assert not any(s.damage for s in scans)
    assert scans[0].info.config["rollout_batch_size"] == 32 and not len(scans[0].steps)
    for scan, (scenario, process) in zip(scans[1:], [(FIRST, "rollout_manager"), (FIRST, "actor"),
                                                    (RESUMED, "rollout_manager"), (RESUMED, "actor")], strict=True):
        expected: dict[str, list[tuple[int, float, float]]] = {}
        for call in slime_like_calls(scenario):
            if call.process == process:
                for tag, value in call.values.items():
                    expected.setdefault(tag, []).append((call.step, value, call.wall))
        assert set(scan.tags) == set(expected)
        for tid, tag in enumerate(scan.tags):
            at = scan.tag_ids == tid
            got = list(zip(scan.steps[at].tolist(), scan.values[at].tolist(), scan.wall_times[at].tolist(),
                           strict=True))
            want = expected[tag]
            assert [g[0] for g in got] == [w[0] for w in want], tag
            assert np.array_equal([g[1] for g in got], [w[1] for w in want], equal_nan=True), tag
            assert [g[2] for g in got] == [w[2] for w in want], tag
        assert scan.info.run_id == RUN_ID and scan.info.offline is True and scan.info.exit_code == 0


def test_resumed_run_is_stitched_like_the_tensorboard_twin(wandb_root, tb_twin):
    found = find_runs(wandb_root)
    assert [f.kind for f in found] == ["wandb"] and describe_found(found) == "1 W&B run (5 run files)"
    w = open_run(found[0])
    t = open_run(find_runs(tb_twin)[0])
    assert w.source == "wandb" and t.source == "tensorboard"
    assert w.name == f"{RUN_ID} (slime-test-group)" and w.wandb.project == "slime-test"
    assert set(w.tags) == set(t.tags)
    for tag in t.tags:
        a, b = w.series[tag], t.series[tag]
        assert np.array_equal(a.steps, b.steps), tag
        # TensorBoard keeps float32; W&B keeps the float64 that was logged
        assert np.array_equal(a.values.astype(np.float32), b.values.astype(np.float32), equal_nan=True), tag
        assert np.allclose(a.wall_times, b.wall_times), tag
    assert w.series["rollout/raw_reward"].steps.tolist() == list(range(25))
    marks = {(r.step, r.replaced) for r in w.restarts}
    assert marks == {(r.step, r.replaced) for r in t.restarts} and marks
    assert [(v.code, v.status) for v in run_verdicts(w)] == [(v.code, v.status) for v in run_verdicts(t)]
    aw, at = rollout_alignment(w), rollout_alignment(t)
    assert (aw.stride, aw.steps_per_rollout) == (at.stride, at.steps_per_rollout) == (1, 2)
    tw = shown_table([w], w.tags, XAxis.ROLLOUT, 0.6, {w.name: aw})
    tt = shown_table([t], w.tags, XAxis.ROLLOUT, 0.6, {t.name: at})
    assert tw[["tag", "step", "x"]].equals(tt[["tag", "step", "x"]])
    assert np.allclose(tw["smoothed"], tt["smoothed"], rtol=1e-5, equal_nan=True)


def _history_record_offsets(path: Path) -> list[tuple[int, int]]:
    """(offset, length) of whole-record chunks that hold a history row, in file order."""
    from core.monitor.wandb.proto import peek_class

    peek = peek_class().FromString
    data = path.read_bytes()
    out, pos = [], len(FILE_HEADER)
    while pos + CHUNK_HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER:
            pos += left
            continue
        _, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 1 and peek(data[pos + CHUNK_HEADER:pos + CHUNK_HEADER + length]).HasField("history"):
            out.append((pos, length))
        pos += CHUNK_HEADER + length
    return out


def test_damaged_copy_loses_one_record_and_says_so(wandb_root, tmp_path):
    actor = max(_files(wandb_root)[:3], key=lambda p: p.stat().st_size)
    clean = scan_wandb_file(actor)
    data = bytearray(actor.read_bytes())
    records = _history_record_offsets(actor)
    offset, length = records[len(records) // 2]
    data[offset + CHUNK_HEADER + length // 2] ^= 0x5A  # a flipped byte inside one record's data
    damaged = scan_wandb_bytes(bytes(data))
    assert [d.kind for d in damaged.damage] == ["bad_payload_crc"]
    assert damaged.damage[0].offset == offset
    assert damaged.history_rows == clean.history_rows - 1 and damaged.records == clean.records - 1
    assert 8 <= len(clean.steps) - len(damaged.steps) <= 10  # the values of that one row

    broken_length = bytearray(actor.read_bytes())
    offset, _ = records[len(records) // 3]
    broken_length[offset + 4] ^= 0x40  # the chunk's length: its checksum no longer matches
    scan = scan_wandb_bytes(bytes(broken_length))
    assert scan.damage and scan.damage[0].offset == offset and scan.damage[0].kind == "bad_length"
    assert len(scan.steps) >= len(clean.steps) - 40  # at most the records of one block are lost
    assert scan.records > clean.records // 2

    cut = scan_wandb_bytes(actor.read_bytes()[:-5])
    assert [d.kind for d in cut.damage] == ["truncated"]
    assert len(cut.steps) == len(clean.steps)  # the exit/footer records at the end hold no scalars

    not_wandb = tmp_path / "run-x.wandb"
    not_wandb.write_bytes(b"\x00\x01" * 500)
    scan = scan_wandb_file(not_wandb)
    assert not scan.looks_like_events and scan.damage[0].kind == "not_wandb_file"


def test_cache_reopens_and_reads_only_what_was_appended(wandb_root, tmp_path):
    files = [Path(f) for f in find_runs(wandb_root)[0].files]
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        first = read_wandb_run(files, cache=cache)
        again = read_wandb_run(files, cache=cache)
        assert {f.how for f in first.files} == {"read"} and {f.how for f in again.files} == {"cached"}
        assert again.scalar_count() == first.scalar_count()
        actor = max(files[:3], key=lambda p: p.stat().st_size)
        data = actor.read_bytes()
        offset, _ = _history_record_offsets(actor)[-20]
        growing = tmp_path / "live" / actor.parent.name / actor.name
        growing.parent.mkdir(parents=True)
        growing.write_bytes(data[:offset + 3])  # the writer is inside a record
        partial = read_wandb_run([growing], cache=cache)
        assert [d.kind for d in partial.files[0].damage] == ["truncated"]
        growing.write_bytes(data)
        grown = read_wandb_run([growing], cache=cache)
        assert grown.files[0].how == "appended" and not grown.files[0].damage
        whole = read_wandb_run([actor])
        for tag in whole.tags:
            assert np.array_equal(grown.series[tag].values, whole.series[tag].values, equal_nan=True)
            assert np.array_equal(grown.series[tag].steps, whole.series[tag].steps)


def test_cli_json_keeps_its_shape_and_names_the_source(wandb_root, tb_twin, tmp_path, capsys):
    from core.cli import main

    both = tmp_path / "both"
    shutil.copytree(wandb_root / "wandb", both / "wandb", symlinks=True)
    shutil.copytree(tb_twin, both / "tensorboard_log" / "run")
    code = main(["logs", str(both), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1, 3)
    by_source = {r["source"]: r for r in out["runs"]}
    assert set(by_source) == {"tensorboard", "wandb"}
    w, t = by_source["wandb"], by_source["tensorboard"]
    assert w["tags"] == t["tags"] and w["tags"]["rollout/raw_reward"] == {"first_step": 0, "last_step": 24,
                                                                          "points": 25}
    assert [v["status"] for v in w["verdicts"]] == [v["status"] for v in t["verdicts"]]
    assert set(w) == set(t)


def test_cli_names_a_file_that_is_not_a_wandb_run_file(tmp_path, capsys):
    from core.cli import main

    bad = tmp_path / "run-zzz.wandb"
    bad.write_bytes(b"not a run file at all" * 10)
    code = main(["logs", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "not a W&B run file" in err


def test_config_is_written_back_as_launch_arguments_and_checked(wandb_root):
    from core.monitor.wandb.config import as_script_lines, check_config

    run = open_run(find_runs(wandb_root)[0])
    form, report = check_config(run.wandb.config, gpus=8)
    assert "--rollout-batch-size" in form.args and form.args[form.args.index("--rollout-batch-size") + 1] == "32"
    assert "--use-kl-loss" in form.args and "--use-wandb" in form.args
    assert "--wandb-always-use-train-step" not in form.args  # False is the default: left out
    assert "--rollout-batch-size 32" in as_script_lines(form.args)
    codes = {f.code for f in report.findings}
    assert "MODE006" in codes  # --use-kl-loss with --kl-loss-coef 0, as the config says


# -- hand-framed files (no SDK): the step rules and odd values ---------------------------------------------

def _slime_metrics() -> list[bytes]:
    from core.monitor.wandb.synthetic import SLIME_DEFINE_METRICS, metric_record

    return [metric_record(m, s) for m, s in SLIME_DEFINE_METRICS]


def test_always_use_train_step_keeps_the_logged_rollout_steps(tmp_path):
    """With --wandb-always-use-train-step slime logs rollout/step = rollout_id * (optimizer steps per rollout)
    (slime/observability/metric_utils.py:120-123@624b824a); the reader keeps those steps, as TensorBoard does."""
    from core.monitor.wandb.synthetic import frame_wandb_records, history_record

    records = _slime_metrics()
    for r in range(12):
        records.append(history_record({"rollout/raw_reward": 0.1 * r, "rollout/step": r * 4, "_timestamp": 1e9 + r}))
        for i in range(4):
            records.append(history_record({"train/grad_norm": 1.0, "train/step": r * 4 + i, "_timestamp": 1e9 + r}))
    path = tmp_path / "run-x.wandb"
    path.write_bytes(frame_wandb_records(records))
    run = read_wandb_run([path])
    assert run.series["rollout/raw_reward"].steps.tolist() == [r * 4 for r in range(12)]
    assert run.series["train/grad_norm"].steps.tolist() == list(range(48))
    assert "rollout/step" not in run.series and "train/step" not in run.series
    a = rollout_alignment(run)
    assert (a.stride, a.steps_per_rollout) == (4, 4)


def test_odd_values_rows_without_their_step_and_long_records(tmp_path):
    from core.monitor.wandb.synthetic import frame_wandb_records, history_record

    records = _slime_metrics() + [
        history_record({"rollout/raw_reward": 1.0, "rollout/step": 0, "_timestamp": 5.0}),
        history_record({"rollout/raw_reward": "NaN", "rollout/flag": True, "rollout/name": "text",
                        ("rollout/nested", "a"): 2, "rollout/step": 1, "_timestamp": 6.0}),
        # no rollout/step in the row: the last one seen is used (W&B's step_sync)
        history_record({"rollout/raw_reward": "Infinity", "_timestamp": 7.0}),
        history_record({"rollout/hist": {"_type": "histogram", "bins": [0, 1], "values": [1]}, "rollout/step": 2}),
        history_record({"my_metric": 3.0, "_step": 17}),  # no step metric declared: W&B's own step
        history_record({"rollout/big": 0.5, "rollout/step": 3, "padding": "x" * 100_000}),  # spans blocks
    ]
    scan = scan_wandb_bytes(frame_wandb_records(records))
    assert not scan.damage
    got = {tag: (scan.steps[scan.tag_ids == i].tolist(), scan.values[scan.tag_ids == i].tolist())
           for i, tag in enumerate(scan.tags)}
    assert got["rollout/raw_reward"][0] == [0, 1, 1]
    assert got["rollout/raw_reward"][1][0] == 1.0 and np.isnan(got["rollout/raw_reward"][1][1])
    assert got["rollout/raw_reward"][1][2] == float("inf")
    assert got["rollout/flag"] == ([1], [1.0]) and got["rollout/nested.a"] == ([1], [2.0])
    assert got["my_metric"] == ([17], [3.0]) and got["rollout/big"] == ([3], [0.5])
    assert "rollout/name" not in got and "rollout/hist" not in got and scan.non_scalar_values >= 2


def test_header_then_garbage_is_one_report_not_a_crash():
    import os

    data = FILE_HEADER + os.urandom(300_000)
    scan = scan_wandb_bytes(data)
    assert not scan.looks_like_events and len(scan.damage) == 1 and scan.damage[0].length == 300_000


def test_copies_of_a_run_in_two_folders_stay_two_runs_and_links_are_not_followed(wandb_root, tmp_path):
    for name in ("a", "b"):
        shutil.copytree(wandb_root / "wandb", tmp_path / name / "wandb", symlinks=True)
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    found = find_runs(tmp_path)
    assert sorted(f.label for f in found) == ["a/slimerun1", "b/slimerun1"]
    assert all(len(f.files) == 5 for f in found)


def test_without_wandb_installed_the_cli_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    import importlib.util

    from core.cli import main
    from core.monitor.wandb import proto as wandb_proto
    from core.monitor.wandb.synthetic import frame_wandb_records

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "wandb" else real_find_spec(name, *a))
    wandb_proto.record_class.cache_clear()
    wandb_proto.peek_class.cache_clear()
    try:
        path = tmp_path / "run-x.wandb"
        path.write_bytes(frame_wandb_records([b""]))
        code = main(["logs", str(path)])
        err = capsys.readouterr().err
        assert code == 2 and "pip install" in err and "wandb" in err and "Traceback" not in err
    finally:
        wandb_proto.record_class.cache_clear()
        wandb_proto.peek_class.cache_clear()


def test_credentials_in_the_config_are_never_written_back():
    from core.launch import load_catalog
    from core.monitor.wandb.config import config_to_args

    form = config_to_args({"wandb_key": "abcd1234secret", "sglang_api_key": "s3", "rollout_batch_size": 8},
                          load_catalog())
    assert "abcd1234secret" not in form.args and "s3" not in form.args
    assert form.args[form.args.index("--wandb-key") + 1] == "<hidden>"


def test_config_says_how_many_optimizer_steps_per_rollout():
    from core.monitor.wandb.config import steps_per_rollout_note

    note = steps_per_rollout_note({"rollout_batch_size": 32, "n_samples_per_prompt": 8, "global_batch_size": 128,
                                   "wandb_always_use_train_step": True})
    assert note and "2 optimizer step(s) per rollout" in note and "--wandb-always-use-train-step" in note
    assert steps_per_rollout_note({"rollout_batch_size": "x"}) is None


SLIME_SRC = pinned_source_dir("slime")


@pytest.mark.skipif(not SLIME_SRC.is_dir(), reason="needs the slime checkout at the pinned commit")
def test_cited_slime_lines_say_what_we_cite_them_for():
    from core.monitor.wandb import log as wandb_log

    expected = {
        wandb_log.SRC_DEFINE_METRIC: "def _init_wandb_common",
        wandb_log.SRC_WANDB_LOG: "def log(args, metrics, step_key",
        wandb_log.SRC_WANDB_ARGS: "def add_wandb_arguments",
        wandb_log.SRC_WANDB_CONFIG: "def _compute_config_for_logging",
        "slime/utils/arguments.py:1972@": "global_batch_size = args.rollout_batch_size * args.n_samples_per_prompt",
        "slime/observability/metric_utils.py:121@": "if args.wandb_always_use_train_step",
    }
    for cite, text in expected.items():
        path, line = cite.split("@")[0].rsplit(":", 1)
        lines = (SLIME_SRC / path).read_text(encoding="utf-8").splitlines()
        assert text in lines[int(line) - 1], cite
