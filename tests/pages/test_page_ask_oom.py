"""AppTest of the Ask page on a pasted CUDA out-of-memory message: its numbers judged in an info box, inert."""

from __future__ import annotations

from core.memory.profile import Profile
from core.memory.store import Store
from tests.pages.test_page_ask_flags import ACTIVE, rendered

OOM = ('Traceback (most recent call last):\n  File "/root/slime/slime/backends/megatron_utils/loss.py", line 560, '
       "in get_log_probs_and_entropy\n    logits = logits.float()\ntorch.OutOfMemoryError: CUDA out of memory. Tried "
       "to allocate 9.27 GiB. GPU 0 has a total capacity of 79.11 GiB of which 3.2 GiB is free. Including "
       "non-PyTorch memory, this process has 75.9 GiB memory in use. Of the allocated memory 60.1 GiB is allocated "
       "by PyTorch, and 14.2 GiB is reserved by PyTorch but unallocated. <img src=x onerror=alert(1)>")


def test_ask_page_shows_the_numbers_of_an_oom_paste_with_the_profiles_model(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    at = make_app("pages/ask.py")
    at.query_params["q"] = OOM
    at.run()
    assert not at.exception
    boxes = [i.value.replace("\\", "") for i in at.info if "The numbers in your paste" in i.value]
    assert len(boxes) == 1
    box = boxes[0]
    assert "Fragmentation explains it: PyTorch held 14.2 GiB reserved but unallocated" in box
    assert "about 16,377 tokens of fp32 logits for qwen3-4B" in box and "--log-probs-chunk-size 1024" in box
    assert "slime-assistant plan YOUR_SCRIPT.sh --gpu H100-80GB" in box
    assert not any(ACTIVE.search(t) for t in rendered(at))


def test_ask_page_shows_no_numbers_box_for_other_queries(app_env, make_app):
    at = make_app("pages/ask.py")
    at.query_params["q"] = "rollout batch size"
    at.run()
    assert not at.exception and not any("The numbers in your paste" in i.value for i in at.info)
