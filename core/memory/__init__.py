"""What the app remembers: the user's profiles and answers (`profile`, `onboarding`), the diskcache store that
keeps them with each page's inputs and the record of handled work (`store`: versioned JSON envelopes, damage
detected, set aside and reported), its JSON-only serializer and salvage of damaged databases (`jsonstore`), and
the workflows with what marks each one done (`workflows`).

May import: the shared vocabulary and the root of core.data (data keys and path rules).
"""

from pathlib import Path

from core.memory.profile import MAX_GPUS, Profile, SavedLaunchKeys, WorkflowRecord, check_data_path


def default_store_dir() -> Path:
    """The app's store directory ($SLIME_ASSISTANT_HOME, else the user cache): see core.memory.store (imported
    on first use, as the store pulls in diskcache)."""
    from core.memory.store import default_store_dir as _default

    return _default()


__all__ = ["MAX_GPUS", "Profile", "SavedLaunchKeys", "WorkflowRecord", "check_data_path", "default_store_dir"]
