"""The knowledge base: markdown cards with typed front matter under knowledge/cards (`cards`), the flag
reference (`flags`), slime's error messages read with `ast` (`errors`), the curated tables of runtime
messages (`runtime`), other frameworks' words (`terms`) and known bugs (`bugs`, with checkout detection),
turned into documents by `tables`, and one FTS5 search over all of them (`search`).

May import: the shared vocabulary and the roots of core.launch (the argument catalog, the rule registry)
and core.data (the data rules).

The names below are the package's public face for the front-ends; they load on first use, so `ask` pays
only for what it reads. The curated tables are `runtime_messages()`, `framework_terms()` and `known_bugs()`
(`tables.terms` and `tables.bugs`: a public name never equals a submodule's).
"""

from __future__ import annotations

from core.exports import lazy_exports

_EXPORTS = {
    "checkout_has_fix": "core.knowledge.bugs",
    "Card": "core.knowledge.cards",
    "display_markdown": "core.knowledge.cards",
    "get_card": "core.knowledge.cards",
    "mark_code": "core.knowledge.cards",
    "ErrorMatch": "core.knowledge.errors",
    "MAX_PASTE_CHARS": "core.knowledge.errors",
    "checkout_error_index": "core.knowledge.errors",
    "match_error": "core.knowledge.errors",
    "slime_frames": "core.knowledge.errors",
    "FlagRow": "core.knowledge.flags",
    "checkout_flag_view": "core.knowledge.flags",
    "filter_rows": "core.knowledge.flags",
    "flag_rows": "core.knowledge.flags",
    "flag_url": "core.knowledge.flags",
    "link_flags": "core.knowledge.flags",
    "load_flag_reference": "core.knowledge.flags",
    "LAYER_TITLES": "core.knowledge.runtime",
    "Answer": "core.knowledge.answers",
    "KINDS": "core.knowledge.answers",
    "KIND_TITLES": "core.knowledge.answers",
    "MATCH_TITLES": "core.knowledge.answers",
    "Result": "core.knowledge.answers",
    "distinct": "core.knowledge.answers",
    "explain": "core.knowledge.search",
    "get_index": "core.knowledge.search",
    "grouped": "core.knowledge.answers",
    "framework_terms": "core.knowledge.tables:terms",
    "known_bugs": "core.knowledge.tables:bugs",
    "runtime_messages": "core.knowledge.tables",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
