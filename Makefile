# Two commands for a newcomer: `make run` and `make test`. Both set up .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup bubblewrap openssh bytecode run test lint bench soak clean

setup: $(STAMP)

# torch is pinned first so the project's `torch>=2.4` is already satisfied by the CPU build
# (a bare torch requirement would otherwise pull a multi-GB CUDA build).
# The installs go through uv (about 10 s where pip takes about 55 s: a fresh clone's `make test` has
# 10 minutes in all); where uv cannot be had or fails, pip does the same installs. uv does not read pip's
# settings, so a wheel folder pip is told of (PIP_FIND_LINKS, as on a machine with torch's file on disk)
# is passed on. The chatter goes to .venv/setup.log and is shown only if the setup fails.
# The test, lint, llm, ray and textworld extras are installed too: `make test` and `make lint` share the one venv, the
# language-model tests run everywhere (transformers, no model downloads: tests build tiny ones), and so do
# the Ray executor's (a two-node Ray cluster on this machine) and TextWorld's (real games, built here).
EXTRAS := .[test,lint,llm,ray,textworld]
UV_LINKS := $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS))
$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory bubblewrap
	@$(MAKE) --no-print-directory openssh
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "setting up $(VENV) (torch CPU build, then the project with its test extra)…"
	@{ { $(BIN)/python -m pip install uv && \
	     $(BIN)/uv pip install --compile-bytecode --python $(BIN)/python $(UV_LINKS) torch==2.13.0 && \
	     $(BIN)/uv pip install --compile-bytecode --python $(BIN)/python -e '$(EXTRAS)'; } || \
	   { echo "uv failed: installing with pip"; \
	     $(BIN)/python -m pip install torch==2.13.0 && $(BIN)/python -m pip install -e '$(EXTRAS)'; }; \
	 } > $(VENV)/setup.log 2>&1 \
	   || { cat $(VENV)/setup.log; echo "setup failed (log: $(VENV)/setup.log)"; exit 1; }
	@touch $(STAMP)

# the sandbox of model-written programs (rla_engine/sandbox) isolates them with bubblewrap; as root
# on Debian/Ubuntu it is installed here, otherwise `rla sandbox check` says what is missing
bubblewrap:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	   { echo "installing bubblewrap (the sandbox for model-written programs)…"; \
	     (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) >/dev/null 2>&1 \
	     || { echo "installing bubblewrap failed: run apt-get install bubblewrap"; exit 1; }; }; } \
	   || echo "bubblewrap is not installed (not root, or no apt-get): the sandbox falls back (rla sandbox check)"

# the console over SSH is tested against a real sshd on 127.0.0.1 (tests/sshd.py); as root on
# Debian/Ubuntu it is installed here, otherwise those tests are skipped (outside CI)
openssh:
	@test -x /usr/sbin/sshd || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	   { echo "installing openssh-server (the sshd of the console-over-SSH tests)…"; \
	     (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server) >/dev/null 2>&1 \
	     || { echo "installing openssh-server failed: run apt-get install openssh-server"; exit 1; }; }; } \
	   || echo "openssh-server is not installed (not root, or no apt-get): the tests of the console over SSH are skipped"

# The project's own modules compiled ahead (a machine may set PYTHONDONTWRITEBYTECODE, as this one does):
# otherwise every `rla` and console process compiles them again, about 0.14 s each, and the suite
# starts a few hundred. Up-to-date files are skipped.
bytecode:
	@$(BIN)/python -m compileall -q -j 0 rla_engine rla_gui >/dev/null

run: setup bytecode
	@$(BIN)/rla-gui

# a few pytest processes at once, one more than the cores (tests/run_parts.py); `$(BIN)/python -m pytest` runs it serially
test: setup bytecode
	QT_QPA_PLATFORM=offscreen $(BIN)/python tests/run_parts.py

# ruff (style, bugs, complexity ≤ 12), mypy (engine, console, benchmarks), import-linter (the architecture's contracts);
# .pre-commit-config.yaml runs the same three
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: setup
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/learning.py
	QT_QPA_PLATFORM=offscreen $(BIN)/python benchmarks/gui_latency.py
	$(BIN)/python benchmarks/export.py
	$(BIN)/python benchmarks/faults.py

# 30 minutes with the console attached to a run with a stored 1,000,000-iteration history (~4 GB)
soak: setup
	$(BIN)/python benchmarks/soak.py

clean:
	rm -rf $(VENV) build *.egg-info
