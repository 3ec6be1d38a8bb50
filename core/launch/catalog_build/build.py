"""The builder's entry: which upstream files to read, in which order, and the catalog it returns."""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.launch.catalog import (
    Catalog,
    CatalogError,
    CatalogPiece,
    ParserSemantics,
    SkippedFlag,
    load_catalog,
)
from core.launch.catalog_build.functions import function_flag_dests
from core.launch.catalog_build.interpreter import Interpreter
from core.launch.catalog_build.sources import (
    MAX_PATCH_BYTES,
    MAX_PATCH_HUNKS,
    MAX_SOURCE_BYTES,
    FilePatch,
    PackageRoot,
    SourceFile,
    SourceTree,
    allowed_roots,
    parse_unified_diff,
    read_source_text,
)
from core.launch.catalog_build.specs import merge_specs, spec_from_raw
from core.launch.catalog_build.values import (
    BuildLimitExceeded,
    FunctionRef,
    ParserModel,
    RawFlag,
    Unresolved,
    raw_from_spec,
)
from core.pins import MEGATRON_SHORT, SGLANG_VERSION, SLIME_SHORT

LOCAL_PIN = "local"
SLIME_ARGS = "slime/utils/arguments.py"
SLIME_SGLANG_ARGS = "slime/backends/sglang_utils/arguments.py"
SLIME_MEGATRON_ARGS = "slime/backends/megatron_utils/arguments.py"
SLIME_SERVER_ARGS = "slime/backends/megatron_utils/server/arguments.py"
MEGATRON_SERVER_ENTRY = "slime/backends/megatron_utils/server/megatron_server.py"
DOCKERFILE = "docker/Dockerfile"
MAX_DOCKERFILE_BYTES = 1_000_000
MAX_TOP_LEVEL_ENTRIES = 200  # entries of a checkout looked at to find a fork's renamed package


@dataclass(frozen=True)
class Layout:
    """Where slime's parser lives in a checkout: `slime/...`, or a fork's renamed package (miles/...)."""

    package: str = "slime"

    def cite(self, rel: str) -> str:
        """A path under slime's layout (`slime/utils/arguments.py`) in this checkout's package."""
        return f"{self.package}/{rel.split('/', 1)[1]}" if self.package != "slime" else rel

    def dotted(self, rel: str) -> str:
        return self.cite(rel).removesuffix(".py").replace("/", ".")

    @property
    def provider_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((f"get_{self.package}_extra_args_provider", "get_slime_extra_args_provider")))


def package_of(checkout: Path) -> str:
    """The package holding slime's parser: `slime`, else a top-level package laid out like it (a fork such as
    miles keeps `<name>/utils/arguments.py` and `<name>/backends/`); `slime` when none is found."""
    try:
        if (checkout / SLIME_ARGS).is_file():
            return "slime"
        entries = sorted(itertools.islice(checkout.iterdir(), MAX_TOP_LEVEL_ENTRIES)) if checkout.is_dir() else []
    except OSError:
        return "slime"
    for entry in entries:
        try:
            if (entry.name.isidentifier() and not entry.is_symlink() and (entry / "utils" / "arguments.py").is_file()
                    and (entry / "backends").is_dir()):
                return entry.name
        except OSError:
            continue
    return "slime"


def _read_dockerfile_patches(slime_dir: Path, allowed: list[Path]) -> tuple[str, list[str], list[str], list[str]]:
    """PATCH_VERSION and the Megatron and SGLang patch files slime's Dockerfile applies, in order."""
    notes: list[str] = []
    dockerfile = slime_dir / DOCKERFILE
    version = "latest"
    megatron: list[str] = []
    sglang: list[str] = []
    if not dockerfile.is_file():
        notes.append(f"{DOCKERFILE} not found: no Docker patches applied")
        return version, megatron, sglang, notes
    if dockerfile.stat().st_size > MAX_DOCKERFILE_BYTES:
        notes.append(f"{DOCKERFILE} is larger than {MAX_DOCKERFILE_BYTES:,} bytes: no Docker patches applied")
        return version, megatron, sglang, notes
    text = read_source_text(dockerfile, allowed, MAX_DOCKERFILE_BYTES, DOCKERFILE)
    m = re.search(r"^ARG PATCH_VERSION=(\S+)", text, re.M)
    if m:
        version = m.group(1)
    for name in re.findall(r"git apply (megatron[\w.-]*\.patch)", text):
        if name not in megatron:
            megatron.append(name)
    loop = re.search(r"for patch in ([^;\n]{1,4000});", text)
    if loop:
        sglang = [p for p in loop.group(1).split() if p.startswith("sglang")]
    return version, megatron, sglang, notes


