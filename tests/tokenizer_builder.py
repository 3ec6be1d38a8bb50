"""Small Hugging Face tokenizers built locally with the `tokenizers` library (nothing is downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]

# A ChatML-like template that renders tools, honours an enable_thinking kwarg and refuses roles that do not
# alternate (with raise_exception, as many real templates do).
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\nTools: {% for t in tools %}{{ t['name'] }} {% endfor %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'user' and loop.previtem is defined and loop.previtem['role'] == 'user' %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)

CORPUS = [
    "hello world this is a test of the tokenizer",
    "what is two plus two? the answer is four",
    "solve the equation x squared minus one equals zero",
    "the quick brown fox jumps over the lazy dog",
]


def build_tokenizer(directory: Path, *, vocab_size: int = 400, chat_template: str | None = CHAT_TEMPLATE,
                    corpus: list[str] | None = None, config: dict | None = None) -> Path:
    """Train a byte-level BPE tokenizer and save it as a Hugging Face tokenizer directory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator((corpus or CORPUS) * 20, trainer)
    tokenizer.save(str(directory / "tokenizer.json"))
    tokenizer_config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
                        "pad_token": "<|endoftext|>"}
    if chat_template is not None:
        tokenizer_config["chat_template"] = chat_template
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")
    if config is not None:
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory
