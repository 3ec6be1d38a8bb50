# Two commands on a fresh machine (Python 3.10+ with venv):
#   make run    set up .venv and start the app on http://localhost:8501
#   make test   set up .venv and run lint + the whole test suite (browser test included where chromium exists)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench catalog

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlit run streamlit_app.py

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/run_all.py
