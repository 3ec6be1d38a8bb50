"""What the app remembers: the user's profiles and answers (`profile`, `onboarding`), the diskcache
store that keeps them (`store`), and the record of what has been handled (`workflows`).

May import: the shared vocabulary and the root of core.data (data keys and path rules).
"""

from core.memory.profile import MAX_GPUS, Profile, SavedLaunchKeys, WorkflowRecord, check_data_path

__all__ = ["MAX_GPUS", "Profile", "SavedLaunchKeys", "WorkflowRecord", "check_data_path"]
