"""Drafted outputs for review, never run: launch scripts for GRPO and async training (`launch`), the
multi-turn generate-function checklist (`agent_check`), model script and checkpoint sourcing
(`model_config`), and when an alternative framework fits better (`alternatives`).

May import: the shared vocabulary and the roots of core.launch, core.data and core.memory.

The names below are the package's public face for the front-ends; they load on first use. The knowledge
card each part cites is `AGENT_CHECK_CARD`, `ALTERNATIVES_CARD`, `MODEL_CONFIG_CARD` (each module's `CARD`).
"""

from __future__ import annotations

from core.exports import lazy_exports

_EXPORTS = {
    "AGENT_CHECK_CARD": "core.drafts.agent_check:CARD",
    "AgentCheckError": "core.drafts.agent_check",
    "CHECKLIST": "core.drafts.agent_check",
    "CUSTOM_CONFIG_SOURCE": "core.drafts.agent_check",
    "DEFAULT_FUNCTION": "core.drafts.agent_check",
    "EXAMPLE_SOURCE": "core.drafts.agent_check",
    "LOAD_FUNCTION_SOURCE": "core.drafts.agent_check",
    "TURN_LIMIT_NOTE": "core.drafts.agent_check",
    "TURN_LIMIT_SOURCES": "core.drafts.agent_check",
    "check_function_path": "core.drafts.agent_check",
    "check_generate_source": "core.drafts.agent_check",
    "check_upload_name": "core.drafts.agent_check",
    "suggested_path": "core.drafts.agent_check",
    "ALTERNATIVES_CARD": "core.drafts.alternatives:CARD",
    "NEED_LABELS": "core.drafts.alternatives",
    "NEED_SHORT": "core.drafts.alternatives",
    "Need": "core.drafts.alternatives",
    "recommend": "core.drafts.alternatives",
    "recommendation_markdown": "core.drafts.alternatives",
    "Draft": "core.drafts.launch",
    "DraftRequest": "core.drafts.launch",
    "ExtraArg": "core.drafts.launch",
    "FULLY_ASYNC_FUNCTION": "core.drafts.launch",
    "SGLANG_SERVER_CONCURRENCY_DEFAULT": "core.drafts.launch",
    "check_interval_within_staleness": "core.drafts.launch",
    "check_staleness_positive": "core.drafts.launch",
    "checkout_checker": "core.drafts.launch",
    "draft_launch_script": "core.drafts.launch",
    "hyperparameter_sources": "core.drafts.launch",
    "parse_positive_int": "core.drafts.launch",
    "record_for": "core.drafts.launch",
    "ConfigError": "core.drafts.model_config",
    "ConversionRequest": "core.drafts.model_config",
    "HF_LOADER_MODEL_TYPES": "core.drafts.model_config",
    "MODEL_CONFIG_CARD": "core.drafts.model_config:CARD",
    "VALIDATE_SOURCE": "core.drafts.model_config",
    "ckpt_args_example": "core.drafts.model_config",
    "compare_config": "core.drafts.model_config",
    "conversion_findings": "core.drafts.model_config",
    "draft_conversion_command": "core.drafts.model_config",
    "parse_hf_config": "core.drafts.model_config",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
