"""Reading in windows (core.monitor.stream) gives what reading the whole file gives, damage included."""

from __future__ import annotations

import numpy as np
import pytest

from core.monitor.stream import scan_stream
from core.monitor.tensorboard.events import scan_event_bytes
from core.monitor.tensorboard.run import EVENTS
from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event


def _tb_bytes(n: int) -> bytes:
    out = [frame_record(file_version_event())]
    out += [frame_record(scalar_event(f"rollout/t{i % 7}", 0.25 * i, i)) for i in range(n)]
    return b"".join(out)


def _same(a, b) -> None:
    assert a.tags == b.tags
    for name in ("steps", "tag_ids", "values", "wall_times", "event_steps", "event_kinds", "event_counts"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.clean_end == b.clean_end and a.compat_scalars == b.compat_scalars


@pytest.mark.parametrize("window", [37, 256, 4096])
def test_tensorboard_windows_equal_one_read(tmp_path, window):
    data = bytearray(_tb_bytes(400))
    data[5000] ^= 0xFF  # one damaged payload in the middle
    path = tmp_path / "events.out.tfevents.1.x"
    path.write_bytes(bytes(data) + b"\x05\x00")  # and a record cut at the end
    whole = scan_event_bytes(bytes(data) + b"\x05\x00", path=str(path))
    with open(path, "rb") as fh:
        windowed = scan_stream(fh, EVENTS, path=str(path), size=len(data) + 2, mtime_ns=0, window=window)
    _same(windowed, whole)
    assert [(d.kind, d.offset) for d in windowed.damage] == [(d.kind, d.offset) for d in whole.damage]


def test_tensorboard_resume_from_an_offset_reads_only_new_bytes(tmp_path):
    data = _tb_bytes(300)
    path = tmp_path / "events.out.tfevents.1.x"
    path.write_bytes(data[:4000])
    with open(path, "rb") as fh:
        first = scan_stream(fh, EVENTS, path=str(path), size=4000, mtime_ns=0)
    path.write_bytes(data)

    class Counting:
        def __init__(self, fh):
            self.fh, self.read_bytes = fh, 0

        def seek(self, pos):
            return self.fh.seek(pos)

        def read(self, n):
            out = self.fh.read(n)
            self.read_bytes += len(out)
            return out

    with open(path, "rb") as raw:
        fh = Counting(raw)
        grown = scan_stream(fh, EVENTS, path=str(path), size=len(data), mtime_ns=0, pos=first.clean_end, prior=first)
    assert fh.read_bytes == len(data) - first.clean_end
    _same(grown, scan_event_bytes(data))


wandb = pytest.importorskip("wandb")


def test_wandb_windows_equal_one_read(tmp_path):
    from core.monitor.wandb.log import BLOCK, scan_wandb_bytes
    from core.monitor.wandb.run import RUN_FILES
    from core.monitor.wandb.synthetic import frame_wandb_records, history_record, metric_record

    records = [metric_record("rollout/*", "rollout/step")]
    records += [history_record({"rollout/a": 0.5 * r, "rollout/b": "x" * (r % 50), "rollout/step": r,
                                "_timestamp": 1e9 + r}) for r in range(3000)]
    records.insert(1500, history_record({"rollout/big": "y" * (3 * BLOCK), "rollout/step": 1499}))  # spans blocks
    data = bytearray(frame_wandb_records(records))
    data[len(data) // 3] ^= 0x55
    data = bytes(data[:-3])
    path = tmp_path / "run-w.wandb"
    path.write_bytes(data)
    whole = scan_wandb_bytes(data, path=str(path))
    with open(path, "rb") as fh:
        windowed = scan_stream(fh, RUN_FILES, path=str(path), size=len(data), mtime_ns=0, window=BLOCK)
    _same(windowed, whole)
    assert [(d.kind, d.offset) for d in windowed.damage] == [(d.kind, d.offset) for d in whole.damage]
    assert windowed.history_rows == whole.history_rows


def test_wandb_record_over_the_limit_is_reported(tmp_path, monkeypatch):
    from core.monitor.wandb import log
    from core.monitor.wandb.run import read_wandb_run
    from core.monitor.wandb.synthetic import frame_wandb_records, history_record, metric_record

    monkeypatch.setattr(log, "MAX_RECORD", 100_000)
    records = [metric_record("rollout/*", "rollout/step"),
               history_record({"rollout/a": 1.0, "rollout/step": 0}),
               history_record({"rollout/a": "z" * 200_000, "rollout/step": 1}),
               history_record({"rollout/a": 3.0, "rollout/step": 2})]
    path = tmp_path / "run-big.wandb"
    path.write_bytes(frame_wandb_records(records))
    run = read_wandb_run([path])
    assert run.series["rollout/a"].values.tolist() == [1.0, 3.0]
    [damage] = run.files[0].damage
    assert damage.kind == "too_large" and "skipped it" in damage.message and "MiB" in damage.message


def test_large_wandb_file_is_read_in_bounded_memory(tmp_path, monkeypatch):
    """A run file is streamed: peak memory while reading stays well below the file's size (issue 22 item 7;
    the window is made small here so that a 40 MB file stands for a large one)."""
    import tracemalloc

    from core.monitor import stream

    monkeypatch.setattr(stream, "WINDOW", 2 * 1024 * 1024)
    from core.monitor.wandb.run import read_wandb_scan
    from core.monitor.wandb.synthetic import frame_wandb_records, history_record, metric_record

    pad = "p" * 2000  # text values: bulk in the file, nothing in the columns
    records = [metric_record("rollout/*", "rollout/step")]
    records += [history_record({"rollout/a": float(r), "rollout/note": pad, "rollout/step": r}) for r in range(20_000)]
    path = tmp_path / "run-large.wandb"
    path.write_bytes(frame_wandb_records(records))
    del records
    size = path.stat().st_size
    assert size > 40_000_000
    tracemalloc.start()
    scan, how = read_wandb_scan(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert how == "read" and len(scan.steps) == 20_000
    assert peak < size * 0.25, (peak, size)


def test_vectorized_decoding_equals_protobuf_on_every_shape(monkeypatch):
    """Single-scalar events are decoded with numpy; the result must equal decoding every record with protobuf."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from core.monitor.tensorboard import decode
    from core.monitor.tensorboard.synthetic import session_start_event

    rng = np.random.default_rng(7)
    payloads = [file_version_event()]
    tags = ["rollout/raw_reward", "train/kl_loss", "é/unicode-tag", "x" * 120, "a", "train/kl_losz"]
    for i in range(3000):
        kind = rng.integers(0, 12)
        step = int(rng.choice([0, i, -5, 2**40, 127, 128]))
        if kind == 0:
            payloads.append(session_start_event(i))
        elif kind == 1:  # two values in one event
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="two/a", simple_value=1.5),
                                                 summary_pb2.Summary.Value(tag="two/b", simple_value=2.5)])
            payloads.append(event_pb2.Event(wall_time=1e9 + i, step=step, summary=summary).SerializeToString())
        elif kind == 2:  # a histogram: not a scalar
            value = summary_pb2.Summary.Value(tag="hist", histo=summary_pb2.HistogramProto(min=0, max=1))
            payloads.append(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[value])).SerializeToString())
        elif kind == 3:
            payloads.append(b"\x09" + b"\x00" * 8 + b"\x2a\x05garbage")  # looks close, is not an Event
        else:
            value = float(rng.choice([rng.normal(), np.nan, np.inf, -0.0]))
            payloads.append(scalar_event(tags[i % len(tags)], value, step, wall_time=float(1e9 + rng.random())))
    data = b"".join(frame_record(p) for p in payloads)
    fast = scan_event_bytes(data)

    def nothing_fast(buf, starts, lengths):
        ok, *rest = real(buf, starts, lengths)
        return (np.zeros_like(ok), *rest)

    real = decode.fast_scalars
    monkeypatch.setattr(decode, "fast_scalars", nothing_fast)
    slow = scan_event_bytes(data)
    _same(fast, slow)
    assert np.array_equal(fast.event_first, slow.event_first)
    assert fast.damage == slow.damage and fast.compat_events == slow.compat_events
    assert (fast.file_version, fast.non_scalar_values, fast.tbparse_would_raise) == (
        slow.file_version, slow.non_scalar_values, slow.tbparse_would_raise)
    assert len(fast.steps) > 2000
