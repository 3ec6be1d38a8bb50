"""slime assistant core: every rule and model, usable without the UI.

Layout (see docs/architecture.md):
- shared vocabulary, importable by everything: `findings`, `pins`, `paths`, `model_scripts`, `batch`, `text`;
- capabilities, one package each: `launch`, `data`, `monitor`, `drafts`, `memory`, `knowledge`;
  a capability imports the shared vocabulary and other capabilities' package roots only;
- front-end: `cli` (one module per sub-command), which may import any capability.
Nothing under core/ imports streamlit.
"""
