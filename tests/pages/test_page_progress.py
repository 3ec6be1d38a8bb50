"""What's done (issue 28, first hour item 9): a download button's label is never cut (the file's name is said
beside it), and checks nobody accepts say when they last ran, not "accepted"."""

from __future__ import annotations

import time

from core.memory.profile import AcceptedOutput, Profile
from core.memory.store import Store


def test_downloads_name_their_file_beside_a_short_button_and_checks_say_last_checked(app_env, make_app):
    store = Store(app_env)
    store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    name = "run-grpo-qwen3-4b-8gpu-colocated-with-a-long-name.sh"
    store.accept("default", AcceptedOutput(id="a1", workflow="grpo", accepted_at=time.time(), how="accepted the draft",
                                           summary="draft", output="#!/bin/bash\n", output_name=name,
                                           output_mime="text/x-shellscript"))
    store.accept("default", AcceptedOutput(id="c1", workflow="check_args", accepted_at=time.time(),
                                           how="ran the check", summary="0 error(s)"))
    at = make_app("pages/progress.py").run()
    assert not at.exception
    downloads = list(at.get("download_button"))
    assert downloads and all(d.proto.label == "Download" for d in downloads)
    assert any(f"File: {name}" in c.value.replace("\\", "") for c in at.caption)
    checks = make_app("pages/check_args.py").run()
    line = next(c.value for c in checks.caption if "counts as done in What's done" in c.value).replace("\\", "")
    assert "Last checked" in line and "Last accepted" not in line
