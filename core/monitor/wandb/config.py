"""A W&B run's config read back as the launch arguments it came from, for the launch checker.

slime logs `args.__dict__` as the W&B config: every argument's dest name with its parsed value, defaults
included, plus `env_vars` and `critic/`-prefixed copies (slime/observability/wandb_utils.py:82-103@624b824a).
Each key is matched to a flag of the argument catalog by its dest; values equal to the flag's default are
left out (the launch did not need them), flags are written as argparse reads them (`--flag` for switches,
one word per list item), and keys that are no flag (values slime computes at run time) are listed apart.
Credentials (`--wandb-key`, API keys, passwords) are replaced by "<hidden>".
"""

from __future__ import annotations

import math

from pydantic import BaseModel

SKIPPED_KEYS = ("_wandb", "env_vars")
HIDDEN = "<hidden>"


def is_secret(dest: str) -> bool:
    """Flags whose value is a credential (slime logs `--wandb-key` with the rest): never shown."""
    return dest == "wandb_key" or dest.endswith(("api_key", "api_keys")) or "password" in dest
PREFERRED_ACTIONS = ("store", "store_true", "store_false", "boolean_optional", "append")
OWNER_ORDER = ("slime", "megatron", "sglang", "router")


class ConfigArgs(BaseModel):
    """The argument form of a run's config, and what could not be put in it."""

    args: list[str] = []
    defaults: int = 0  # keys whose value is the flag's default (left out)
    not_flags: list[str] = []  # keys no launch flag has as its dest
    not_representable: list[str] = []  # flags whose logged value cannot be written back as words


def _flags_by_dest(catalog) -> dict[str, list]:
    out: dict[str, list] = {}
    for spec in catalog.flags:
        out.setdefault(spec.dest, []).append(spec)
    for specs in out.values():
        specs.sort(key=lambda s: (s.action not in PREFERRED_ACTIONS, "deprecated" in s.action.lower(),
                                  OWNER_ORDER.index(s.owner) if s.owner in OWNER_ORDER else len(OWNER_ORDER)))
    return out


def _word(value) -> str | None:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return value
    return None


def _same(value, default) -> bool:
    if value == default:
        return True
    return isinstance(default, str) and _word(value) == default


def config_to_args(config: dict, catalog) -> ConfigArgs:
    """The launch arguments that give this config (see the module docstring)."""
    by_dest = _flags_by_dest(catalog)
    out = ConfigArgs()
    for key, value in config.items():
        if key in SKIPPED_KEYS or "/" in key or key.startswith("_"):
            continue
        specs = by_dest.get(key)
        if not specs:
            out.not_flags.append(key)
            continue
        if is_secret(key) and value:
            value = HIDDEN
        words = _words(specs, value)
        if words is None:
            out.not_representable.append(specs[0].primary)
        elif not words:
            out.defaults += 1
        else:
            out.args.extend(words)
    return out


def _words(specs: list, value) -> list[str] | None:
    """The words for one dest ([] when the value is the default or unset, None when it cannot be written)."""
    if value is None:
        return []
    if isinstance(value, bool):
        for spec in specs:
            if spec.action == "store_true":
                return [spec.primary] if value else []
            if spec.action == "store_false":
                return [] if value else [spec.primary]
            if spec.action == "boolean_optional":
                negative = next((o for o in spec.option_strings if o.startswith("--no-")), None)
                if _same(value, spec.default):
                    return []
                return [spec.primary] if value else ([negative] if negative else None)
    spec = specs[0]
    if spec.action not in ("store", "append") or not spec.takes_value:
        return None
    if _same(value, spec.default):
        return []
    if isinstance(value, list):
        items = [_word(v) for v in value]
        if any(i is None for i in items):
            return None
        if spec.action == "append":
            return [w for item in items for w in (spec.primary, item)]
        if spec.nargs in (None, "?"):
            return None
        return [spec.primary, *items] if items else []
    word = _word(value)
    if word is None:
        return None
    if spec.choices and value not in spec.choices and word not in [str(c) for c in spec.choices]:
        return None
    return [spec.primary, word]


def check_config(config: dict, gpus: int | None = None):
    """(argument form, launch-checker report) of a run's config; the report is None when no flag was set."""
    from core.launch import CheckOptions, check_arg_list, load_catalog

    form = config_to_args(config, load_catalog())
    if not form.args:
        return form, None
    return form, check_arg_list(form.args, CheckOptions(gpus=gpus))


def as_script_lines(args: list[str]) -> str:
    """The arguments one flag per line, values quoted for the shell, as a launch script writes them."""
    import shlex

    lines: list[list[str]] = []
    for word in args:
        if word.startswith("--") or not lines:
            lines.append([word])
        else:
            lines[-1].append(shlex.quote(word))
    return " \\\n".join(" ".join(line) for line in lines)


def config_rows(config: dict, limit: int = 2000) -> list[dict[str, str]]:
    """The config as (key, value) text rows for display, credentials hidden, long values cut."""
    import json

    rows = []
    for key in sorted(config)[:limit]:
        if key == "_wandb":
            continue
        value = config[key]
        text = HIDDEN if is_secret(key.rsplit("/", 1)[-1]) and value else json.dumps(value, default=str)
        rows.append({"key": key, "value": text if len(text) <= 300 else text[:297] + "..."})
    return rows


def steps_per_rollout_note(config: dict) -> str | None:
    """What the config says about optimizer steps per rollout and the W&B step axis, as one sentence.

    slime trains rollout_batch_size * n_samples_per_prompt // global_batch_size optimizer steps per rollout
    (slime/utils/arguments.py:1971-1972@624b824a), and with --wandb-always-use-train-step it logs
    rollout/step as rollout_id times that number (slime/observability/metric_utils.py:120-123@624b824a)."""
    try:
        rollout = int(config["rollout_batch_size"])
        samples = int(config["n_samples_per_prompt"])
        global_batch = int(config["global_batch_size"])
    except (KeyError, TypeError, ValueError):
        return None
    if rollout <= 0 or samples <= 0 or global_batch <= 0:
        return None
    k = rollout * samples // global_batch
    from core.pins import slime_source

    text = (f"By its config this run trains {k} optimizer step(s) per rollout (rollout_batch_size {rollout} x "
            f"n_samples_per_prompt {samples} // global_batch_size {global_batch}, "
            f"{slime_source('slime/utils/arguments.py', 1972)}); enter it above to fix the rollout axis.")
    if config.get("wandb_always_use_train_step") is True:
        text += (" It logged with --wandb-always-use-train-step: rollout/step counts optimizer steps "
                 f"({slime_source('slime/observability/metric_utils.py', 121)}).")
    return text
