"""Launch-script checking: the static bash reader (`script`), the argument catalog (`catalog`, and its
builder `catalog_build`, which reads slime, Megatron-LM and SGLang sources with `ast`), the rules
(`rules`, one module per family) and the public entry (`check`) that runs them on a launch before any GPU
is used.

May import: the shared vocabulary (core.findings, core.pins, core.paths, core.model_scripts, core.batch)
and the roots of other capabilities (core.memory for profile limits).
"""
