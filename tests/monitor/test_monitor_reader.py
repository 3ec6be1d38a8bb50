"""Event-file reader: tbparse's DataFrame rebuilt exactly on every test log; damage found and read past."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tbparse import SummaryReader

from core.monitor.scan import accumulator_keep_mask
from core.monitor.tensorboard.crc import masked_crc32c
from core.monitor.tensorboard.events import scan_event_bytes, scan_event_file
from core.monitor.tensorboard.run import read_run, tbparse_frame
from core.monitor.tensorboard.synthetic import (
    Scenario,
    file_version_event,
    frame_record,
    scalar_event,
    session_start_event,
    write_raw_event_file,
    write_slime_like_run,
)


def _flip_bit(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


def _biggest_event_file(run: Path) -> Path:
    return max((p for p in run.iterdir() if "tfevents" in p.name), key=lambda p: p.stat().st_size)


def _healthy(d: Path) -> Path:
    write_slime_like_run(d, Scenario(rollouts=20))
    return d


def _restarted(d: Path) -> Path:
    write_slime_like_run(d, Scenario(rollouts=20, seed=1))
    write_slime_like_run(d, Scenario(rollouts=10, first_rollout=15, seed=2, wall_start=1_760_000_000.0))
    return d


def _truncated_tail(d: Path) -> Path:
    write_slime_like_run(d, Scenario(rollouts=10))
    f = _biggest_event_file(d)
    with open(f, "r+b") as fh:
        fh.truncate(f.stat().st_size - 7)
    return d


def _payload_start_near(path: Path, target: int) -> int:
    """Offset of the first payload byte of the record that starts at or after `target`."""
    data = path.read_bytes()
    pos = 0
    while pos < target:
        pos += 12 + int.from_bytes(data[pos:pos + 8], "little") + 4
    return pos + 12


def _payload_bit_flipped(d: Path) -> Path:
    write_slime_like_run(d, Scenario(rollouts=30))
    f = _biggest_event_file(d)
    _flip_bit(f, _payload_start_near(f, f.stat().st_size // 3) + 3)
    return d


def _length_damaged(d: Path) -> Path:
    payloads = [file_version_event()] + [scalar_event("rollout/raw_reward", 0.1 * i, i) for i in range(300)]
    data = bytearray(b"".join(frame_record(p) for p in payloads))
    first_len = len(frame_record(payloads[0]))
    second = first_len + len(frame_record(payloads[1]))
    data[second + 2] ^= 0xFF  # the length bytes of the third record
    (d / "events.out.tfevents.1.host").parent.mkdir(parents=True, exist_ok=True)
    (d / "events.out.tfevents.1.host").write_bytes(bytes(data))
    return d


def _not_event_file(d: Path) -> Path:
    write_slime_like_run(d, Scenario(rollouts=5))
    (d / "events.out.tfevents.0.garbage").write_bytes(np.random.default_rng(3).bytes(5000))
    (d / "notes.txt").write_text("not an event file")
    return d


def _empty_file(d: Path) -> Path:
    write_slime_like_run(d, Scenario(rollouts=5))
    (d / "events.out.tfevents.9.empty").write_bytes(b"")
    return d


def _non_finite(d: Path) -> Path:
    payloads = [file_version_event()] + [scalar_event("rollout/raw_reward", v, i) for i, v in
                                         enumerate([0.1, float("nan"), float("inf"), -float("inf"), 0.5])]
    write_raw_event_file(d / "events.out.tfevents.1.host", payloads)
    return d


def _no_reward(d: Path) -> Path:
    payloads = [file_version_event()] + [scalar_event("train/loss", 1.0 / (i + 1), i) for i in range(20)]
    write_raw_event_file(d / "events.out.tfevents.1.host", payloads)
    return d


def _legacy_out_of_order(d: Path) -> Path:
    """No file_version event: TensorBoard's accumulator purges a tag's later steps when a step goes back."""
    steps = [0, 1, 2, 3, 4, 5, 3, 4, 6]
    payloads = [scalar_event("train/loss", float(i), s) for i, s in enumerate(steps)]
    payloads += [scalar_event("train/other", 7.0, 1)]
    write_raw_event_file(d / "events.out.tfevents.1.host", payloads)
    return d


def _session_start(d: Path) -> Path:
    """file_version 2 with a SessionLog START: everything at or after its step is purged."""
    payloads = [file_version_event()] + [scalar_event("train/loss", float(s), s) for s in range(10)]
    payloads += [session_start_event(4)] + [scalar_event("train/loss", 100.0 + s, s) for s in range(4, 8)]
    write_raw_event_file(d / "events.out.tfevents.1.host", payloads)
    return d


def _nested(d: Path) -> Path:
    write_slime_like_run(d / "exp_a", Scenario(rollouts=5))
    write_slime_like_run(d / "exp_b", Scenario(rollouts=6, seed=4))
    return d


LOGS = {
    "healthy": _healthy, "restarted": _restarted, "truncated_tail": _truncated_tail,
    "payload_bit_flipped": _payload_bit_flipped, "length_damaged": _length_damaged,
    "not_event_file": _not_event_file, "empty_file": _empty_file, "non_finite": _non_finite,
    "no_reward": _no_reward, "legacy_out_of_order": _legacy_out_of_order, "session_start": _session_start,
    "nested": _nested,
}


@pytest.mark.parametrize("name", sorted(LOGS), ids=str)
def test_frame_equals_tbparse_exactly(tmp_path, name):
    d = LOGS[name](tmp_path / name)
    reference = SummaryReader(str(d), extra_columns={"wall_time"}).scalars
    ours = tbparse_frame(d)
    pd.testing.assert_frame_equal(ours, reference, check_exact=True)


def test_empty_directory_gives_tbparse_empty_frame(tmp_path):
    (tmp_path / "empty").mkdir()
    reference = SummaryReader(str(tmp_path / "empty"), extra_columns={"wall_time"}).scalars
    pd.testing.assert_frame_equal(tbparse_frame(tmp_path / "empty"), reference)
    run = read_run(tmp_path / "empty")
    assert run.files == [] and run.series == {}


def test_one_flipped_bit_loses_one_record_not_the_rest_of_the_file(tmp_path):
    d = _payload_bit_flipped(tmp_path / "run")
    f = _biggest_event_file(d)
    reference_rows = len(SummaryReader(str(f)).scalars)
    scan = scan_event_file(f)
    assert [x.kind for x in scan.damage] == ["bad_payload_crc"]
    # tbparse stops at the damaged record; this reader loses that single scalar
    clean = d.parent / "clean"
    write_slime_like_run(clean, Scenario(rollouts=30))
    total = len(SummaryReader(str(_biggest_event_file(clean))).scalars)
    assert len(scan.steps) == total - 1
    assert reference_rows < total - 1
    assert scan.compat_scalars == reference_rows


def test_damaged_length_is_skipped_by_resynchronising(tmp_path):
    d = _length_damaged(tmp_path / "run")
    scan = scan_event_file(d / "events.out.tfevents.1.host")
    assert [x.kind for x in scan.damage] == ["bad_length"]
    assert scan.damage[0].length == len(frame_record(scalar_event("rollout/raw_reward", 0.1, 1)))
    assert len(scan.steps) == 299  # one record lost out of 300
    assert scan.compat_scalars == 1  # tbparse stops right after the first scalar


def test_truncated_tail_is_reported_as_a_run_still_being_written(tmp_path):
    d = _truncated_tail(tmp_path / "run")
    scan = scan_event_file(_biggest_event_file(d))
    assert [x.kind for x in scan.damage] == ["truncated"]
    assert "still being written" in scan.damage[0].message
    assert scan.clean_end == scan.damage[0].offset


def test_garbage_file_is_not_an_event_file(tmp_path):
    scan = scan_event_bytes(np.random.default_rng(0).bytes(20_000))
    assert not scan.looks_like_events
    assert scan.damage[0].kind == "not_event_file"
    assert len(scan.steps) == 0


def test_checksum_valid_record_that_is_no_event_is_dropped(tmp_path):
    p = write_raw_event_file(tmp_path / "events.out.tfevents.1.x",
                             [file_version_event(), b"\xff\xff\xff\xff not a proto",
                              scalar_event("rollout/raw_reward", 1.0, 0)])
    scan = scan_event_file(p)
    assert scan.tbparse_would_raise
    assert [d.kind for d in scan.damage] == ["bad_proto"]
    assert scan.values.tolist() == [1.0]
    with pytest.raises(ValueError, match="tbparse would raise"):
        tbparse_frame(tmp_path)


def test_non_finite_values_are_kept_as_written(tmp_path):
    d = _non_finite(tmp_path / "run")
    run = read_run(d)
    values = run.series["rollout/raw_reward"].values
    assert math.isnan(values[1]) and values[2] == math.inf and values[3] == -math.inf


def test_accumulator_purges_legacy_out_of_order_steps_per_tag(tmp_path):
    d = _legacy_out_of_order(tmp_path / "run")
    scan = scan_event_file(d / "events.out.tfevents.1.host")
    keep = accumulator_keep_mask(scan, compatible=True)
    kept_loss = scan.steps[keep & (scan.tag_ids == 0)].tolist()
    assert kept_loss == [0, 1, 2, 3, 4, 6]


def test_session_start_purges_later_steps(tmp_path):
    d = _session_start(tmp_path / "run")
    scan = scan_event_file(d / "events.out.tfevents.1.host")
    keep = accumulator_keep_mask(scan, compatible=True)
    assert scan.values[keep].tolist() == [0.0, 1.0, 2.0, 3.0, 104.0, 105.0, 106.0, 107.0]


def test_crc_matches_tensorboards_reference():
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as reference

    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 8, 9, 63, 64, 65, 1000):
        data = rng.bytes(n)
        assert masked_crc32c(data) == reference(data)


def test_progress_is_reported(tmp_path):
    d = _healthy(tmp_path / "run")
    seen = []
    read_run(d, on_progress=lambda frac, name: seen.append(frac))
    assert seen and seen[-1] == pytest.approx(1.0) and all(0 <= f <= 1 for f in seen)


def test_symlinked_event_files_are_not_followed(tmp_path):
    d = _healthy(tmp_path / "run")
    outside = tmp_path / "outside"
    shutil.copytree(d, outside)
    link_dir = tmp_path / "linked"
    link_dir.mkdir()
    os.symlink(_biggest_event_file(outside), link_dir / "events.out.tfevents.link")
    assert read_run(link_dir).files == []
