"""What the app remembers: the user's profiles and answers (`profile`, `onboarding`), the diskcache
store that keeps them (`store`), and the record of what has been handled (`workflows`).

May import: the shared vocabulary and the root of core.data (data keys and path rules).
"""
