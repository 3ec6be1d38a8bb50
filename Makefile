# Two commands on a fresh machine (Python 3.10+ with venv):
#   make run      set up .venv and start the app on http://localhost:8501 (no file watcher: idles at 0% CPU);
#                 `make run PORT=8502` serves on another port (so does STREAMLIT_SERVER_PORT=8502 make run)
#   make test     set up .venv and run lint + the whole test suite (browser tests included where chromium exists)
# And for development:
#   make dev      the app with the file watcher on: an edited page or module reloads on save
#   make sources  clone slime, Megatron-LM and SGLang at the pinned versions into $(SOURCES) (needs network);
#                 `make test` then runs the tests that read them (they skip without)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where the pinned upstream sources live; tests and tools read the same SLIME_ASSISTANT_SOURCES.
SOURCES ?= $(CURDIR)/.sources
SLIME_COMMIT := 624b824a898ab0ec1fcb4d373004c7f3852bf515
MEGATRON_COMMIT := 1dcf0dafa884ad52ffb243625717a3471643e087
SGLANG_VERSION := 0.5.15.post1
ROUTER_VERSION := 0.3.2
ifneq ($(wildcard $(SOURCES)/slime),)
export SLIME_ASSISTANT_SOURCES := $(SOURCES)
endif

.PHONY: run dev test bench catalog sources

$(STAMP): pyproject.toml setup.py
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlit run streamlit_app.py $(if $(PORT),--server.port $(PORT))

dev: $(STAMP)
	$(VENV)/bin/streamlit run streamlit_app.py --server.fileWatcherType auto --server.runOnSave true \
		$(if $(PORT),--server.port $(PORT))

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# slime and Megatron-LM: git clones checked out at the pinned commits; SGLang and sglang-router: their PyPI
# wheels unpacked (the catalog reads SGLang's Python files and the router's, as they ship).
sources: $(STAMP)
	mkdir -p $(SOURCES)
	test -d $(SOURCES)/slime/.git || git clone --quiet --filter=blob:none https://github.com/THUDM/slime.git $(SOURCES)/slime
	git -C $(SOURCES)/slime checkout --quiet $(SLIME_COMMIT)
	test -d $(SOURCES)/megatron/.git || git clone --quiet --filter=blob:none https://github.com/NVIDIA/Megatron-LM.git $(SOURCES)/megatron
	git -C $(SOURCES)/megatron checkout --quiet $(MEGATRON_COMMIT)
	test -d $(SOURCES)/sglang_whl/sglang || { \
	  $(PY) -m pip download --quiet --no-deps sglang==$(SGLANG_VERSION) -d $(SOURCES)/wheels && \
	  $(PY) -m zipfile -e $(SOURCES)/wheels/sglang-$(SGLANG_VERSION)-*.whl $(SOURCES)/sglang_whl; }
	test -d $(SOURCES)/router/sglang_router || { \
	  $(PY) -m pip download --quiet --no-deps sglang-router==$(ROUTER_VERSION) -d $(SOURCES)/wheels && \
	  $(PY) -m zipfile -e $(SOURCES)/wheels/sglang_router-$(ROUTER_VERSION)-*.whl $(SOURCES)/router; }
	@echo "Pinned sources in $(SOURCES); make test uses them (SLIME_ASSISTANT_SOURCES=$(SOURCES) for other commands)."
