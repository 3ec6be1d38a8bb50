"""Issue 15 item 10: reading odd or damaged parquet never aborts the process (SIGABRT at exit).

The cause: pyarrow was handed a Python file object and pre-buffered by default, so its I/O threads called
back into Python; reads still in flight when a decoding error ended the scan met the interpreter's shutdown
("terminate called without an active exception"). pyarrow now only ever gets a native file, without
pre-buffering, closed before the scan returns.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from core.data.scan import check_bytes, check_path
from tests.conftest import ROOT

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

RUNS = 12  # subprocesses; each checks every mutated file, so each exit follows a different error


@pytest.fixture(scope="module")
def mutated(tmp_path_factory):
    d = tmp_path_factory.mktemp("parquet")
    table = pa.table({"input": [f"question {i} " * 5 for i in range(3000)], "label": [str(i) for i in range(3000)]})
    pq.write_table(table, d / "good.parquet", row_group_size=300)
    data = (d / "good.parquet").read_bytes()
    rng = random.Random(1)
    paths = []
    for k in range(24):
        buf = bytearray(data)
        for _ in range(rng.choice([1, 3, 10, 50])):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        path = d / f"mut{k}.parquet"
        path.write_bytes(bytes(buf))
        paths.append(path)
    return d, paths


def test_pyarrow_gets_a_native_file_without_prebuffering(mutated, monkeypatch):
    d, paths = mutated
    seen = []
    real = pq.ParquetFile

    def spy(source, **kwargs):
        seen.append((source, kwargs))
        return real(source, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", spy)
    check_path(d / "good.parquet")
    check_bytes((d / "good.parquet").read_bytes(), "up.parquet")
    for path in paths[:4]:
        check_path(path)
    assert len(seen) == 6
    for source, kwargs in seen:
        assert isinstance(source, pa.NativeFile) and not isinstance(source, pa.PythonFile)
        assert kwargs.get("pre_buffer") is False
        assert source.closed  # closed before the scan returned


def test_damaged_parquet_is_a_finding_not_a_crash(mutated):
    _, paths = mutated
    for path in paths:
        report = check_path(path)
        assert report.summary.file_format == "parquet"


def test_many_processes_never_abort(mutated):
    d, paths = mutated
    script = ("import sys\nfrom core.data.scan import check_path\n"
              "for p in sys.argv[1:]:\n    check_path(p)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    codes = []
    for i in range(RUNS):
        order = paths[i % len(paths):] + paths[:i % len(paths)]
        done = subprocess.run([sys.executable, "-c", script, *map(str, order)], capture_output=True, env=env,
                              cwd=ROOT, timeout=300)
        assert b"terminate called" not in done.stderr
        codes.append(done.returncode)
    assert codes == [0] * RUNS