def _load_patches(slime_dir: Path, version: str, names: list[str], strip: str, slime_pin: str,
                  target_prefix: str, allowed: list[Path], notes: list[str] | None = None,
                  hunks_left: list[int] | None = None) -> dict[str, list[FilePatch]]:
    """The hunks of the named patch files, per target file. A patch file larger than MAX_PATCH_BYTES, or
    whose hunks would take the build past MAX_PATCH_HUNKS (`hunks_left`, shared by the calls of one build), is
    not applied, and `notes` says so."""
    notes = notes if notes is not None else []
    hunks_left = hunks_left if hunks_left is not None else [MAX_PATCH_HUNKS]
    out: dict[str, list[FilePatch]] = {}
    for name in names:
        rel = f"docker/patch/{version}/{name}"
        path = slime_dir / rel
        if not path.is_file():
            continue
        if path.stat().st_size > MAX_PATCH_BYTES:
            notes.append(f"{rel} was not applied: it is {path.stat().st_size:,} bytes, more than the "
                         f"{MAX_PATCH_BYTES:,} the static reader reads of one patch")
            continue
        text = read_source_text(path, allowed, MAX_PATCH_BYTES, rel)
        parsed = parse_unified_diff(text, rel, slime_pin)
        hunks = sum(len(p.hunks) for p in parsed.values())
        if hunks > hunks_left[0]:
            notes.append(f"{rel} was not applied: it has {hunks:,} hunks, more than the static reader applies "
                         f"in one build ({MAX_PATCH_HUNKS:,})")
            continue
        hunks_left[0] -= hunks
        for target, patch in parsed.items():
            key = target[len(strip):] if strip and target.startswith(strip) else target
            out.setdefault(f"{target_prefix}{key}", []).append(patch)
    return out


def _router_version(router_dir: Path, allowed: list[Path]) -> str:
    path = router_dir / "sglang_router" / "version.py"
    if path.is_file():
        text = read_source_text(path, allowed, MAX_SOURCE_BYTES, "sglang_router/version.py")
        m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
        if m:
            return m.group(1)
    return "unknown"


def build_catalog(slime_dir: Path, megatron_dir: Path | None = None, sglang_dir: Path | None = None,
                  router_dir: Path | None = None, *, pins: dict[str, str] | None = None,
                  committed: Catalog | None = None, allowed: list[Path] | None = None) -> Catalog:
    """Read the source trees and return the catalog of every flag slime's parsers accept.

    `sglang_dir` is an unpacked SGLang wheel (holding `sglang/`), `router_dir` an unpacked sglang-router
    wheel (holding `sglang_router/`). Parts not given are taken from the committed catalog (or
    `committed`), and the returned pins say so. `pins` overrides the pin labels used in citations.
    Every file is read only inside `allowed` (by default, core.paths.containing_roots of each directory
    given): a file that is, or sits under, a link leading elsewhere is refused, never read.

    Raises CatalogError, and nothing else, when the trees cannot be read into a catalog: a missing,
    unreadable or oversized file, Python that does not parse (a syntax error, NUL bytes), an entry
    function slime's parsers need that is not defined, or code the static reader cannot follow within
    its limits (MAX_STEPS, MAX_BUILD_SECONDS). The message names the file or function and what was wrong.
    """
    slime_dir = Path(slime_dir)
    reading = ["the source trees"]
    try:
        return _build_catalog(slime_dir, megatron_dir, sglang_dir, router_dir, pins, committed, reading, allowed)
    except CatalogError:
        raise
    except BuildLimitExceeded as exc:
        raise CatalogError(f"{slime_dir}: while reading {reading[-1]}, {exc}.") from exc
    except RecursionError as exc:
        raise CatalogError(f"{slime_dir}: while reading {reading[-1]}, the code nests calls, expressions or "
                           "names too deeply for the static reader.") from exc
    except OSError as exc:
        raise CatalogError(f"{slime_dir}: cannot read {exc.filename or 'a file'}: {exc.strerror or exc}.") from exc
    except Exception as exc:  # noqa: BLE001 - code shaped unlike upstream; the caller gets one error type
        detail = str(exc)
        detail = detail if len(detail) <= 200 else f"{detail[:200]}..."
        raise CatalogError(f"{slime_dir}: while reading {reading[-1]}, the static reader met code shaped unlike "
                           f"upstream slime ({type(exc).__name__}: {detail}).") from exc


