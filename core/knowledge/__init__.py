"""The knowledge base: markdown cards with typed front matter under knowledge/cards (`cards`).

May import: the shared vocabulary only.
"""
