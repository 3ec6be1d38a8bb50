"""slime assistant core: every rule and model, usable without the UI."""
