"""slime assistant core: every rule and model, usable without the UI.

Layout (see docs/architecture.md):
- shared vocabulary, importable by everything: `findings`, `pins`, `paths`, `model_scripts`, `batch`, `text`,
  `resources`, and `exports` (the lazy public names of the package roots; capabilities only);
- capabilities, one package each: `launch`, `data`, `monitor`, `drafts`, `memory`, `knowledge`, `plan`;
  a capability imports the shared vocabulary and other capabilities' package roots only;
- front-end: `cli` (one module per sub-command), which, like pages/ and ui/, imports capabilities' package
  roots and the shared vocabulary only.
Nothing under core/ imports streamlit.
"""
