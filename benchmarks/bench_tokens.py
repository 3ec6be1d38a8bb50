"""Benchmark the data check with the model's tokenizer against the bare batch tokenizer call.

Builds a byte-level BPE tokenizer of about --vocab tokens (default 100,000) locally with the `tokenizers`
library (nothing is downloaded; kept in --work between runs), writes --rows chat rows (default 100,000:
a system and a user message, 60 to 400 words), then, each in a fresh process:
- bare: `tokenizer(rendered_prompts, add_special_tokens=False)` over the prompts already rendered with the
  chat template (the call slime's length filter makes, slime/utils/data.py:130);
- render + bare: the same, plus rendering every row with apply_chat_template first (what slime does before);
- full check: core.data.scan.check_path with the tokenizer, --apply-chat-template and a prompt limit (its
  rendering and counting run in the tokenizer's worker process; CPU is the app's plus the worker's).
Prints seconds, rows/s, the ratio of the full check to the bare call and peak RSS; with --memory, also the
full check's peak RSS on half and double the rows (memory should stay flat with the file size).

    .venv/bin/python benchmarks/bench_tokens.py                      # 100k rows, ~100k vocabulary
    .venv/bin/python benchmarks/bench_tokens.py --rows 20000 --vocab 30000 --memory
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SYLLABLES = [a + b for a in "bcdfghjklmnprstvwz" for b in ("a", "e", "i", "o", "u", "ai", "ou", "ei")]


def words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 5))) for _ in range(count)]


def build_tokenizer(directory: Path, vocab: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    rng = random.Random(7)
    lexicon = words(rng, vocab * 2)
    corpus = (" ".join(rng.choices(lexicon, k=200)) for _ in range(25_000))
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(corpus, trainer)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "chat_template": TEMPLATE}))


def generate(path: Path, rows: int) -> None:
    rng = random.Random(11)
    lexicon = words(rng, 50_000)
    weights = [1 / rank for rank in range(1, len(lexicon) + 1)]  # word frequencies as in text (Zipf)
    texts = [" ".join(rng.choices(lexicon, weights, k=rng.randint(60, 400))) for _ in range(2_003)]
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(rows):
            row = {"prompt": [{"role": "system", "content": "Answer briefly."},
                              {"role": "user", "content": texts[i % len(texts)]}], "label": str(i)}
            handle.write(json.dumps(row) + "\n")


CHILD = r"""
import json, resource, sys, time
mode, data, tok_dir, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import os

def worker_usage(pid):
    # CPU seconds and peak RSS (MB) of the tokenizer's worker process (a child of the forkserver, not ours)
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = [l for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM:")][0].split()[1]
    return cpu, int(hwm) / 1024

if mode == "full":
    from core.data.tokens import load_tokenizer, LengthSettings
    from core.data.rules import DataKeys
    from core.data.scan import check_path
    loaded = load_tokenizer(tok_dir)
    pid = loaded.worker._process.pid
    worker_cpu_before, _ = worker_usage(pid)
    started, cpu = time.perf_counter(), time.process_time()
    report = check_path(data, DataKeys(input_key="prompt", label_key="label", apply_chat_template=True),
                        tokenizer=loaded, lengths=LengthSettings(rollout_max_prompt_len=limit))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    worker_cpu, worker_peak = worker_usage(pid)
    extra = {"dropped": report.summary.dropped_for_length, "tokens": report.summary.prompt_tokens.model_dump(),
             "rows": report.summary.rows, "app_cpu": cpu, "worker_cpu": worker_cpu - worker_cpu_before,
             "worker_peak_mb": worker_peak, "worker_starts": loaded.worker.starts}
    cpu += worker_cpu - worker_cpu_before
else:
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(tok_dir, local_files_only=True)
    rows = [json.loads(line) for line in open(data, encoding="utf-8")]
    started = time.perf_counter()
    rendered = [tokenizer.apply_chat_template(r["prompt"], tools=None, tokenize=False, add_generation_prompt=True)
                for r in rows]
    render_seconds = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    ids = tokenizer(rendered, add_special_tokens=False)["input_ids"]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    extra = {"render_seconds": render_seconds, "dropped": sum(len(i) > limit for i in ids), "rows": len(ids)}
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak, **extra}))
"""


def child(mode: str, data: Path, tok_dir: Path, limit: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(data), str(tok_dir), str(limit)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--vocab", type=int, default=100_000)
    parser.add_argument("--limit", type=int, default=768, help="--rollout-max-prompt-len for the check")
    parser.add_argument("--memory", action="store_true", help="also run the check on half and double the rows")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "slime-assistant-bench-tokens")
    args = parser.parse_args()
    tok_dir = args.work / f"bpe-{args.vocab}"
    if not (tok_dir / "tokenizer.json").exists():
        print(f"building a {args.vocab:,}-token BPE tokenizer in {tok_dir} ...", flush=True)
        build_tokenizer(tok_dir, args.vocab)
    data = args.work / f"chat-{args.rows}.jsonl"
    if not data.exists():
        generate(data, args.rows)
    vocab = len(json.loads((tok_dir / "tokenizer.json").read_text())["model"]["vocab"])
    print(f"tokenizer: {vocab:,} tokens; data: {args.rows:,} chat rows, {data.stat().st_size / 1e6:.0f} MB")
    bare = child("bare", data, tok_dir, args.limit)
    full = child("full", data, tok_dir, args.limit)
    assert full["dropped"] == bare["dropped"], (full, bare)
    print(f"bare batch tokenizer call:   {bare['seconds']:6.2f} s wall, {bare['cpu']:6.2f} s CPU "
          f"({args.rows / bare['seconds']:,.0f} rows/s)")
    print(f"rendering with the template: {bare['render_seconds']:6.2f} s wall (before that call, in slime too)")
    print(f"full check with tokenizer:   {full['seconds']:6.2f} s wall, {full['cpu']:6.2f} s CPU "
          f"({args.rows / full['seconds']:,.0f} rows/s), peak RSS {full['peak_mb']:.0f} MB")
    print(f"  of which the app's process {full['app_cpu']:.2f} s CPU; the tokenizer's worker process "
          f"{full['worker_cpu']:.2f} s CPU, peak RSS {full['worker_peak_mb']:.0f} MB, started "
          f"{full['worker_starts']} time(s)")
    print(f"ratio to the bare call: {full['seconds'] / bare['seconds']:.2f}x wall, {full['cpu'] / bare['cpu']:.2f}x "
          f"CPU; to render + bare call: {full['seconds'] / (bare['seconds'] + bare['render_seconds']):.2f}x wall")
    print(f"rows dropped for length {args.limit}: {full['dropped']:,} (same as the direct run); "
          f"prompt tokens {full['tokens']}")
    if args.memory:
        for rows in (args.rows // 2, args.rows * 2):
            path = args.work / f"chat-{rows}.jsonl"
            if not path.exists():
                generate(path, rows)
            result = child("full", path, tok_dir, args.limit)
            print(f"full check on {rows:,} rows ({path.stat().st_size / 1e6:.0f} MB): "
                  f"{result['seconds']:.2f} s, peak RSS {result['peak_mb']:.0f} MB (app), "
                  f"{result['worker_peak_mb']:.0f} MB (tokenizer's worker)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
