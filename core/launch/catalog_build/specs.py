"""From recorded flags to catalog entries: JSON values, FlagSpecs, and the merge across parsers."""

from __future__ import annotations

import json
import re
from typing import Any

from core.launch.catalog import FlagSpec
from core.launch.catalog_build.descriptions import DESCRIPTIONS
from core.launch.catalog_build.interpreter import Interpreter
from core.launch.catalog_build.values import (
    _IMPLICIT,
    UNKNOWN,
    ClassRef,
    EnumMember,
    FunctionRef,
    Opaque,
    RawFlag,
    Symbol,
    Unresolved,
    _dest_of,
)

# When one option is registered by several parsers, the namespace slime finally uses takes the value from
# the parser merged last (slime/utils/arguments.py: pre and sglang results are copied over the main ones).
PARSER_PRECEDENCE = ("sglang", "pre", "main", "sglang_tp", "fsdp")


def to_json_value(value: Any) -> Any:
    """A JSON-ready copy of a statically evaluated value; raises Unresolved for anything else."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise Unresolved("non-finite float")
        return value
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, set):
        return sorted(to_json_value(v) for v in value)
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, EnumMember):
        return value.name
    raise Unresolved(repr(value))


def _value_text(value: Any) -> str:
    if isinstance(value, Opaque):
        return value.text
    if isinstance(value, Symbol):
        return value.text
    if isinstance(value, EnumMember):
        return f"{value.enum}.{value.name}"
    if isinstance(value, FunctionRef):
        return value.node.name
    if isinstance(value, ClassRef):
        return value.node.name
    return repr(value)


_ACTION_NAMES = {
    "argparse.BooleanOptionalAction": "boolean_optional",
    "BooleanOptionalAction": "boolean_optional",
    "argparse._StoreTrueAction": "store_true",
}


def spec_from_raw(raw: RawFlag, interp: Interpreter) -> FlagSpec:
    kwargs = raw.kwargs
    notes = list(raw.notes)
    names = list(raw.names)
    action_value = kwargs.get("action", "store")
    nargs_value = kwargs.get("nargs")
    if isinstance(action_value, str):
        action = action_value
    elif isinstance(action_value, Symbol) and action_value.text in _ACTION_NAMES:
        action = _ACTION_NAMES[action_value.text]
    elif isinstance(action_value, ClassRef):
        action = action_value.node.name
        if nargs_value is None:
            nargs_value = interp.action_init_default(action_value, "nargs")
        if "default" not in kwargs:
            implied = interp.action_init_default(action_value, "default")
            if implied is not None and implied is not UNKNOWN:
                kwargs = {**kwargs, "default": implied}
        if action.startswith("Deprecated"):
            new_flag = kwargs.get("new_flag")
            if isinstance(new_flag, str) and raw.owner == "sglang" and "sglang" in raw.parser_key:
                new_flag = re.sub(r"(?<![\w-])--(?!sglang-)", "--sglang-", new_flag)
            notes.append(f"deprecated upstream; use {new_flag} instead" if isinstance(new_flag, str)
                         else "deprecated upstream; accepted and ignored with a warning")
    else:
        action = _value_text(action_value)
        notes.append(f"custom action {action} could not be read")
    if action == "boolean_optional":
        names = names + [f"--no-{n[2:]}" for n in names if n.startswith("--")]

    type_value = kwargs.get("type")
    if action in {"store_true", "store_false", "boolean_optional"} or action.startswith("DeprecatedStoreTrue"):
        type_name: str | None = "bool"
    elif action in {"count"}:
        type_name = "int"
    elif action in {"help", "version", "store_const", "append_const"} or action.startswith("DeprecatedStoreConst"):
        type_name = None
    elif type_value is None:
        type_name = "str" if nargs_value != 0 else None
    else:
        type_name = _value_text(type_value)

    default_repr: str | None = None
    if "default" in kwargs:
        raw_default = kwargs["default"]
    elif action == "store_true":
        raw_default = False
    elif action == "store_false":
        raw_default = True
    else:
        raw_default = None
    try:
        default = to_json_value(raw_default)
        if isinstance(raw_default, EnumMember):
            default_repr = _value_text(raw_default)
    except Unresolved:
        default = None
        default_repr = _value_text(raw_default)
    if type_name == "json.loads" and isinstance(default, str) and action == "store":
        try:
            default, default_repr = json.loads(default), repr(default)
            notes.append("argparse passes a string default through type, so the value is the parsed JSON")
        except ValueError:
            pass
    if isinstance(raw_default, Symbol) and raw_default.text.endswith("SUPPRESS"):
        notes.append("argparse.SUPPRESS: the attribute is absent unless the flag is given")

    choices_value = kwargs.get("choices")
    choices: list | None = None
    if choices_value is not None:
        try:
            converted = to_json_value(choices_value)
            choices = converted if isinstance(converted, list) else None
        except Unresolved:
            choices = None
        if choices is None:
            notes.append(f"choices are computed at run time ({_value_text(choices_value)})")

    nargs: str | int | None
    if nargs_value is None or isinstance(nargs_value, (str, int)):
        nargs = nargs_value
    else:
        nargs = _value_text(nargs_value)
    required = kwargs.get("required") is True
    dest = _dest_of(raw.names, kwargs)

    reset_source = raw.reset_source
    upstream_default: Any = None
    upstream_known = False
    if reset_source is not None:
        upstream = raw.upstream_default
        if upstream is _IMPLICIT:
            upstream = {"store_true": False, "store_false": True}.get(action)
        try:
            upstream_default = to_json_value(upstream)
            upstream_known = True
        except Unresolved:
            upstream_default = None
        shown = repr(upstream_default) if upstream_known else _value_text(upstream)
        notes.append(f"slime sets the default ({reset_source}); the {raw.owner} default is {shown}")

    description = DESCRIPTIONS.get(names[0]) if raw.parser_key in {"main", "pre", "sglang"} else None
    return FlagSpec(option_strings=names, dest=dest, owner=raw.owner, type=type_name, default=default,
                    default_repr=default_repr, choices=choices, action=action, nargs=nargs, required=required,
                    source=raw.source, reset_source=reset_source, patched=raw.patched, description=description,
                    parsers=[raw.parser_key], entry_point=raw.entry_point, notes=_dedupe(notes),
                    upstream_default=upstream_default, upstream_default_known=upstream_known)


def _dedupe(items: list[str]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def merge_specs(specs: list[FlagSpec]) -> list[FlagSpec]:
    """One entry per option: a flag several parsers register keeps the definition whose value slime uses."""
    groups: list[list[FlagSpec]] = []
    index: dict[str, int] = {}
    for spec in specs:
        hits = sorted({index[o] for o in spec.option_strings if o in index})
        if not hits:
            groups.append([spec])
            gid = len(groups) - 1
        else:
            gid = hits[0]
            for other in hits[1:]:
                groups[gid].extend(groups[other])
                groups[other] = []
            groups[gid].append(spec)
        for member in groups[gid]:
            for o in member.option_strings:
                index[o] = gid
    merged: list[FlagSpec] = []
    for group in groups:
        if not group:
            continue
        group.sort(key=lambda s: PARSER_PRECEDENCE.index(s.parsers[0]) if s.parsers[0] in PARSER_PRECEDENCE else 99)
        winner = group[0].model_copy(deep=True)
        for other in group[1:]:
            for p in other.parsers:
                if p not in winner.parsers:
                    winner.parsers.append(p)
            if other.parsers[0] == winner.parsers[0]:
                winner.notes.append(f"registered twice in the {other.parsers[0]} parser ({other.source} and "
                                    f"{winner.source}); argparse rejects the duplicate at start-up")
            else:
                winner.notes.append(f"also registered by the {other.parsers[0]} parser ({other.source}, default "
                                    f"{other.default!r}); the {winner.parsers[0]} parser's value is the one slime keeps")
                for o in other.option_strings:
                    if o not in winner.option_strings:
                        winner.option_strings.append(o)
        merged.append(winner)
    return sorted(merged, key=lambda s: s.option_strings[0])
