"""Launch-script checking: the static bash reader (`script`), the argument catalog (`catalog`, and its
builder `catalog_build`, which reads slime, Megatron-LM and SGLang sources with `ast`), and the rules
(`check`) that judge a launch before any GPU is used.

May import: the shared vocabulary (core.findings, core.pins, core.paths, core.model_scripts, core.batch)
and the roots of other capabilities (core.memory for profile limits).
"""

_EXPORTS = {"CheckOptions": "core.launch.check", "CheckReport": "core.launch.check",
            "check_arg_list": "core.launch.check", "load_catalog": "core.launch.catalog"}


def __getattr__(name: str):
    """The names other capabilities use, imported on first use (the checker loads its catalog lazily)."""
    import importlib

    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'core.launch' has no attribute {name!r}")
