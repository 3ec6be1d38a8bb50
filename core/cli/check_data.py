"""`slime-assistant check-data PATH`: the dataset check from the shell (exit 1 when slime would stop at
start-up or skip or crash on any row, 2 when the file cannot be checked)."""

from __future__ import annotations

import argparse
import sys

from pydantic import ValidationError

from core.cli.output import progress, say, write_json, write_text
from core.data import (
    MAX_LINE_BYTES,
    MAX_LISTED_PER_CODE,
    CheckError,
    DataKeys,
    LengthSettings,
    TemplateLimits,
    TokenizerUnusable,
    check_path,
    load_tokenizer,
    render_report_text,
    settings_errors,
)
from core.findings import dumps

EXIT_OK, EXIT_WOULD_FAIL, EXIT_CANNOT_CHECK = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-data",
        help="check a .jsonl/.parquet prompt file the way slime's loader reads it",
        description=("Read a prompt-data file as slime's loader would and list every row it would drop or "
                     "crash on. Nothing is changed. Exit 0: fine; 1: slime would stop at start-up, or skip "
                     "or crash on some rows; 2: the file could not be checked."),
    )
    parser.add_argument("path", help="the data file; a trailing @[start:end] is slime's row slice")
    parser.add_argument("--input-key", default="input", help="key of the prompt (slime's default: input)")
    parser.add_argument("--label-key", default=None, help="key of the label (slime's default: none)")
    parser.add_argument("--tool-key", default="tools", help="key of the tool list (slime's default: tools)")
    parser.add_argument("--metadata-key", default="metadata", help="key of per-row metadata (default: metadata)")
    parser.add_argument("--apply-chat-template", action="store_true", help="the run passes --apply-chat-template")
    parser.add_argument("--multimodal-keys", default=None, metavar="JSON",
                        help='media type to key, as for slime, e.g. \'{"image": "images"}\'')
    tokens = parser.add_argument_group(
        "token lengths", "with the model's tokenizer, prompts are rendered and counted as slime's Dataset does")
    tokens.add_argument("--tokenizer", metavar="DIR", default=None,
                        help="the model's Hugging Face checkpoint or tokenizer directory (as --hf-checkpoint); "
                             "loaded offline, never with remote code")
    tokens.add_argument("--rollout-max-prompt-len", type=int, default=None, metavar="N",
                        help="slime drops prompts longer than N tokens at start-up")
    tokens.add_argument("--rollout-max-response-len", type=int, default=None, metavar="N",
                        help="with the context length, rows whose prompt plus N tokens do not fit are counted")
    tokens.add_argument("--rollout-max-context-len", type=int, default=None, metavar="N",
                        help="without --rollout-max-prompt-len, slime's prompt limit is N - 1")
    tokens.add_argument("--context-length", type=int, default=None, metavar="N",
                        help="the model's context length in SGLang (default: from config.json, SGLang's rule)")
    tokens.add_argument("--apply-chat-template-kwargs", default=None, metavar="JSON",
                        help='extra arguments for the chat template, e.g. \'{"enable_thinking": false}\'')
    tokens.add_argument("--template-seconds", type=float, default=TemplateLimits().seconds, metavar="S",
                        help="stop the chat template on a row after S seconds (default %(default)g)")
    tokens.add_argument("--template-memory-mb", type=int, default=TemplateLimits().memory_mb, metavar="MB",
                        help="memory the tokenizer's worker may use beyond the loaded tokenizer "
                             "(default %(default)d)")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
    parser.add_argument("--max-listed", type=int, default=MAX_LISTED_PER_CODE, metavar="N",
                        help=f"list at most N findings of each code (default {MAX_LISTED_PER_CODE})")
    parser.add_argument("--max-line-mb", type=float, default=MAX_LINE_BYTES / 2**20, metavar="MB",
                        help=f"lines longer than this are reported, not parsed (default {MAX_LINE_BYTES // 2**20})")
    parser.set_defaults(func=run_check_data)


def run_check_data(args: argparse.Namespace) -> int:
    """Handler: check the file, print the report, return the exit code."""
    try:
        keys = DataKeys(input_key=args.input_key, label_key=args.label_key, tool_key=args.tool_key,
                        metadata_key=args.metadata_key, apply_chat_template=args.apply_chat_template,
                        multimodal_keys=args.multimodal_keys)
    except ValidationError as exc:
        say(f"check-data: {_first_error(exc)}")
        return EXIT_CANNOT_CHECK
    if args.max_listed < 0 or not 0.001 <= args.max_line_mb <= 1024:
        say("check-data: --max-listed must be 0 or more and --max-line-mb between 0.001 and 1024")
        return EXIT_CANNOT_CHECK
    try:
        lengths = LengthSettings(rollout_max_prompt_len=args.rollout_max_prompt_len,
                                 rollout_max_response_len=args.rollout_max_response_len,
                                 rollout_max_context_len=args.rollout_max_context_len,
                                 context_length=args.context_length,
                                 apply_chat_template_kwargs=args.apply_chat_template_kwargs)
    except ValidationError as exc:
        say(f"check-data: {_first_error(exc)}")
        return EXIT_CANNOT_CHECK
    if not 0 < args.template_seconds <= 600 or not 64 <= args.template_memory_mb <= 65536:
        say("check-data: --template-seconds must be more than 0 and at most 600, --template-memory-mb between 64 "
            "and 65536")
        return EXIT_CANNOT_CHECK
    limits = TemplateLimits(seconds=args.template_seconds, memory_mb=args.template_memory_mb)
    tokenizer, tokenizer_problem = None, None
    if args.tokenizer:
        try:
            tokenizer = load_tokenizer(args.tokenizer, limits=limits)
        except TokenizerUnusable as exc:
            tokenizer_problem = f"The tokenizer at {args.tokenizer} was not used: {exc}"
            say(f"check-data: {tokenizer_problem}")
    elif lengths.prompt_limit is not None or args.apply_chat_template_kwargs:
        say("check-data: no token-length check without the model's tokenizer; add --tokenizer DIR")
    progress = _stderr_progress if sys.stderr.isatty() else None
    try:
        report = check_path(args.path, keys, max_line_bytes=int(args.max_line_mb * 2**20),
                            max_listed=args.max_listed, progress=progress, tokenizer=tokenizer, lengths=lengths,
                            tokenizer_problem=tokenizer_problem)
    except CheckError as exc:
        say(f"check-data: {exc}")
        return EXIT_CANNOT_CHECK
    finally:
        if progress is not None:
            progress("")
    if args.output_format == "json":
        write_json(dumps(report.to_json()))
    else:
        write_text(render_report_text(report))
    if report.summary.would_fail:
        return EXIT_WOULD_FAIL
    if tokenizer_problem:
        return EXIT_CANNOT_CHECK
    return EXIT_OK if report.summary.complete else EXIT_CANNOT_CHECK


def _stderr_progress(fraction: float, text: str) -> None:
    progress(f"checking: {fraction:4.0%} {text}")


def _first_error(exc: ValidationError) -> str:
    return settings_errors(exc)[0]
