"""AppTest: the Monitor page reads GPU logs beside a run, judges "GPUs are busy" and charts every GPU over time."""

from __future__ import annotations

import pytest

from core.memory.profile import Profile
from core.memory.store import Store
from core.monitor.gpu.synthetic import Layout, write_job_log, write_nvidia_smi_csv
from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run

SCENARIO = Scenario(rollouts=12, seed=1)
LAYOUT = Layout(nodes=2, gpus_per_node=4, training_gpus=4)


@pytest.fixture
def roots(tmp_path, monkeypatch):
    root = tmp_path / "logs"
    run = root / "proj" / "split"
    write_slime_like_run(run, SCENARIO)
    write_nvidia_smi_csv(run / "gpu-node0.csv", LAYOUT, 0, SCENARIO)
    write_nvidia_smi_csv(run / "gpu-node1.csv", LAYOUT, 1, SCENARIO, units=False)
    write_slime_like_run(root / "proj2" / "bare", SCENARIO)
    write_job_log(root / "elsewhere" / "job.log", LAYOUT, SCENARIO)
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(root))
    return root


def _load(make_app, app_env, folder):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/monitor.py").run()
    at.text_input(key="mon_dir").input(str(folder))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    return at


def test_gpu_logs_in_the_run_folder_are_judged_and_charted(app_env, make_app, roots):
    at = _load(make_app, app_env, roots / "proj" / "split")
    warnings = " ".join(w.value for w in at.warning)
    assert "MON012" in warnings and "rollout GPUs" in warnings and "train\\_async\\.py" in warnings
    assert any("GPUs over time" in h.value for h in at.subheader)
    specs = [str(c.proto.spec) for c in at.get("plotly_chart")]
    util = [s for s in specs if "GPU utilization" in s or "Utilization (%)" in s]
    assert len(util) == 1 and "node1 GPU 3 (rollout)" in util[0] and "generating" in util[0]
    assert "weight update" in util[0] and "training" in util[0]
    captions = " ".join(c.value for c in at.caption)
    assert "gpu\\-node0\\.csv\\: nvidia\\-smi CSV log, 4 GPU\\(s\\)" in captions
    at.radio(key="mon_gpu_metric").set_value("Memory used (GiB)").run()
    assert not at.exception
    specs = [str(c.proto.spec) for c in at.get("plotly_chart")]
    assert any("GPU memory used" in s and "node0 GPU 0" in s for s in specs)


def test_listed_gpu_logs_inside_the_roots_are_read_outside_refused(app_env, make_app, roots, tmp_path):
    at = _load(make_app, app_env, roots / "proj2" / "bare")
    assert any("No GPU data for these runs" in i.value for i in at.info)
    unknown = " ".join(m.value for m in at.info) + " ".join(m.value for m in at.markdown)
    assert "MON012" in unknown
    assert any("nvidia-smi --query-gpu=timestamp,index,utilization.gpu" in c.value for c in at.code)
    outside = tmp_path / "outside.csv"
    outside.write_text("timestamp, index\n", encoding="utf-8")
    at.text_area(key="mon_gpu_logs").input(f"{roots / 'elsewhere' / 'job.log'}\n{outside}").run()
    assert not at.exception
    assert any("outside" in e.value for e in at.error)
    at.radio(key="mon_gpu_metric").set_value("Memory used (GiB)").run()
    specs = [str(c.proto.spec) for c in at.get("plotly_chart")]
    assert any("Memory-Usage" in s and "10.0.0.1 rank 0" in s for s in specs)


def test_a_zipped_run_folder_keeps_its_gpu_logs(app_env, make_app, roots):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted((roots / "proj" / "split").iterdir()):
            zf.write(p, f"split/{p.name}")
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/monitor.py").run()
    at.file_uploader(key="mon_upload_zip").set_value(("split.zip", buf.getvalue(), "application/zip")).run()
    assert not at.exception
    assert "MON012" in " ".join(w.value for w in at.warning)
    specs = [str(c.proto.spec) for c in at.get("plotly_chart")]
    assert any("GPU utilization" in s and "node0 GPU 0 (training)" in s for s in specs)
