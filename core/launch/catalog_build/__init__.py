"""Build the argument catalog by reading slime, Megatron-LM, SGLang and sglang-router sources with `ast`.

Nothing upstream is imported or run. A small interpreter walks the functions slime calls to build its
parsers (Megatron's `parse_args`, slime's extra-args provider, `sglang_parse_args`, `_pre_parse_mode`) and
records every `add_argument`, following the helpers they use: slime's `reset_arg` and `--sglang-` renaming
wrapper, Megatron's `ArgumentGroupFactory` (flags generated from config dataclasses), SGLang's
`add_cli_args_from_dataclass` (flags from `Annotated` fields), argparse `set_defaults`, and the unified
diffs slime's Dockerfile applies to Megatron and SGLang. What cannot be evaluated statically is kept as
source text (`default_repr`) or a note, never guessed.

Modules, in the order a build uses them: `sources` (files and Docker patches), `values` (what an expression
evaluates to, and the limits), `evaluator` (expressions, calls, statements), `argparse_model` (parsers and
flags), `upstream` (flags generated from Megatron and SGLang dataclasses), `interpreter` (the three joined),
`specs` (recorded flags to catalog entries), `build` (the entry, `build_catalog`).
"""

from core.launch.catalog_build.build import (
    DOCKERFILE,
    LOCAL_PIN,
    MAX_DOCKERFILE_BYTES,
    SLIME_ARGS,
    build_catalog,
    default_pins,
)
from core.launch.catalog_build.descriptions import DESCRIPTIONS
from core.launch.catalog_build.evaluator import PARSER_KEYS
from core.launch.catalog_build.interpreter import Interpreter
from core.launch.catalog_build.sources import (
    MAX_SOURCE_BYTES,
    MAX_TREE_SOURCE_BYTES,
    FilePatch,
    SourceFile,
    SourceTree,
    apply_patch,
    parse_unified_diff,
)
from core.launch.catalog_build.specs import PARSER_PRECEDENCE, merge_specs, spec_from_raw, to_json_value
from core.launch.catalog_build.values import (
    MAX_BUILD_SECONDS,
    MAX_FORMAT_WIDTH,
    MAX_INT_BITS,
    MAX_STEPS,
    MAX_VALUE_SIZE,
    value_size,
)

__all__ = [
    "DESCRIPTIONS", "DOCKERFILE", "LOCAL_PIN", "MAX_BUILD_SECONDS", "MAX_DOCKERFILE_BYTES", "MAX_FORMAT_WIDTH",
    "MAX_INT_BITS", "MAX_SOURCE_BYTES", "MAX_STEPS", "MAX_TREE_SOURCE_BYTES", "MAX_VALUE_SIZE", "PARSER_KEYS",
    "PARSER_PRECEDENCE", "SLIME_ARGS", "FilePatch", "Interpreter", "SourceFile", "SourceTree", "apply_patch",
    "build_catalog", "default_pins", "merge_specs", "parse_unified_diff", "spec_from_raw", "to_json_value",
    "value_size",
]
