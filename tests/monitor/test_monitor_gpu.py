"""GPU data readers: nvidia-smi CSV logs, slime's Memory-Usage lines, W&B system metrics; hostile input.

Files are written in the formats the tools write (core.monitor.gpu.synthetic; the W&B files' stats records
from W&B's own protocol definitions, and one run written by the real SDK in offline mode, whose system
metrics on this GPU-less machine are the CPU and memory ones).
"""

from __future__ import annotations

import os
import resource
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from core.monitor.gpu import discover_gpu_logs, read_gpu_data, reading
from core.monitor.gpu.job_log import read_job_log
from core.monitor.gpu.nvidia_smi import read_nvidia_smi
from core.monitor.gpu.synthetic import (
    Layout,
    gpu_samples,
    phases,
    stats_record,
    write_job_log,
    write_nvidia_smi_csv,
    write_wandb_stats_file,
)
from core.monitor.gpu.wandb_stats import read_wandb_stats
from core.monitor.tensorboard.synthetic import Scenario
from core.monitor.wandb.synthetic import frame_wandb_records

SMALL = Scenario(rollouts=6, seed=3)
LAYOUT = Layout(nodes=2, gpus_per_node=4, training_gpus=4, idle=[(1, 3)])


def budget(n: int = 10**7) -> list[int]:
    return [n]


# -- nvidia-smi ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("header,units,with_name,columns", [
    (True, True, False, 7), (True, False, False, 7), (True, True, True, 7), (False, True, False, 7),
    (False, False, False, 7), (False, False, False, 5), (True, False, True, 5)])
def test_nvidia_smi_formats_read_the_same_values(tmp_path, header, units, with_name, columns):
    path = write_nvidia_smi_csv(tmp_path / "gpu-node0.csv", LAYOUT, 0, SMALL, header=header, units=units,
                                with_name=with_name, columns=columns)
    series, report = read_nvidia_smi(path, "node0", budget())
    expected = [r for r in gpu_samples(LAYOUT, SMALL) if r[0] == 0]
    assert [s.gpu for s in series] == [0, 1, 2, 3]
    assert report.kind == "nvidia-smi" and report.gpus == 4 and report.skipped_lines == 0
    for s, (_, index, _, t, util, mem) in zip(series, expected, strict=True):
        assert s.gpu == index
        assert s.samples == len(t)
        np.testing.assert_allclose(s.times, np.floor(t * 1000) / 1000, atol=1e-3)
        np.testing.assert_array_equal(s.utilization, util.astype(int))
        np.testing.assert_array_equal(s.memory_used, mem.astype(int))
        np.testing.assert_array_equal(s.memory_total, np.full(len(t), 81559.0))
        if columns == 7:
            np.testing.assert_allclose(s.power, 80.0 + 6.0 * util, atol=0.01)
            assert np.isfinite(s.temperature).all()
        else:
            assert np.isnan(s.power).all()
        assert s.name == ("NVIDIA H100 80GB HBM3" if with_name else "")
    if not header:
        assert any("no header line" in n for n in report.notes)


def test_nvidia_smi_missing_values_repeated_headers_and_junk(tmp_path):
    path = tmp_path / "smi.csv"
    path.write_text(
        "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
        "2026/12/03 07:00:00.000, 0, 50 %, 1000 MiB, 81559 MiB\n"
        "2026/12/03 07:00:00.000, 1, [N/A], [Not Supported], 81559 MiB\n"
        "this is not a sample\n"
        "2026/13/45 07:00:00.000, 0, 50 %, 1000 MiB, 81559 MiB\n"
        "timestamp, index, memory.used [MiB], utilization.gpu [%]\n"
        "2026/12/03 07:00:05.500, 0, 2 GiB, 75 %\n", encoding="utf-8")
    series, report = read_nvidia_smi(path, "n", budget())
    by_gpu = {s.gpu: s for s in series}
    np.testing.assert_array_equal(by_gpu[0].utilization, [50.0, 75.0])
    np.testing.assert_array_equal(by_gpu[0].memory_used, [1000.0, 2048.0])  # a later header reorders
    assert by_gpu[0].times[1] - by_gpu[0].times[0] == pytest.approx(5.5)
    assert np.isnan(by_gpu[1].utilization[0]) and np.isnan(by_gpu[1].memory_used[0])
    assert report.skipped_lines == 2
    assert any("2 line(s) are not nvidia-smi samples" in n and "this is not a sample" in n for n in report.notes)