def _build_catalog(slime_dir: Path, megatron_dir: Path | None, sglang_dir: Path | None, router_dir: Path | None,
                   pins: dict[str, str] | None, committed: Catalog | None, reading: list[str],
                   allowed: list[Path] | None) -> Catalog:
    """build_catalog's work; `reading` gets the phase in progress, for error messages."""
    lay = Layout(package_of(slime_dir))
    if not (slime_dir / lay.cite(SLIME_ARGS)).is_file():
        raise CatalogError(f"{slime_dir} does not look like a slime checkout: {SLIME_ARGS} is missing.")
    pins = dict(pins or {})
    slime_pin = pins.get("slime", LOCAL_PIN)
    fallback = committed
    if fallback is None and (megatron_dir is None or sglang_dir is None or router_dir is None):
        fallback = load_catalog()

    if allowed is None:
        allowed = allowed_roots([Path(d) for d in (slime_dir, megatron_dir, sglang_dir, router_dir) if d is not None])
    version, megatron_patches, sglang_patches, notes = _read_dockerfile_patches(slime_dir, allowed)
    patches: dict[str, list[FilePatch]] = {}
    hunks_left, patch_notes = [MAX_PATCH_HUNKS], []
    roots = [PackageRoot(lay.package, slime_dir, "", slime_pin, "slime")]
    out_pins: dict[str, str] = {"slime": pins.get("slime_label", slime_pin if slime_pin != LOCAL_PIN
                                                   else f"user checkout {slime_dir}")}
    if megatron_dir is not None:
        megatron_pin = pins.get("megatron", MEGATRON_SHORT)
        roots.append(PackageRoot("megatron", Path(megatron_dir), "", megatron_pin, "megatron"))
        patches.update(_load_patches(slime_dir, version, megatron_patches, "", slime_pin, "", allowed, patch_notes,
                                     hunks_left))
        out_pins["megatron"] = megatron_pin
    else:
        out_pins["megatron"] = f"{fallback.pins.get('megatron', MEGATRON_SHORT)} (from the committed catalog)"
    if sglang_dir is not None:
        sglang_pin = pins.get("sglang", SGLANG_VERSION)
        roots.append(PackageRoot("sglang", Path(sglang_dir), "python/", sglang_pin, "sglang"))
        for key, plist in _load_patches(slime_dir, version, sglang_patches, "", slime_pin, "", allowed, patch_notes,
                                        hunks_left).items():
            patches.setdefault(key, []).extend(plist)
        out_pins["sglang"] = sglang_pin
    else:
        out_pins["sglang"] = f"{fallback.pins.get('sglang', SGLANG_VERSION)} (from the committed catalog)"
    if router_dir is not None:
        router_version = _router_version(Path(router_dir), allowed)
        router_pin = pins.get("sglang_router", router_version)
        roots.append(PackageRoot("sglang_router", Path(router_dir), "", f"sglang-router-{router_pin}", "router"))
        out_pins["sglang_router"] = router_pin
    else:
        out_pins["sglang_router"] = f"{fallback.pins.get('sglang_router', '?')} (from the committed catalog)"
    out_pins["docker_patch_version"] = version

    tree = SourceTree(roots, patches, allowed)
    tree.patch_notes.extend(patch_notes)
    interp = Interpreter(tree, fallback)
    interp.home_package = lay.package
    slime_args = tree.module(lay.dotted(SLIME_ARGS))
    if slime_args is None:
        raise CatalogError(f"{slime_dir}: {lay.cite(SLIME_ARGS)} could not be read.")
    pieces: list[CatalogPiece] = []
    reader = _PieceReader(interp, pieces, reading, lay)
    sglang_args = reader.module(lay.dotted(SLIME_SGLANG_ARGS), lay.cite(SLIME_SGLANG_ARGS), "SGLang flags")
    megatron_entry = reader.module(lay.dotted(SLIME_MEGATRON_ARGS), lay.cite(SLIME_MEGATRON_ARGS), "Megatron flags")

    # Phase 0: slime's pre-parser, in whichever shape this commit has.
    _read_pre_parser(reader, interp, slime_args)
    # Phase 1: the SGLang parser (and its small helper parser), when this commit has a separate one.
    sglang_fn = _optional_function(interp, sglang_args, "sglang_parse_args")
    if sglang_fn is not None:
        reader.run("SGLang flags", f"{lay.cite(SLIME_SGLANG_ARGS)} (sglang_parse_args)",
                   lambda: interp.call_function(sglang_fn, [], {}),
                   "SGLang flags are taken from the bundled catalog, so a --sglang- flag your SGLang lacks or adds "
                   "may be judged wrongly")
    # Phase 2: Megatron's parser with slime's extra arguments, as train.py builds it (essential: no fallback).
    provider_name = next((n for n in lay.provider_names if _optional_function(interp, slime_args, n) is not None),
                         lay.provider_names[-1])
    reading.append(f"{lay.cite(SLIME_ARGS)} ({provider_name})")
    provider = interp.call_function(_function(interp, slime_args, provider_name), [None], {})
    entry_name = _megatron_entry_name(interp, megatron_entry)
    main_parser = _run_main(interp, megatron_entry, provider, fallback, megatron_dir is not None, entry_name)
    pieces.append(CatalogPiece(name="slime's own flags", status="read",
                               detail=f"{lay.cite(SLIME_ARGS)}: {provider_name}"))
    pieces.append(_megatron_piece(megatron_dir is not None, entry_name, fallback, lay))

    parsers = {p.key: p for p in interp.parsers if p.key in {"pre", "sglang", "sglang_tp", "main"}}
    if sglang_fn is None:
        pieces.append(_inline_sglang_piece(main_parser, lay))
    function_dests = function_flag_dests(slime_args)
    if function_dests:
        shown = ", ".join(f"--{d.replace('_', '-')}" for d in function_dests)
        pieces.append(CatalogPiece(name="flags of the functions a script names", status="read", detail=(
            f"{lay.cite(SLIME_ARGS)}: the functions named by {shown} may add flags of their own (add_arguments); "
            "they are read from the checkout for each script that names them")))
    # Phase 3: the FSDP backend's own parser (dataclass-declared flags), at commits that have one.
    fsdp = _read_fsdp(reader, interp, lay)
    if fsdp is not None:
        parsers["fsdp"] = fsdp
    raw_flags = [f for p in parsers.values() for f in p.flags]
    raw_flags.extend(_missing_sglang(raw_flags, fallback, pieces))

    # The Megatron teacher server adds its own flags through add_custom_arguments.
    server_module = tree.module(lay.dotted(SLIME_SERVER_ARGS))
    if server_module is not None and main_parser is not None:
        reading.append(lay.cite(SLIME_SERVER_ARGS))
        known = {n for f in main_parser.flags for n in f.names}
        interp.entry_point = lay.cite(MEGATRON_SERVER_ENTRY)
        interp.parsers = []
        server_fn = _function(interp, server_module, "add_megatron_server_arguments")
        provider2 = interp.call_function(_function(interp, slime_args, provider_name), [server_fn], {})
        server_parser = _run_main(interp, megatron_entry, provider2, fallback, megatron_dir is not None, entry_name)
        if server_parser is not None:
            raw_flags.extend(f for f in server_parser.flags if not (set(f.names) & known))
        interp.entry_point = None

    reading.append("the recorded flags")
    specs = merge_specs([spec_from_raw(r, interp) for r in raw_flags])
    skipped = _skipped_flags(parsers.get("sglang") or main_parser)
    if not skipped and sglang_fn is None and fallback is not None:
        skipped = list(fallback.skipped)
    semantics = _semantics(parsers, slime_args)
    notes.extend(tree.patch_notes)
    notes.extend(interp.notes)
    if tree.patch_notes:
        shown = "; ".join(tree.patch_notes[:2]) + (f" and {len(tree.patch_notes) - 2} more" if len(tree.patch_notes) > 2
                                                   else "")
        pieces.append(CatalogPiece(name="Docker patches", status="not understood", detail=shown, effect=(
            "the checkout's patches were not applied to the Megatron/SGLang source given, so flags those hunks add "
            "are not known (a patch may be too large to apply, or not fit: the source may already be patched, or be "
            "another version than the image's)")))
    catalog = Catalog(pins=out_pins, parsers=semantics, flags=specs, skipped=skipped, build_notes=notes,
                      pieces=pieces, function_flag_dests=function_dests)
    return catalog


