"""The knowledge base: markdown cards with typed front matter under knowledge/cards (`cards`), the flag
reference (`flags`), slime's error messages read with `ast` (`errors`), the curated tables of runtime
messages (`runtime`), other frameworks' words (`terms`) and known bugs (`bugs`, with checkout detection),
turned into documents by `tables`, and one FTS5 search over all of them (`search`).

May import: the shared vocabulary and the roots of core.launch (the argument catalog, the rule registry)
and core.data (the data rules).
"""
