"""What the app remembers: the user's profiles and answers (`profile`, `onboarding`), the diskcache store that
keeps them with each page's inputs and the record of handled work (`store`: versioned JSON envelopes, damage
detected, set aside and reported), its JSON-only serializer and salvage of damaged databases (`jsonstore`), and
the workflows with what marks each one done (`workflows`).

May import: the shared vocabulary and the root of core.data (data keys and path rules).

The names below are the package's public face for the front-ends; they load on first use (the store pulls
in diskcache).
"""

from __future__ import annotations

from pathlib import Path

from core.exports import lazy_exports


def default_store_dir() -> Path:
    """The app's store directory ($SLIME_ASSISTANT_HOME, else the user cache): see core.memory.store (imported
    on first use, as the store pulls in diskcache)."""
    from core.memory.store import default_store_dir as _default

    return _default()


_EXPORTS = {
    "build_profile": "core.memory.onboarding",
    "AcceptedOutput": "core.memory.profile",
    "MAX_GPUS": "core.memory.profile",
    "Profile": "core.memory.profile",
    "SavedLaunchKeys": "core.memory.profile",
    "WorkflowRecord": "core.memory.profile",
    "check_data_path": "core.memory.profile",
    "ACCEPTED_KEPT": "core.memory.store",
    "Store": "core.memory.store",
    "new_output_id": "core.memory.store",
    "MISSING_NOTHING_JUDGED": "core.memory.workflows",
    "MISSING_NO_SCALARS": "core.memory.workflows",
    "MonitorProgress": "core.memory.workflows",
    "WORKFLOWS": "core.memory.workflows",
    "WORKFLOW_BY_ID": "core.memory.workflows",
    "input_changes": "core.memory.workflows",
    "monitor_progress": "core.memory.workflows",
    "status_rows": "core.memory.workflows",
}

__all__ = sorted([*_EXPORTS, "default_store_dir"])
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