class _PieceReader:
    """Reads one optional piece of a checkout's parser; a piece that fails is reported, the others still read."""

    def __init__(self, interp: Interpreter, pieces: list[CatalogPiece], reading: list[str],
                 layout: Layout = Layout()) -> None:  # noqa: B008 - frozen
        self.interp, self.pieces, self.reading, self.layout = interp, pieces, reading, layout

    def module(self, dotted: str, cite: str, piece: str) -> SourceFile | None:
        try:
            return self.interp.tree.module(dotted)
        except CatalogError as exc:
            self.pieces.append(CatalogPiece(name=piece, status="not understood", detail=str(exc),
                                            effect=f"{cite} was not read; {piece} come from the bundled catalog"))
            return None

    def run(self, name: str, where: str, action: Any, effect: str) -> Any:
        """Run one piece; when it fails, or records a flag without a name, its parsers are dropped and the
        piece is reported as not understood."""
        self.reading.append(where)
        before = len(self.interp.parsers)
        try:
            result = action()
            nameless = next((f for p in self.interp.parsers[before:] for f in p.flags if not f.names), None)
            if nameless is not None:
                raise ValueError(f"a flag is registered without a name ({nameless.source})")
        except BuildLimitExceeded:
            raise
        except (CatalogError, Unresolved, RecursionError, ValueError, TypeError, AttributeError, LookupError) as exc:
            del self.interp.parsers[before:]
            detail = str(exc) or type(exc).__name__
            self.pieces.append(CatalogPiece(name=name, status="not understood",
                                            detail=f"{where}: {detail[:300]}", effect=effect))
            return None
        self.pieces.append(CatalogPiece(name=name, status="read", detail=where))
        return result

    def created_since(self, before: int) -> list[ParserModel]:
        return self.interp.parsers[before:]


