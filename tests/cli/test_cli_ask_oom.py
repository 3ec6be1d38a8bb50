"""`ask` on a pasted CUDA out-of-memory message: the numbers block before the results, the "memory" JSON key,
and neither for any other query."""

from __future__ import annotations

import io
import json

from core.cli import main
from tests.plan.test_oom_numbers import COLOCATED, CURRENT


def _ask(monkeypatch, capsys, paste: str, *options: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(paste))
    code = main(["ask", *options, "-"])
    return code, capsys.readouterr().out


def test_ask_prints_the_numbers_before_the_results(monkeypatch, capsys):
    code, out = _ask(monkeypatch, capsys, 'Traceback (most recent call last):\n  File "/root/slime/slime/backends/'
                     'megatron_utils/actor.py", line 300, in train\n    loss.backward()\n' + CURRENT + "\n")
    assert code == 0
    assert out.startswith("The numbers in your paste:\n  The failed request is 9.27 GiB, 12% of the GPU's 79.1 GiB.")
    assert "Fragmentation explains it" in out and "`slime-assistant plan YOUR_SCRIPT.sh --gpu H100-80GB`" in out
    assert out.index("The numbers in your paste") < out.index("Read from your paste")


def test_ask_json_has_a_memory_key_only_for_an_oom_paste(monkeypatch, capsys):
    _, out = _ask(monkeypatch, capsys, COLOCATED, "--format", "json")
    memory = json.loads(out)["memory"]
    assert memory["gpu"] == "H100-80GB" and memory["numbers"]["wording"] == "current"
    assert abs(memory["numbers"]["other_processes"] - 30 * 2**30) < 1
    assert any(line.startswith("Other processes hold 30.0 GiB") for line in memory["lines"])
    _, out = _ask(monkeypatch, capsys, "AssertionError: Only one of kl_coef and kl_loss_coef can be set", "--format",
                  "json")
    assert "memory" not in json.loads(out)


def test_an_oom_word_without_numbers_adds_nothing(monkeypatch, capsys):
    _, out = _ask(monkeypatch, capsys, "torch.OutOfMemoryError: CUDA out of memory.\n")
    assert "The numbers in your paste" not in out
