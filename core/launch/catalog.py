"""The argument catalog: every command-line flag slime accepts at the pinned commits, and how it is parsed.

slime reads its command line with several argparse parsers, all of which ignore unknown arguments, so a
misspelt flag is dropped without a word. The catalog (knowledge/catalog/arguments.json, written by
tools/build_catalog.py from the upstream sources) lets a checker tell a real flag from a typo, name who owns
it, and say which prefixes argparse would silently expand. This module only loads and indexes it.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field, PrivateAttr

from core.resources import knowledge_path

CATALOG_PATH = knowledge_path("catalog", "arguments.json")

OWNERS = ("slime", "megatron", "sglang", "router")
UNKNOWN_OWNER = "unknown"

# argparse actions that consume no value after the flag.
VALUELESS_ACTIONS = frozenset(
    {"store_true", "store_false", "store_const", "append_const", "count", "help", "version", "boolean_optional"}
)


class CatalogError(ValueError):
    """The catalog file is missing or not a valid catalog; the message says which."""


class FlagSpec(BaseModel):
    """One argparse argument as registered upstream (after slime's renaming, skipping and default resets)."""

    option_strings: list[str]
    dest: str
    owner: str = Field(description="slime | megatron | sglang | router")
    type: str | None = Field(default=None, description="int, float, str, bool, or the name of a parser function")
    default: Any = None
    default_repr: str | None = Field(default=None, description="source text of a default that is not a literal")
    choices: list | None = None
    action: str = "store"
    nargs: str | int | None = None
    required: bool = False
    source: str = Field(description="path:line@pin of the add_argument call (or dataclass field)")
    reset_source: str | None = Field(default=None, description="where slime changed the default, if it did")
    patched: bool = Field(default=False, description="added by one of slime's Docker patches")
    description: str | None = None
    parsers: list[str] = Field(default_factory=lambda: ["main"], description="keys of Catalog.parsers that read it")
    entry_point: str | None = Field(default=None, description="set when only one launcher registers the flag")
    notes: list[str] = Field(default_factory=list)
    upstream_default: Any = Field(default=None, description="the owner's own default, when slime changed it")
    upstream_default_known: bool = False

    @property
    def takes_value(self) -> bool:
        """Whether argparse consumes the next token(s) as this flag's value."""
        return self.action not in VALUELESS_ACTIONS and self.nargs != 0

    @property
    def primary(self) -> str:
        """The first option string, the name the catalog is sorted by."""
        return self.option_strings[0]


class ParserSemantics(BaseModel):
    """How one of slime's argparse parsers treats what it does not know."""

    allow_abbrev: bool
    ignore_unknown: bool
    source: str
    note: str | None = None


class SkippedFlag(BaseModel):
    """An SGLang server flag slime deliberately does not register under --sglang- (it sets the value itself)."""

    option_strings: list[str] = Field(description="the --sglang- spellings a user might try")
    upstream_option_strings: list[str]
    dest: str
    source: str


class CatalogPiece(BaseModel):
    """One piece of slime's argument parsing as the builder met it in a checkout: read, absent at that commit,
    or not understood (and then what that means for the check)."""

    name: str = Field(description="e.g. 'pre-parser', 'SGLang flags', 'FSDP backend flags'")
    status: Literal["read", "absent", "not understood"]
    detail: str = Field(description="where it was found (file and function), or what went wrong")
    effect: str | None = Field(default=None, description="what a missing or unread piece means for the check")


class LayerVersion(BaseModel):
    """Which version of one layer (slime, Megatron, SGLang) a catalog's flags were read from, and where from."""

    layer: Literal["slime", "megatron", "sglang"]
    version: str = Field(description="commit (short) or release the flags come from; 'unknown' when not known")
    origin: str = Field(description="where: the bundled pin, the user's checkout, an installed package...")
    date: str | None = Field(default=None, description="commit date (YYYY-MM-DD), when known")
    runs: str | None = Field(default=None, description="what the user's environment runs instead, when it says")
    runs_origin: str | None = Field(default=None, description="where that was read (a docker file of the checkout)")

    @property
    def differs(self) -> bool:
        """Whether the environment runs another version than the one the flags were read from."""
        return self.runs is not None and not same_version(self.runs, self.version)

    def describe(self) -> str:
        """One line for people: `Megatron 1dcf0daf (bundled pin); your image runs core_v0.14.0 (docker/Dockerfile)`."""
        name = {"slime": "slime", "megatron": "Megatron", "sglang": "SGLang"}[self.layer]
        text = f"{name} {self.version}" + (f" of {self.date}" if self.date else "") + f" ({self.origin})"
        if self.differs:
            text += f"; your environment runs {self.runs} ({self.runs_origin or 'the checkout'})"
        return text


def same_version(a: str, b: str) -> bool:
    """Whether two version texts name the same release or commit (v-prefix, case and commit length aside)."""
    x, y = a.strip().lower().removeprefix("v"), b.strip().lower().removeprefix("v")
    if not x or not y:
        return False
    if x == y:
        return True
    hexy = all(c in "0123456789abcdef" for c in x + y)
    if hexy and min(len(x), len(y)) >= 7:
        return x.startswith(y) or y.startswith(x)
    # an image tag with a suffix (v0.5.15.post1-cu129) names the release before the suffix
    return x.split("-")[0] == y.split("-")[0] and not hexy and "." in x.split("-")[0]


class Catalog(BaseModel):
    pins: dict[str, str]
    parsers: dict[str, ParserSemantics]
    flags: list[FlagSpec]
    skipped: list[SkippedFlag] = Field(default_factory=list)
    build_notes: list[str] = Field(default_factory=list)
    pieces: list[CatalogPiece] = Field(default_factory=list, description="how a checkout's parser was read")
    versions: list[LayerVersion] = Field(default_factory=list, description="empty for the bundled catalog")
    function_flag_dests: list[str] = Field(default_factory=list, description=(
        "flags naming a function whose add_arguments may add flags at start-up (read per script)"))

    def not_understood(self) -> list[CatalogPiece]:
        return [p for p in self.pieces if p.status == "not understood"]

    def version_of(self, layer: str) -> LayerVersion | None:
        return next((v for v in self.versions if v.layer == layer), None)

    _by_option: dict[str, FlagSpec] = PrivateAttr(default_factory=dict)
    _options_by_parser: dict[str, list[tuple[str, FlagSpec]]] = PrivateAttr(default_factory=dict)
    _all_options: list[str] = PrivateAttr(default_factory=list)

    def model_post_init(self, __context: Any) -> None:
        self.reindex()

    def reindex(self) -> None:
        """Rebuild the lookup indexes (call after editing `flags` in place)."""
        by_option: dict[str, FlagSpec] = {}
        per_parser: dict[str, list[tuple[str, FlagSpec]]] = {}
        for flag in self.flags:
            for opt in flag.option_strings:
                by_option.setdefault(opt, flag)
                for parser in flag.parsers:
                    per_parser.setdefault(parser, []).append((opt, flag))
        self._by_option = by_option
        self._options_by_parser = {k: sorted(v, key=lambda t: t[0]) for k, v in per_parser.items()}
        self._all_options = sorted(by_option)

    def lookup(self, option: str) -> FlagSpec | None:
        """The flag with exactly this option string (a trailing `=value` is ignored), or None."""
        return self._by_option.get(_option_name(option))

    def lookup_skipped(self, option: str) -> SkippedFlag | None:
        """The SGLang flag slime skips that this --sglang- spelling would have named, if any."""
        name = _option_name(option)
        return next((s for s in self.skipped if name in s.option_strings), None)

    def abbreviation_matches(self, option: str) -> dict[str, list[FlagSpec]]:
        """Per abbreviating parser, the flags argparse would consider for `option` as a prefix.

        A parser that knows `option` exactly, or that does not allow abbreviations, contributes nothing.
        One match in a parser means argparse silently expands it; several mean argparse stops with an
        'ambiguous option' error.
        """
        name = _option_name(option)
        if not name.startswith("--") or len(name) <= 2:
            return {}
        out: dict[str, list[FlagSpec]] = {}
        for parser_key, semantics in self.parsers.items():
            if not semantics.allow_abbrev:
                continue
            entries = self._options_by_parser.get(parser_key, [])
            if any(opt == name for opt, _ in entries):
                continue
            matched: list[FlagSpec] = []
            for opt, flag in entries:
                if opt.startswith(name) and flag not in matched:
                    matched.append(flag)
            if matched:
                out[parser_key] = matched
        return out

    def expand_abbreviation(self, option: str) -> list[FlagSpec]:
        """Flags argparse could take `option` to be a prefix of, among parsers that allow abbreviations."""
        seen: list[FlagSpec] = []
        for flags in self.abbreviation_matches(option).values():
            for flag in flags:
                if flag not in seen:
                    seen.append(flag)
        return seen

    def suggest(self, option: str, n: int = 3) -> list[str]:
        """Did-you-mean: the closest known option strings, best first."""
        name = _option_name(option)
        if not name:
            return []
        return difflib.get_close_matches(name, self._all_options, n=n, cutoff=0.6)

    def owner_of(self, option: str) -> str:
        """Who registers the flag: slime, megatron, sglang, router, or unknown."""
        flag = self.lookup(option)
        return flag.owner if flag else UNKNOWN_OWNER

    def flags_of(self, owner: str) -> list[FlagSpec]:
        return [f for f in self.flags if f.owner == owner]


def _option_name(option: str) -> str:
    text = (option or "").strip()
    if text.startswith("--") and "=" in text:
        return text.split("=", 1)[0]
    return text


def catalog_from_json(data: bytes | str) -> Catalog:
    """Parse a catalog document; raises CatalogError with a specific message when it is not one."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CatalogError(f"The argument catalog is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise CatalogError("The argument catalog must be a JSON object with pins, parsers and flags.")
    try:
        return Catalog.model_validate(raw)
    except ValueError as exc:
        raise CatalogError(f"The argument catalog does not have the expected shape: {exc}") from None


def catalog_to_json(catalog: Catalog, *, full: bool = False) -> bytes:
    """The catalog as deterministic, indented JSON (flags sorted by their first option string).

    The reading report (`pieces`) and `versions` describe one build from a user's checkout; they are left
    out unless `full` (the per-checkout cache keeps them), so the committed catalog does not carry them."""
    doc = catalog.model_dump(mode="json")
    if not full:
        doc.pop("pieces", None)
        doc.pop("versions", None)
        doc.pop("function_flag_dests", None)
    doc["flags"] = sorted(doc["flags"], key=lambda f: f["option_strings"][0])
    doc["skipped"] = sorted(doc["skipped"], key=lambda f: f["option_strings"][0])
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


@lru_cache(maxsize=4)
def _load_cached(path_text: str, mtime_ns: int) -> Catalog:
    return catalog_from_json(Path(path_text).read_bytes())


def load_catalog(path: Path | None = None) -> Catalog:
    """The committed catalog (or the one at `path`), read once and cached until the file changes."""
    target = Path(path) if path is not None else CATALOG_PATH
    try:
        stat = target.stat()
    except OSError as exc:
        raise CatalogError(f"No argument catalog at {target}: {exc.strerror or exc}.") from None
    return _load_cached(str(target.resolve()), stat.st_mtime_ns)