def _optional_function(interp: Interpreter, module: SourceFile | None, name: str) -> FunctionRef | None:
    """The function `name` of `module` when it defines (or imports) one, else None."""
    if module is None:
        return None
    try:
        value = interp.module_lookup(module, name)
    except (Unresolved, CatalogError):
        return None
    return value if isinstance(value, FunctionRef) else None


def _read_pre_parser(reader: _PieceReader, interp: Interpreter, slime_args: SourceFile) -> None:
    """slime's pre-parse step: `_pre_parse_mode` (recent), `parse_args_train_backend` (a throwaway parser of
    slime's own flags that only reads --train-backend), or none (the backend came from SLIME_BACKEND)."""
    args_path = reader.layout.cite(SLIME_ARGS)
    pre = _optional_function(interp, slime_args, "_pre_parse_mode")
    if pre is not None:
        before = len(interp.parsers)
        reader.run("pre-parser", f"{args_path} (_pre_parse_mode)", lambda: interp.call_function(pre, [], {}),
                   "the mode flags it reads (--train-backend, --debug-*) are still known from slime's own flags")
        for parser in reader.created_since(before)[:1]:  # the parser it builds, whatever its variable is called
            parser.key = "pre"
            for flag in parser.flags:
                flag.parser_key = "pre"
        return
    if _optional_function(interp, slime_args, "parse_args_train_backend") is not None:
        reader.pieces.append(CatalogPiece(name="pre-parser", status="read", detail=(
            f"{args_path} (parse_args_train_backend): a throwaway parser of slime's own flags reads "
            "--train-backend first; it adds no flag of its own")))
        return
    env_note = " (this commit picks the training backend from the SLIME_BACKEND environment variable)" \
        if any(isinstance(n, ast.Constant) and n.value == "SLIME_BACKEND" for n in ast.walk(slime_args.tree)) else ""
    reader.pieces.append(CatalogPiece(name="pre-parser", status="absent",
                                      detail=f"no pre-parse step in {args_path} at this commit{env_note}"))


