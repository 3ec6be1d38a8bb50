"""The numbers of PyTorch's CUDA out-of-memory message (core.plan.oom): each wording read, the judgments made
from them, and nothing said from numbers that cannot be right."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.plan import is_oom_paste, judge_oom, oom_text
from core.plan.oom import GIB, read_oom_numbers

CURRENT = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.27 GiB. GPU 0 has a total capacity of "
           "79.11 GiB of which 3.2 GiB is free. Including non-PyTorch memory, this process has 75.9 GiB memory in "
           "use. Of the allocated memory 60.1 GiB is allocated by PyTorch, and 14.2 GiB is reserved by PyTorch but "
           "unallocated.")
OLDER = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.35 GiB total capacity; 77.89 GiB "
         "already allocated; 3.19 MiB free; 78.20 GiB reserved in total by PyTorch)")
COLOCATED = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.27 GiB. GPU 0 has a total capacity of "
             "79.11 GiB of which 1.2 GiB is free. Process 4242 has 30.00 GiB memory in use. Including non-PyTorch "
             "memory, this process has 47.9 GiB memory in use. Of the allocated memory 40.1 GiB is allocated by "
             "PyTorch, and 2.2 GiB is reserved by PyTorch but unallocated.")
LOGITS_FRAME = ('Traceback (most recent call last):\n  File "/root/slime/slime/backends/megatron_utils/loss.py", '
                'line 560, in get_log_probs_and_entropy\n    logits = logits.float()\n')


def close(a: float | None, gib: float) -> bool:
    return a is not None and abs(a - gib * GIB) < 0.01 * GIB


def test_the_current_wording_is_read_part_by_part():
    n = read_oom_numbers("Traceback ...\n" + CURRENT)
    assert n is not None and n.wording == "current"
    assert close(n.request, 9.27) and close(n.total, 79.11) and close(n.free, 3.2) and close(n.in_use, 75.9)
    assert close(n.allocated, 60.1) and close(n.unallocated, 14.2) and n.other_processes is None


def test_the_older_wording_is_read_and_its_unallocated_part_derived():
    n = read_oom_numbers(OLDER)
    assert n is not None and n.wording == "older"
    assert abs(n.request - 20 * 2**20) < 1 and close(n.total, 79.35) and abs(n.free - 3.19 * 2**20) < 1
    assert close(n.allocated, 77.89) and close(n.unallocated, 78.20 - 77.89) and n.in_use is None


def test_fragmentation_names_expandable_segments_with_slimes_lines():
    reading = judge_oom(CURRENT)
    assert reading is not None
    text = oom_text(reading)
    assert text.startswith("The numbers in your paste:")
    assert "The failed request is 9.27 GiB, 12% of the GPU's 79.1 GiB." in text
    assert "Fragmentation explains it: PyTorch held 14.2 GiB reserved but unallocated" in text
    assert "SLIME_ENABLE_EXPANDABLE_SEGMENTS=1" in text and "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in text
    assert "slime/utils/accelerator/torch_accelerator.py:93@624b824a" in text
    assert reading.gpu == "H100-80GB" and "--gpu H100-80GB" in reading.plan_hint
    assert "Other processes" not in text and "log-prob path" not in text and reading.tokens is None


def test_another_process_on_the_gpu_points_at_the_colocated_engine():
    text = oom_text(judge_oom(COLOCATED))
    assert "Other processes hold 30.0 GiB of this GPU (38%)" in text
    assert "--offload-rollout (slime/utils/arguments.py:94@624b824a)" in text and "--sglang-mem-fraction-static" in text
    assert "fragmentation alone does not explain it" in text and "Fragmentation explains it" not in text
    assert "This process holds 5.60 GiB outside PyTorch's allocator" in text


def test_the_log_prob_path_with_a_named_model_gives_tokens_of_logits_and_flags():
    reading = judge_oom(LOGITS_FRAME + CURRENT + "\nmodel: /ckpt/Qwen3-4B")
    assert reading is not None and reading.model == "qwen3-4B"
    assert reading.tokens == int(9.27 * GIB // (4 * 151936))  # 16,377
    text = oom_text(reading)
    assert "about 16,377 tokens of fp32 logits for qwen3-4B (vocab 151,936 from scripts/models/qwen3-4B.sh@624b824a; " \
           "TP 1 assumed, so 151,936 logits a token on this GPU)" in text
    assert "--log-probs-chunk-size 1024" in text and "slime/backends/megatron_utils/loss.py:548@624b824a" in text
    assert "--max-tokens-per-gpu (for example 7168" in text


def test_the_profiles_model_is_used_when_the_paste_names_none_and_tp_is_read():
    reading = judge_oom(LOGITS_FRAME + "--tensor-model-parallel-size 2\n" + CURRENT, model="Qwen3-4B")
    assert reading is not None and reading.tokens == int(9.27 * GIB // (4 * 152064 / 2))  # padded to 128 x TP
    assert "TP 2 read from your paste" in oom_text(reading)
    assert judge_oom(CURRENT, model="Qwen3-4B").tokens is None  # not in the log-prob path: no tokens


def test_absurd_or_missing_numbers_say_nothing_wrong():
    assert judge_oom("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1e308 GiB.") is None
    assert judge_oom("CUDA out of memory. Tried to allocate -5.00 GiB.") is None
    assert judge_oom("torch.OutOfMemoryError: CUDA out of memory.") is None
    assert judge_oom("") is None
    reading = judge_oom("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of "
                        "which 900.00 GiB is free. Including non-PyTorch memory, this process has 75.9 GiB memory in "
                        "use. Of the allocated memory 70.1 GiB is allocated by PyTorch, and 50.2 GiB is reserved by "
                        "PyTorch but unallocated.")
    assert reading is not None and reading.numbers.free is None and reading.numbers.unallocated is None
    assert "Fragmentation" not in oom_text(reading) and "900" not in oom_text(reading)
    only = judge_oom("CUDA out of memory. Tried to allocate 512.00 MiB")
    assert only is not None and only.lines == ["The failed request is 512 MiB."] and only.gpu is None


def test_the_paste_test_is_cheap_and_precise():
    assert is_oom_paste(CURRENT) and is_oom_paste(OLDER) and not is_oom_paste("rollout batch size")


_PIECES = st.sampled_from(["Tried to allocate ", "GPU 0 has a total capacity of ", " of which ", " is free. ",
                           "this process has ", " memory in use. ", "Of the allocated memory ", " is allocated by "
                           "PyTorch, and ", " is reserved by PyTorch but unallocated.", "(GPU 0; ", " total capacity; ",
                           " already allocated; ", " free; ", " reserved in total by PyTorch)", "Process 7 has ",
                           "1e308", "-3", "9.27 GiB", "0 MiB", "12.5 TiB", "99999999999999999999 bytes", "\n", " "])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=30))
def test_any_text_reads_without_a_crash_and_within_bounds(pieces):
    text = "CUDA out of memory. " + "".join(pieces)
    reading = judge_oom(text)
    if reading is not None:
        n = reading.numbers
        for value in (n.request, n.total, n.free, n.in_use, n.allocated, n.unallocated, n.other_processes):
            assert value is None or 0 <= value <= 64 * 2**40
        assert reading.lines and all("nan" not in line and "inf" not in line.split() for line in reading.lines)
        if n.total is not None:
            assert all(v is None or v <= n.total * 1.01 + 2**26 for v in (n.free, n.in_use))


def test_a_gpu_full_of_pytorchs_own_tensors_points_at_the_tokens_per_micro_batch():
    text = oom_text(judge_oom("CUDA out of memory. Tried to allocate 14.84 GiB. GPU 0 has a total capacity of 79.11 "
                              "GiB of which 3.52 GiB is free. Including non-PyTorch memory, this process has 75.58 GiB "
                              "memory in use. Of the allocated memory 70.12 GiB is allocated by PyTorch, and 4.21 GiB "
                              "is reserved by PyTorch but unallocated."))
    assert "PyTorch's own tensors take 70.1 GiB (89% of the GPU)" in text
    assert "--max-tokens-per-gpu, slime/utils/arguments.py:758@624b824a" in text and "Fragmentation explains" not in text


def test_the_thread_of_issue_1951_is_told_in_its_own_tokens():
    """slime issue 1951 (tests/fixtures/plan_measurements.yaml, qwen3-4b-retool-h200-logits-oom): 58.15 GiB was
    205,280 tokens x 76,032 x 4 bytes, Qwen3-4B's vocabulary padded to 152,064 and split over TP 2."""
    paste = (LOGITS_FRAME + "--tensor-model-parallel-size 2 Qwen3-4B\ntorch.OutOfMemoryError: CUDA out of memory. Tried "
             "to allocate 58.15 GiB. GPU 0 has a total capacity of 139.81 GiB of which 40.10 GiB is free.")
    reading = judge_oom(paste)
    assert reading is not None and abs(reading.tokens - 205_280) < 205_280 * 0.001
    text = oom_text(reading)
    assert "padded to 152,064 by Megatron's _vocab_size_with_padding (megatron/training/tokenizer/tokenizer.py:110@1dcf0daf)" in text
    assert "TP 2 read from your paste, so 76,032 logits a token on this GPU" in text and reading.gpu == "H200"


def test_the_profiles_gpu_is_named_when_the_capacity_fits_it():
    assert judge_oom(CURRENT, gpu="NVIDIA H800").gpu == "H800"
    assert judge_oom(CURRENT, gpu="H200").gpu == "H100-80GB"  # the capacity says otherwise
    assert judge_oom("CUDA out of memory. Tried to allocate 2.00 GiB", gpu="H200").gpu == "H200"
