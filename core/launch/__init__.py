"""Launch-script checking: the static bash reader (`script`), the argument catalog (`catalog`, and its
builder `catalog_build`, which reads slime, Megatron-LM and SGLang sources with `ast`), the rules
(`rules`, one module per family), the public entry (`check`) that runs them on a launch before any GPU
is used, and the reporters (`report`: the typed summary, the text and JSON the CLI and the page show).

May import: the shared vocabulary (core.findings, core.pins, core.paths, core.model_scripts, core.batch)
and the roots of other capabilities (core.memory for profile limits).

The names below are the package's public entry; they load on first use, so importing the bash reader
alone never loads the rules and their catalog.
"""

from __future__ import annotations

from core.exports import lazy_exports

_EXPORTS = {
    "CATALOG_PATH": "core.launch.catalog",
    "Catalog": "core.launch.catalog",
    "CatalogError": "core.launch.catalog",
    "FlagSpec": "core.launch.catalog",
    "OWNERS": "core.launch.catalog",
    "load_catalog": "core.launch.catalog",
    "CheckOptions": "core.launch.check",
    "CheckReport": "core.launch.check",
    "RULES": "core.launch.check",
    "catalog_for": "core.launch.check",
    "check_arg_list": "core.launch.check",
    "check_launch_script": "core.launch.check",
    "check_script_bytes": "core.launch.check",
    "list_rules": "core.launch.check",
    "JSON_FIELDS": "core.launch.report",
    "ReportSummary": "core.launch.report",
    "render_report_text": "core.launch.report",
    "render_rules": "core.launch.report",
    "report_json": "core.launch.report",
    "rules_json": "core.launch.report",
    "MAX_SCRIPT_CHARS": "core.launch.script",
    "SourceError": "core.launch.versions",
    "UserSources": "core.launch.versions",
    "checkout_catalog": "core.launch.versions",
    "checkout_model_scripts": "core.launch.versions",
    "megatron_root": "core.launch.versions",
    "sglang_root": "core.launch.versions",
    "slime_problem": "core.launch.versions",
    "sources_from_env": "core.launch.versions",
    "versions_line": "core.launch.versions",
    "versions_of": "core.launch.versions",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