def _megatron_entry_name(interp: Interpreter, module: SourceFile | None) -> str:
    """slime's wrapper around Megatron's parse_args: `megatron_parse_args` (recent) or the re-exported `parse_args`."""
    for name in ("megatron_parse_args", "parse_args"):
        if _optional_function(interp, module, name) is not None:
            return name
        if module is not None and any(isinstance(stmt, ast.ImportFrom) and any((a.asname or a.name) == name
                                                                                for a in stmt.names)
                                      for stmt in module.tree.body):
            return name
    return "megatron_parse_args"


def _megatron_piece(have_megatron: bool, entry_name: str, fallback: Catalog | None, lay: Layout) -> CatalogPiece:
    if have_megatron:
        return CatalogPiece(name="Megatron flags", status="read",
                            detail=f"Megatron's parse_args through {lay.cite(SLIME_MEGATRON_ARGS)} ({entry_name})")
    pin = fallback.pins.get("megatron", MEGATRON_SHORT) if fallback is not None else MEGATRON_SHORT
    return CatalogPiece(name="Megatron flags", status="read",
                        detail=f"from the bundled catalog (Megatron {pin.split(' ')[0]}); no Megatron source given")


def _inline_sglang_piece(main_parser: ParserModel | None, lay: Layout) -> CatalogPiece:
    count = sum(1 for f in (main_parser.flags if main_parser else []) if f.owner == "sglang"
                or any(n.startswith("--sglang-") for n in f.names))
    if count:
        return CatalogPiece(name="SGLang flags", status="read", detail=(
            f"{lay.cite(SLIME_SGLANG_ARGS)} (add_sglang_arguments): this commit registers the --sglang- flags on the main "
            "parser, with no separate SGLang parser"))
    return CatalogPiece(name="SGLang flags", status="not understood", detail=(
        f"neither sglang_parse_args nor --sglang- flags on the main parser were found ({lay.cite(SLIME_SGLANG_ARGS)})"),
        effect="SGLang flags are taken from the bundled catalog")


def _missing_sglang(raw_flags: list[RawFlag], fallback: Catalog | None, pieces: list[CatalogPiece]) -> list[RawFlag]:
    """The bundled catalog's SGLang flags, when no SGLang flag could be read from the checkout."""
    if fallback is None or any(f.owner == "sglang" for f in raw_flags):
        return []
    if not any(p.name == "SGLang flags" and p.status == "not understood" for p in pieces):
        return []
    return [raw_from_spec(s, "sglang") for s in fallback.flags if s.owner in {"sglang", "router"}
            and "sglang" in s.parsers]


_FSDP_ARGS = "slime/backends/fsdp_utils/arguments.py"


def _read_fsdp(reader: _PieceReader, interp: Interpreter, lay: Layout) -> ParserModel | None:
    """The FSDP backend's parser (slime/backends/fsdp_utils/arguments.py at commits that had the backend)."""
    fsdp_args = lay.cite(_FSDP_ARGS)
    module = reader.module(lay.dotted(_FSDP_ARGS), fsdp_args, "FSDP backend flags")
    if module is None:
        return None
    fn = next((f for f in (_optional_function(interp, module, n) for n in ("_parse_fsdp_cli", "parse_fsdp_cli"))
               if f is not None), None)
    if fn is None:
        reader.pieces.append(CatalogPiece(name="FSDP backend flags", status="not understood", detail=(
            f"{fsdp_args} has no parse_fsdp_cli function"), effect="flags only the FSDP backend reads may be "
            "reported as unknown"))
        return None
    before = len(interp.parsers)
    reader.run("FSDP backend flags", f"{fsdp_args} ({fn.node.name})", lambda: interp.call_function(fn, [None], {}),
               "flags only the FSDP backend reads may be reported as unknown")
    created = [p for p in interp.parsers[before:] if p.key == "fsdp"]
    return created[0] if created else None


