"""The static interpreter that walks slime's, Megatron's and SGLang's argparse-building functions."""

from __future__ import annotations

from core.launch.catalog_build.argparse_model import ArgparseCalls
from core.launch.catalog_build.evaluator import Evaluator
from core.launch.catalog_build.upstream import UpstreamFlags


class Interpreter(ArgparseCalls, UpstreamFlags, Evaluator):
    """Walks argparse-building functions statement by statement, recording flags on ParserModels."""
