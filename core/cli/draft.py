"""`slime-assistant draft grpo|async`: print (or write) the same launch-script draft the pages produce.

The draft is only text: nothing is run. Findings go to stderr; the exit code is 0 when the draft is ready,
1 when it has an error finding (or could not be checked), 2 for bad command-line input. With `--format json`
stdout holds one JSON object instead (see `draft_json`), and stderr only usage problems.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pydantic import ValidationError

from core.cli.output import say, shown, write_json, write_text
from core.drafts import Draft, DraftRequest, draft_launch_script
from core.findings import Finding, count_by_severity, findings_json, render_text
from core.paths import PathRefused, expand_user, name_length_problem

EXIT_READY = 0
EXIT_NOT_READY = 1
EXIT_USAGE = 2
JSON_FIELDS = ("code", "severity", "message", "line", "flag", "fix", "source")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "draft", help="draft a GRPO or async launch script (printed, never run)",
        description="Draft a slime launch script for review. It is printed or written to --output; "
                    "it is never executed.")
    parser.add_argument("workflow", choices=("grpo", "async"), help="which workflow's draft")
    parser.add_argument("--model", required=True, help="model name, e.g. Qwen3-4B")
    parser.add_argument("--data", required=True, help="prompt data path on the training machine (.jsonl/.parquet)")
    parser.add_argument("--gpus", required=True, type=int, help="GPUs in total")
    parser.add_argument("--nodes", type=int, default=1, help="number of nodes the GPUs are spread over")
    parser.add_argument("--colocate", action="store_true", help="share every GPU between actor and rollout "
                        "(GRPO only; train_async.py refuses it)")
    parser.add_argument("--split", action="store_true", help="separate actor and rollout GPUs (GRPO)")
    parser.add_argument("--actor-gpus", type=int, default=None, help="actor GPUs in a split layout")
    parser.add_argument("--model-script", default=None, help="name under scripts/models when the match is unclear")
    parser.add_argument("--input-key", default=None, help="prompt column (slime's own default is 'input')")
    parser.add_argument("--label-key", default=None, help="label column")
    parser.add_argument("--update-weights-interval", type=int, default=None, help="async: weight-sync interval")
    parser.add_argument("--staleness", type=int, default=None, help="async: rollouts of lag you accept")
    parser.add_argument("--fully-async", action="store_true", help="async: use slime's fully-async rollout")
    parser.add_argument("--output", default=None, help="write the script to this new file instead of stdout")
    parser.add_argument("--summary", default=None, help="also write the markdown configuration summary here")
    parser.add_argument("--force", action="store_true", help="overwrite --output/--summary if they exist")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="output_format",
                        help="json: print one object (script, configuration summary, findings) on stdout")
    parser.add_argument("--slime-checkout", default=None, metavar="DIR",
                        help="check the draft against this slime checkout (default: $SLIME_ASSISTANT_SLIME_CHECKOUT)")
    parser.add_argument("--sglang-source", default=None, metavar="DIR",
                        help="with --slime-checkout: your SGLang (default: $SLIME_ASSISTANT_SGLANG_SOURCE)")
    parser.add_argument("--megatron-source", default=None, metavar="DIR",
                        help="with --slime-checkout: your Megatron-LM (default: $SLIME_ASSISTANT_MEGATRON_SOURCE)")
    parser.set_defaults(func=handle_draft)


# Which command-line flag each DraftRequest field comes from, so messages name what the user typed.
FLAG_OF_FIELD = {
    "model": "--model", "data_path": "--data", "gpus_total": "--gpus", "gpus_per_node": "--nodes",
    "actor_gpus": "--actor-gpus", "model_script": "--model-script", "input_key": "--input-key",
    "label_key": "--label-key", "update_weights_interval": "--update-weights-interval",
    "staleness": "--staleness", "colocate": "--colocate/--split", "fully_async": "--fully-async",
}


def request_from_args(args: argparse.Namespace) -> DraftRequest:
    """The DraftRequest for the command line; raises ValueError with a specific message."""
    if args.gpus < 1:
        raise ValueError(f"--gpus must be 1 or more, not {args.gpus}")
    if args.nodes < 1 or args.gpus % args.nodes:
        raise ValueError(f"--gpus {args.gpus} does not split into --nodes {args.nodes} equal nodes")
    if args.colocate and args.split:
        raise ValueError("choose --colocate or --split, not both")
    answers: dict[str, object] = {
        "kind": args.workflow, "model": args.model, "data_path": args.data, "gpus_total": args.gpus,
        "gpus_per_node": args.gpus // args.nodes if args.nodes > 1 else None,
    }
    if args.colocate:
        answers["colocate"] = True
    elif args.split:
        answers["colocate"] = False
    optional = {"actor_gpus": args.actor_gpus, "model_script": args.model_script, "input_key": args.input_key,
                "label_key": args.label_key, "update_weights_interval": args.update_weights_interval,
                "staleness": args.staleness}
    answers.update({k: v for k, v in optional.items() if v is not None})
    if args.fully_async:
        answers["fully_async"] = True
    for field, value in answers.items():
        if isinstance(value, str) and shown(value) != value:
            raise ValueError(f"{FLAG_OF_FIELD.get(field, field)} {shown(value)}: holds bytes that are not UTF-8 "
                             "(shown as \\xNN); a launch script needs text, so rename the file or directory")
    try:
        return DraftRequest.model_validate(answers)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else ""
            where = FLAG_OF_FIELD.get(field, field or "the answers")
            parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
        raise ValueError("; ".join(parts)) from None


def _write_new(path_text: str, text: str, force: bool) -> str | None:
    """Write text to a file; an error message instead of overwriting or crashing.

    A `~user` that does not exist and a name longer than the file system allows are refused with a
    message before anything is touched; any other OSError becomes a message too.
    """
    try:
        path = expand_user(path_text)
    except PathRefused as exc:
        return str(exc)
    too_long = name_length_problem(path)
    if too_long:
        return f"cannot write {path_text}: {too_long}"
    try:
        if path.exists() and not force:
            return f"{path} exists; pass --force to overwrite it"
        if path.exists() and not path.is_file():
            return f"{path} is not a regular file"
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    except ValueError:  # a NUL byte in the name
        return f"cannot write {path_text!r}: the name contains a NUL byte"
    return None


def handle_draft(args: argparse.Namespace) -> int:
    try:
        request = request_from_args(args)
    except ValueError as exc:
        say(f"slime-assistant draft: {exc}")
        return EXIT_USAGE
    checker, problem = _own_checker(args)
    if problem:
        say(f"slime-assistant draft: {problem}")
        return EXIT_USAGE
    draft: Draft = draft_launch_script(request, checker=checker, scripts=_own_scripts(args) if checker else None)
    as_json = getattr(args, "output_format", "text") == "json"
    if draft.findings and not as_json:
        say(render_text(draft.findings))
    if not draft.script:
        if as_json:
            write_json(draft_json(draft, None))
        else:
            say("No draft: fix the errors above.")
        return EXIT_NOT_READY
    for target, text in ((args.output, draft.script), (args.summary, draft.summary_markdown)):
        if target:
            error = _write_new(target, text, args.force)
            if error:
                say(f"slime-assistant draft: {error}")
                return EXIT_USAGE
    if as_json:
        write_json(draft_json(draft, args.output))
        return EXIT_READY if draft.ready else EXIT_NOT_READY
    if not args.output:
        write_text(draft.script, end="", limit=None)  # whole lines: the script is saved and run
    status = "ready for your review" if draft.ready else "NOT ready (see the findings above)"
    where = f" written to {args.output}" if args.output else ""
    say(f"Draft{where}: {status}. Nothing was run.")
    return EXIT_READY if draft.ready else EXIT_NOT_READY


def draft_json(draft: Draft, output: str | None) -> dict:
    """The JSON reporter: whether the draft is ready, the script text (null when there is no draft), where it
    was written (null: only here), the markdown configuration summary, the findings and their counts."""
    return {
        "workflow": draft.request.kind, "ready": draft.ready, "checked": draft.checked,
        "filename": draft.filename if draft.script else None, "output": output,
        "script": draft.script or None, "summary_markdown": draft.summary_markdown or None,
        "findings": findings_json(draft.findings, JSON_FIELDS), "counts": count_by_severity(draft.findings),
    }


def _own_scripts(args: argparse.Namespace) -> tuple | None:
    """The model scripts of the user's own checkout (given or from the environment), None for the pinned ones."""
    from core.launch import checkout_model_scripts, sources_from_env

    slime = sources_from_env(slime=getattr(args, "slime_checkout", None)).slime
    return (checkout_model_scripts(slime) or None) if slime is not None else None


def _own_checker(args: argparse.Namespace) -> tuple[Callable[[str, int], list[Finding] | None] | None, str | None]:
    """The checker judging the draft by the user's own versions (options, else environment), or why not."""
    from core.drafts import checkout_checker
    from core.launch import SourceError, megatron_root, sglang_root, slime_problem, sources_from_env

    sources = sources_from_env(slime=getattr(args, "slime_checkout", None), sglang=getattr(args, "sglang_source", None),
                               megatron=getattr(args, "megatron_source", None))
    if sources.slime is None:
        return None, None
    problem = slime_problem(sources.slime)
    if problem:
        return None, problem
    try:
        if sources.sglang is not None:
            sglang_root(sources.sglang)
        if sources.megatron is not None:
            megatron_root(sources.megatron)
    except SourceError as exc:
        return None, str(exc)
    return checkout_checker(sources.slime, sources.sglang, sources.megatron), None