def test_nvidia_smi_without_header_and_unknown_columns_says_how_to_record(tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text("2026/12/03 07:00:00.000, 0, 50, 1000\n" * 3, encoding="utf-8")
    series, report = read_nvidia_smi(path, "n", budget())
    assert series == [] and report.kind == "none"
    assert any("cannot be told apart" in n and "utilization.gpu" in n for n in report.notes)


def test_several_nodes_each_their_own_file(tmp_path):
    for node in range(2):
        write_nvidia_smi_csv(tmp_path / f"gpu-node{node}.csv", LAYOUT, node, SMALL)
    data = read_gpu_data(discover_gpu_logs(tmp_path))
    assert sorted({(s.node, s.gpu) for s in data.series}) == [(f"node{n}", i) for n in range(2) for i in range(4)]
    idle = next(s for s in data.series if (s.node, s.gpu) == ("node1", 3))
    assert np.nanmax(idle.utilization) == 0


# -- slime's Memory-Usage lines ----------------------------------------------------------------------------

def test_job_log_memory_usage_lines_as_ray_prints_them(tmp_path):
    path = write_job_log(tmp_path / "job.log", LAYOUT, SMALL)
    with path.open("a", encoding="utf-8") as fh:  # other lines that mention it, and one without a time
        fh.write("(pid=77) Memory-Usage is printed by slime\n")
        fh.write("(MegatronTrainRayActor pid=9, ip=10.0.0.9) actor.py:639 - [Rank 9] Memory-Usage before "
                 "update_weights: {'gpu': '0', 'total_GB': 79.65, 'used_GB': 1.0}\n")
    gpus, hosts, marks, report = read_job_log(path, budget())
    p = phases(SMALL)
    assert [(g.node, g.gpu) for g in gpus] == [("10.0.0.1", r) for r in range(4)]
    assert all(g.gpu_is_rank and g.role == "training" for g in gpus)
    assert gpus[0].samples == 2 * len(p.update)
    np.testing.assert_allclose(gpus[0].memory_used[:2], [58.1 * 1024, 58.3 * 1024])
    np.testing.assert_allclose(gpus[0].memory_total, 79.65 * 1024)
    assert np.isnan(gpus[0].utilization).all()
    assert [m.what for m in marks[:2]] == ["before update_weights", "before update_weights"]
    assert marks[0].time == float(int(p.update[0][0]))
    assert hosts[0].node == "10.0.0.1" and np.nanmax(hosts[0].memory_percent) == pytest.approx(200.5 / 2015.56 * 100)
    assert report.skipped_lines == 2
    assert any("carry no time" in n for n in report.notes) and any("not slime's" in n for n in report.notes)


def test_job_log_prefix_forms(tmp_path):
    info = "{'gpu': '0', 'total_GB': 79.19, 'free_GB': 9.0, 'used_GB': 70.19, 'allocated_GB': 60.0}"
    path = tmp_path / "driver.out"
    path.write_text(
        f"[2026-12-03 07:00:00] memory_utils.py:49 - [Rank 0] Memory-Usage after loading model: {info}\n"
        f"(pid=1234) [2026-12-03 07:00:01] actor.py:210 - [Rank 1] Memory-Usage before offload model "
        f"(cleared before print): {info}\n"
        f"\x1b[36m(TrainRayActor pid=5, ip=192.168.1.7)\x1b[0m [2026-12-03 07:00:02 node-0] actor.py:222 - "
        f"[Rank 2] Memory-Usage after offload model: {info} [repeated 7x across cluster]\n", encoding="utf-8")
    gpus, _, marks, _ = read_job_log(path, budget())
    assert [(g.node, g.gpu) for g in gpus] == [("192.168.1.7", 2), ("driver", 1), ("local", 0)]
    assert [m.what for m in marks] == ["after loading model", "before offload model", "after offload model"]


# -- W&B system metrics ----------------------------------------------------------------------------------

def test_wandb_stats_records_per_node_and_gpu(tmp_path):
    for node in range(2):
        write_wandb_stats_file(tmp_path, LAYOUT, node, scenario=SMALL, seq=node)
    files = sorted(tmp_path.glob("wandb/*/run-*.wandb"))
    data = read_gpu_data([], files)
    assert sorted({(s.node, s.gpu) for s in data.series}) == [(f"node-{n}", i) for n in range(2) for i in range(4)]
    expected = {(n, i): (t, util, mem) for n in range(2)
                for (node, i, _, t, util, mem) in gpu_samples(LAYOUT, SMALL, 15.0, seed=n + 7) if node == n}
    for s in data.series:
        t, util, mem = expected[(int(s.node[-1]), s.gpu)]
        np.testing.assert_allclose(s.times, t, atol=1e-6)
        np.testing.assert_array_equal(s.utilization, util)
        np.testing.assert_allclose(s.memory_used, mem, rtol=1e-9)
        np.testing.assert_allclose(s.memory_total, 81559.0, rtol=1e-9)
        np.testing.assert_allclose(s.power, 80.0 + 6.0 * util)
    assert {(h.node, h.source) for h in data.host} == {("node-0", "wandb"), ("node-1", "wandb")}
    assert np.nanmedian(data.host[0].cpu_percent) == 12.5


def test_wandb_shared_mode_labels_and_records_across_blocks(tmp_path):
    big = {f"gpu.{i}.gpu/l:worker-{i % 2}": float(i) for i in range(8)}
    big.update({f"cpu.{c}.cpu_percent": 10.0 for c in range(2000)})  # a record longer than one 32 KiB block
    payloads = [stats_record(1_750_000_000.0 + k, big) for k in range(5)]
    path = tmp_path / "run-x.wandb"
    path.write_bytes(frame_wandb_records(payloads))
    series, hosts, report = read_wandb_stats(path, budget(), node_hint="dir")
    assert sorted((s.gpu, s.node) for s in series) == [(i, f"worker-{i % 2}") for i in range(8)]
    assert {s.node for s in series} == {"worker-0", "worker-1"} and len(series) == 8
    assert all(s.samples == 5 for s in series)
    assert hosts[0].node == "dir" and hosts[0].cpu_percent[0] == 10.0


def test_wandb_stats_past_damage_and_a_cut_end(tmp_path):
    payloads = [stats_record(1_750_000_000.0 + k, {"gpu.0.gpu": 50.0, "pad": "x" * 2000}) for k in range(60)]
    data = bytearray(frame_wandb_records(payloads))
    data[100] ^= 0xFF  # a flipped byte in the first block
    path = tmp_path / "run-d.wandb"
    path.write_bytes(bytes(data[:-30]))  # and the last record cut short
    series, _, report = read_wandb_stats(path, budget())
    assert 40 < series[0].samples < 59
    assert any("damaged block" in n for n in report.notes) and any("ends inside a record" in n for n in report.notes)


def test_not_a_wandb_file_and_no_stats(tmp_path):
    junk = tmp_path / "run-j.wandb"
    junk.write_bytes(b"not a w&b file at all")
    series, hosts, report = read_wandb_stats(junk, budget())
    assert (series, hosts, report.kind) == ([], [], "none") and "not a W&B run file" in report.notes[0]
    from core.monitor.wandb.synthetic import history_record

    empty = tmp_path / "run-e.wandb"
    empty.write_bytes(frame_wandb_records([history_record({"rollout/raw_reward": 1.0, "rollout/step": 1})]))
    series, _, report = read_wandb_stats(empty, budget())
    assert series == [] and any("x_disable_stats" in n for n in report.notes)


@pytest.mark.wandb_sdk
def test_system_metrics_the_sdk_writes_are_read(tmp_path):
    wandb = pytest.importorskip("wandb")
    from core.monitor.wandb.synthetic import offline_wandb

    with offline_wandb(tmp_path):
        run = wandb.init(project="slime-test", id="sysmetrics", dir=str(tmp_path), settings=wandb.Settings(
            mode="offline", x_stats_sampling_interval=0.2, console="off", silent=True, x_disable_meta=True,
            x_save_requirements=False))
        for i in range(10):
            run.log({"rollout/raw_reward": float(i)})
            time.sleep(0.1)
        run.finish()
        wandb.teardown()
    path = next(tmp_path.glob("wandb/*/run-sysmetrics.wandb"))
    data = read_gpu_data([], [path])
    assert data.series == []  # no GPU on this machine
    host = data.host[0]
    assert len(host.times) >= 2 and np.isfinite(host.memory_percent).all()
    assert 0 < np.nanmax(host.memory_percent) <= 100 and np.nanmax(host.memory_used) > 1


# -- collecting: discovery, duplicates, joins --------------------------------------------------------------

def test_discovery_in_a_run_directory_and_writers_sharing_a_node(tmp_path):
    run = tmp_path / "run"
    write_nvidia_smi_csv(run / "logs" / "gpu-node0.csv", LAYOUT, 0, SMALL)
    write_job_log(run / "logs" / "job.log", LAYOUT, SMALL)
    (run / "notes.txt").write_text("nothing about GPUs\n", encoding="utf-8")
    (run / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (run / "link.csv").symlink_to(run / "logs" / "gpu-node0.csv")
    found = discover_gpu_logs(run)
    assert sorted(p.name for p in found) == ["gpu-node0.csv", "job.log", "notes.txt"]
    w1 = write_wandb_stats_file(tmp_path, LAYOUT, 0, scenario=SMALL)
    w2 = write_wandb_stats_file(tmp_path, LAYOUT, 0, scenario=SMALL, seq=1)  # a second writer on node-0
    data = read_gpu_data(found, [w1, w2])
    assert {f.kind for f in data.files} == {"nvidia-smi", "slime-log", "wandb"}
    assert all(f.path != str(run / "notes.txt") for f in data.files)
    wandb_series = [s for s in data.series if s.source == "wandb"]
    assert len(wandb_series) == 4 and all(len(s.files) == 2 for s in wandb_series)
    assert any("counted once" in n for n in data.notes)


def test_a_resumed_writer_is_joined(tmp_path):
    first = write_wandb_stats_file(tmp_path, LAYOUT, 0, scenario=SMALL)
    later = Scenario(rollouts=3, seed=4, wall_start=SMALL.wall_start + 10_000)
    second = write_wandb_stats_file(tmp_path / "b", LAYOUT, 0, scenario=later)
    data = read_gpu_data([], [first, second])
    s = next(x for x in data.series if x.gpu == 0)
    assert np.all(np.diff(s.times) > 0) and s.times[-1] > SMALL.wall_start + 10_000
    assert not data.notes


def test_named_files_that_hold_nothing_say_so(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("", encoding="utf-8")
    data = read_gpu_data([empty, tmp_path / "missing.csv"], explicit=2)
    assert "no GPU samples found" in data.files[0].notes[0]
    assert any("missing.csv: cannot be read" in n for n in data.notes)


# -- hostile input -----------------------------------------------------------------------------------------

def test_non_utf8_and_endless_lines_are_skipped(tmp_path):
    path = tmp_path / "gpu-bad.csv"
    good = write_nvidia_smi_csv(tmp_path / "ok.csv", Layout(gpus_per_node=1), 0, SMALL).read_bytes()
    lines = good.split(b"\n")
    path.write_bytes(b"\n".join(lines[:5] + [b"\xff\xfe\x00junk", b"x" * (3 * 1024 * 1024)] + lines[5:]))
    series, report = read_nvidia_smi(path, "n", budget())
    assert series[0].samples == len(lines) - 2
    assert any("not UTF-8" in n for n in report.notes) and any("longer than" in n for n in report.notes)


def test_a_huge_file_is_read_from_its_end_within_bounds(tmp_path):
    path = write_nvidia_smi_csv(tmp_path / "gpu-n.csv", Layout(gpus_per_node=2), 0, SMALL)
    size = path.stat().st_size
    stats = reading.LineStats()
    tail = list(reading.iter_lines(path, stats, max_bytes=size // 3))
    assert stats.start > 0 and tail and all(line.startswith("20") for line in tail)  # whole lines only
    assert size - stats.start <= size // 3
    assert any("only its last" in n for n in stats.describe())


def test_sample_budget_bounds_memory(tmp_path):
    path = write_nvidia_smi_csv(tmp_path / "gpu-n.csv", LAYOUT, 0, SMALL)
    data = read_gpu_data([path], explicit=1, budget=100)
    assert sum(s.samples for s in data.series) == 100
    assert any("left out" in n for n in data.notes + data.files[0].notes)


def test_a_big_log_is_read_in_bounded_memory_and_time(tmp_path):
    """200 MB of log lines with no sample in them: read as the last 128 MiB, in bounded memory."""
    path = tmp_path / "big.log"
    line = b"(MegatronTrainRayActor pid=1, ip=10.0.0.1) [2026-12-03 07:00:00] x.py:1 - step done\n"
    with path.open("wb") as fh:
        block = line * (1024 * 1024 // len(line))
        for _ in range(200):
            fh.write(block)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    data = read_gpu_data([path], explicit=1)
    elapsed = time.perf_counter() - start
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert data.series == [] and "no GPU samples" in data.files[0].notes[0]
    assert any("only its last" in n for n in data.files[0].notes)
    assert grew_mib < 64, grew_mib
    assert elapsed < 60


def test_fifo_and_devices_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "gpu.csv"
    os.mkfifo(fifo)
    data = read_gpu_data([fifo, Path("/dev/zero")], explicit=2)
    assert len(data.notes) == 2 and all("not a regular file" in n for n in data.notes)


def test_garbage_wandb_file_does_not_crash(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "run-g.wandb"
    body = bytes(rng.integers(0, 256, 200_000, dtype=np.uint8))
    path.write_bytes(b":W&B\xe1\xbe\x00" + body)
    series, _, report = read_wandb_stats(path, budget())
    assert series == [] and report.kind == "none"
    # a crafted chunk whose checksum is right but whose record is junk
    import zlib

    junk = b"\x3a\x05\xff\xff\xff\xff\xff"
    chunk = struct.pack("<IHB", zlib.crc32(bytes([1]) + junk), len(junk), 1) + junk
    path.write_bytes(b":W&B\xe1\xbe\x00" + chunk)
    series, _, report = read_wandb_stats(path, budget())
    assert series == [] and any("could not be decoded" in n for n in report.notes)


def test_a_file_that_grows_while_read_ends_where_it_was_when_opened(tmp_path):
    path = write_nvidia_smi_csv(tmp_path / "gpu-n.csv", Layout(gpus_per_node=1), 0, SMALL)
    lines_before = path.read_text(encoding="utf-8").count("\n")
    stats = reading.LineStats()
    seen = 0
    with path.open("ab") as grower:
        for _ in reading.iter_lines(path, stats):
            seen += 1
            if seen % 100 == 1:  # nvidia-smi -l keeps writing while we read
                grower.write(b"2026/12/03 07:00:00.000, 0, 1 %, 1 MiB, 2 MiB, 1 W, 30\n" * 20_000)
                grower.flush()
    assert seen == lines_before
    assert path.stat().st_size > 1_000_000


def test_lines_built_to_make_the_job_log_patterns_backtrack(tmp_path):
    path = tmp_path / "job.log"
    hostile = [("[Rank 1] Memory-Usage " * 2900)[:65000], ("[Rank 1] Memory-Usage x: {" + "a" * 1990) * 32,
               "(" + "a" * 60000 + " pid=1", "[Rank 1] Memory-Usage x: {" + "'a': 1, " * 7000 + "}"]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(128):
            fh.write(hostile[i % len(hostile)] + "\n")
    start = time.perf_counter()
    gpus, _, marks, report = read_job_log(path, budget())
    assert time.perf_counter() - start < 20  # linear: a few ms a line, not seconds
    assert gpus == [] and marks == [] and report.skipped_lines == 96  # the lines that mention Memory-Usage


# -- following: text logs read from where the last read stopped ---------------------------------------------

def _same(a, b):
    assert [(s.source, s.node, s.gpu) for s in a.series] == [(s.source, s.node, s.gpu) for s in b.series]
    for x, y in zip(a.series, b.series, strict=True):
        for name in ("times", "utilization", "memory_used", "memory_total", "power", "temperature"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name))
    assert [(m.time, m.what) for m in a.marks] == [(m.time, m.what) for m in b.marks]


def test_appended_lines_are_read_from_where_the_last_read_stopped(tmp_path, monkeypatch):
    full_csv = write_nvidia_smi_csv(tmp_path / "whole" / "gpu-n.csv", LAYOUT, 0, SMALL).read_bytes()
    full_log = write_job_log(tmp_path / "whole" / "job.log", LAYOUT, SMALL).read_bytes()
    live = tmp_path / "live"
    live.mkdir()
    csv, log = live / "gpu-n.csv", live / "job.log"
    cursors: dict = {}
    calls = []
    import core.monitor.gpu.reading as r

    real = r.iter_lines

    def spy(path, stats, *args, **kwargs):
        calls.append(kwargs.get("resume", 0))
        return real(path, stats, *args, **kwargs)

    monkeypatch.setattr("core.monitor.gpu.nvidia_smi.iter_lines", spy)
    monkeypatch.setattr("core.monitor.gpu.job_log.iter_lines", spy)
    cuts = [0.2, 0.5, 0.5, 0.9, 1.0]
    for frac in cuts:  # the writers append, a line cut in the middle now and then
        csv.write_bytes(full_csv[:int(len(full_csv) * frac)])
        log.write_bytes(full_log[:int(len(full_log) * frac)])
        got = read_gpu_data([csv, log], cursors=cursors)
    assert calls[-2] > 0 and calls[-1] > 0  # the last reads started past the start
    whole = read_gpu_data([tmp_path / "whole" / "gpu-n.csv", tmp_path / "whole" / "job.log"])
    _same(got, whole)


def test_a_replaced_or_shrunk_log_is_read_again(tmp_path):
    path = write_nvidia_smi_csv(tmp_path / "gpu-n.csv", Layout(gpus_per_node=1), 0, SMALL)
    cursors: dict = {}
    first = read_gpu_data([path], cursors=cursors)
    n = first.series[0].samples
    path.write_text(path.read_text(encoding="utf-8").splitlines(keepends=True)[0]
                    + "2026/12/03 07:00:00.000, 0, 7 %, 1 MiB, 2 MiB, 1 W, 30\n", encoding="utf-8")
    shrunk = read_gpu_data([path], cursors=cursors)
    assert shrunk.series[0].samples == 1 and shrunk.series[0].utilization[0] == 7
    other = tmp_path / "other.csv"
    write_nvidia_smi_csv(other, Layout(gpus_per_node=1), 0, SMALL)
    os.replace(other, path)  # same size, same name, another file
    again = read_gpu_data([path], cursors=cursors)
    assert again.series[0].samples == n


def test_a_growing_wandb_file_is_read_from_where_the_last_read_stopped(tmp_path):
    from core.monitor.wandb.synthetic import history_record

    payloads = []
    for k in range(400):  # stats records among history rows, some of those longer than a block
        payloads.append(stats_record(1_750_000_000.0 + 15 * k, {"gpu.0.gpu": float(k % 100), "gpu.1.gpu": 3.0,
                                                                 "memory_percent": 5.0}))
        payloads.append(history_record({"rollout/raw_reward": 0.1, "pad": "x" * (40_000 if k % 50 == 0 else 300)}))
    data = frame_wandb_records(payloads)
    whole = tmp_path / "whole" / "node" / "run-w.wandb"
    whole.parent.mkdir(parents=True)
    whole.write_bytes(data)
    live = tmp_path / "live" / "node" / "run-w.wandb"
    live.parent.mkdir(parents=True)
    cursors: dict = {}
    for cut in (1000, 5000, 32768, 32770, 100_000, 250_001, len(data) - 3, len(data)):
        live.write_bytes(data[:cut])  # the writer appends; cuts fall inside chunks and on block edges
        got = read_gpu_data([], [live], cursors=cursors)
        [cursor] = cursors.values()
        assert cut - 45_000 < cursor.state.offset <= cut  # up to the last whole chunk: resumed there next time
    assert cursor.state.walk.damaged_chunks == 0
    expect = read_gpu_data([], [whole])
    _same(got, expect)
    assert got.series[0].samples == 400
    np.testing.assert_array_equal(got.host[0].memory_percent, expect.host[0].memory_percent)


def test_without_wandb_installed_the_hint_is_given(tmp_path, monkeypatch):
    from core.monitor.wandb.proto import INSTALL_HINT, WandbProtoUnavailable

    def missing():
        raise WandbProtoUnavailable(INSTALL_HINT)

    monkeypatch.setattr("core.monitor.gpu.wandb_stats._classes", missing)
    path = write_wandb_stats_file(tmp_path, LAYOUT, 0, scenario=SMALL)
    data = read_gpu_data([], [path])
    assert data.series == [] and any("pip install" in n for n in data.notes)
    assert not any("Traceback" in n or "Error:" in n for n in data.notes)


# -- issue 28, defects 9 and 13 ---------------------------------------------------------------------------------
def test_impossible_nvidia_smi_readings_are_not_samples_and_are_named(tmp_path):
    from core.monitor.gpu.judge import summarize

    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    for i in range(60):
        util = "-1e308 %" if i % 2 else "95 %"
        used = "1e308 MiB" if i % 3 == 0 else ("90000 MiB" if i == 1 else "60000 MiB")  # 90,000 > the total
        rows.append(f"2026/12/03 07:{i // 60:02d}:{i % 60:02d}.000, 0, {util}, {used}, 81559 MiB")
    rows.append("2026/12/03 07:01:00.000, 1, -1e308 %, 1000 MiB, 81559 MiB")  # a GPU with no possible utilization
    path = tmp_path / "gpu.csv"
    path.write_text("\n".join(rows) + "\n")
    series, report = read_nvidia_smi(path, "n0", budget())
    [note] = [n for n in report.notes if "readings no GPU can give" in n]
    assert "31 utilization (0-100 %), such as '-1e308 %'" in note
    assert "21 memory used (0 to the GPU's total), such as '1e308 MiB'" in note
    first = summarize(series[0])
    assert first.utilization_median == 95.0 and first.memory_max_mib == 60000.0
    assert summarize(series[1]).utilization_median is None  # not "idle": nothing possible was read


def test_one_malformed_memory_usage_number_skips_only_its_line(tmp_path):
    lines = []
    for i in range(60):
        used = "1.2.3" if i == 30 else f"{10 + i / 10:.2f}"
        lines.append(f"(MegatronTrainRayActor pid=1, ip=10.0.0.1) [2026-12-03 07:{i:02d}:00] memory_utils.py:45 - "
                     f"[Rank 0] Memory-Usage after offload: {{'gpu': '0', 'total_GB': 79.11, 'free_GB': 60.0, "
                     f"'used_GB': {used}, 'allocated_GB': 1.0, 'reserved_GB': 2.0}}")
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    gpus, _, _, report = read_job_log(path, budget())
    assert report.samples == 59 and report.skipped_lines == 1
    assert ("1 Memory-Usage line(s) hold a number that does not read as one and were skipped (the first: used_GB: "
            "1.2.3)") in report.notes
