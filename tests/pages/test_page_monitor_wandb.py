"""AppTest: the Monitor page with W&B uploads (a zip of a wandb/ folder, loose .wandb files) and a folder."""

from __future__ import annotations

import io
import zipfile

import pytest

from core.memory.profile import Profile
from core.memory.store import Store

pytestmark = pytest.mark.wandb_sdk


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    import tempfile

    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def _open(make_app, app_env):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/monitor.py").run()
    assert not at.exception
    return at


def _texts(at) -> str:
    out = [e.label for e in at.expander]
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "code"):
        out += [e.value for e in getattr(at, kind)]
    return "\n".join(out)


def _zip_of(folder) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not p.is_symlink():
                zf.write(p, p.relative_to(folder.parent))
    return buf.getvalue()


def test_zip_of_wandb_folder_gives_curves_checklist_config_and_record(app_env, make_app, wandb_root, private_tmp):
    at = _open(make_app, app_env)
    at.file_uploader(key="mon_upload_zip").set_value(("wandb.zip", _zip_of(wandb_root / "wandb"),
                                                      "application/zip"))
    at.run()
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "1 W&B run (5 run files)" in captions and "W&B, 5 file(s)" in captions
    labels = [e.label for e in at.expander]
    assert any(label.startswith("wandb") and "fail" in label for label in labels)
    assert 10 <= len(at.get("plotly_chart")) < 30  # the checklist's curves first
    at.toggle(key="mon_show_all").set_value(True).run()
    assert len(at.get("plotly_chart")) >= 30
    # the resumed run's restart is reported as for TensorBoard
    assert "restart in" in _texts(at)
    # the config, written back as launch arguments and checked
    codes = [c.value for c in at.code]
    assert any("--rollout-batch-size 32" in c for c in codes)
    assert "MODE006" in _texts(at)
    assert "trains 2 optimizer step" in _texts(at)  # 32 x 8 // 128, from the config
    config_table = next(d.value for d in at.dataframe if "key" in d.value.columns)  # evidence tables come first
    assert "rollout_batch_size" in config_table["key"].tolist()
    assert "local-secret-123" not in _texts(at) + config_table.to_csv()  # slime logs --wandb-key: hidden
    [record] = Store(app_env).accepted("default", "monitor")  # an upload the user made: done
    assert record.how == "read the runs and produced the checklist"
    csv = at.get("download_button")
    assert csv


def test_loose_wandb_files_upload(app_env, make_app, wandb_root, private_tmp):
    files = sorted((wandb_root / "wandb").glob("*run-*/run-*.wandb"))
    at = _open(make_app, app_env)
    at.file_uploader(key="mon_upload_files").set_value([(p.name, p.read_bytes(), "application/octet-stream")
                                                        for p in files])
    at.run()
    assert not at.exception
    assert not at.warning or not any("lacks 'tfevents'" in w.value for w in at.warning)
    assert any(e.label.startswith("uploaded\\-run \\(slime\\-test\\-group\\): ") for e in at.expander)
    assert "W&B, 5 file(s)" in " ".join(c.value for c in at.caption)


def test_folder_with_wandb_and_tensorboard_runs(app_env, make_app, wandb_root, tb_twin, tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(wandb_root / "wandb", root / "wandb", symlinks=True)
    shutil.copytree(tb_twin, root / "tensorboard_log" / "run")
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(root))
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(root))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "1 TensorBoard run and 1 W&B run (5 run files)" in captions
    labels = [e.label for e in at.expander]
    assert any(label.startswith("slimerun1") for label in labels)
    assert any(label.startswith("tensorboard\\_log/run") or label.startswith("tensorboard_log/run")
               for label in labels)
