"""Drafted outputs for review, never run: launch scripts for GRPO and async training (`launch`), the
multi-turn generate-function checklist (`agent_check`), model script and checkpoint sourcing
(`model_config`), and when an alternative framework fits better (`alternatives`).

May import: the shared vocabulary and the roots of core.launch, core.data and core.memory.
"""