def _function(interp: Interpreter, module: SourceFile | None, name: str) -> FunctionRef:
    """The function `name` of `module`; CatalogError when the module or the function is missing."""
    if module is None:
        raise CatalogError(f"cannot find the module that defines {name}")
    try:
        value = interp.module_lookup(module, name)
    except Unresolved:
        value = None
    if not isinstance(value, FunctionRef):
        raise CatalogError(f"{module.cite_path} does not define a function {name}, which slime's parsers need")
    return value


def _run_main(interp: Interpreter, megatron_entry: SourceFile | None, provider: Any, fallback: Catalog | None,
              have_megatron: bool, entry_name: str = "megatron_parse_args") -> ParserModel | None:
    """Build the main parser: Megatron's parse_args through slime's wrapper (`entry_name`), or a seeded copy."""
    before = len(interp.parsers)
    if have_megatron and megatron_entry is not None:
        interp.call_function(_function(interp, megatron_entry, entry_name), [provider], {})
        created = [p for p in interp.parsers[before:] if p.key == "main"]
        return created[0] if created else None
    if fallback is None or "main" not in fallback.parsers:
        return None
    semantics = fallback.parsers["main"]
    parser = ParserModel(key="main", source=semantics.source, allow_abbrev=semantics.allow_abbrev,
                         ignore_unknown=semantics.ignore_unknown, parse_source=semantics.source)
    parser.flags = [raw_from_spec(s, "main") for s in fallback.flags if s.owner == "megatron" and "main" in s.parsers]
    interp.parsers.append(parser)
    if isinstance(provider, FunctionRef):
        interp.call_function(provider, [parser], {})
    return parser


def _skipped_flags(parser: ParserModel | None) -> list[SkippedFlag]:
    if parser is None:
        return []
    out = []
    for names, dest, source, prefixed in parser.skipped:
        renamed = [f"--sglang-{n.lstrip('-')}" for n in names if n.startswith("-")] or [prefixed]
        out.append(SkippedFlag(option_strings=renamed, upstream_option_strings=list(names), dest=dest,
                               source=source))
    return sorted(out, key=lambda s: s.option_strings[0])


_PARSER_NOTES = {
    "pre": "slime's pre-parser reads a few mode flags (--train-backend, --debug-*) before anything else.",
    "sglang": "Skipped entirely when --debug-train-only or --load-debug-rollout-data is given; its values are "
              "copied over the main parser's. Abbreviations are on: a unique prefix of one of its flags is taken "
              "as that flag without a word, and a prefix shared by several of them stops slime with an "
              "'ambiguous option' error.",
    "sglang_tp": "A throwaway parser inside sglang_parse_args that only computes the default SGLang TP size; "
                 "its values are not kept.",
    "main": "Megatron's parser plus slime's own flags; --sglang-* and pre-parser flags are unknown here and "
            "dropped silently.",
}


def _semantics(parsers: dict[str, ParserModel], slime_args: SourceFile) -> dict[str, ParserSemantics]:
    out: dict[str, ParserSemantics] = {}
    for key, parser in sorted(parsers.items()):
        source = parser.source if parser.parse_source is None else f"{parser.source}; {parser.parse_source}"
        out[key] = ParserSemantics(allow_abbrev=parser.allow_abbrev, ignore_unknown=parser.ignore_unknown,
                                   source=source, note=_PARSER_NOTES.get(key))
    return out


def default_pins() -> dict[str, str]:
    return {"slime": SLIME_SHORT, "megatron": MEGATRON_SHORT, "sglang": SGLANG_VERSION}
