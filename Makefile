# Two commands for a newcomer: `make run` and `make test`. Both set up .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test bench clean

setup: $(STAMP)

# torch is pinned first so the project's `torch>=2.4` is already satisfied by the CPU build
# (a bare torch requirement would otherwise pull a multi-GB CUDA build).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

run: setup
	$(BIN)/rla run --preset quickstart

test: setup
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest

bench: setup
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/learning.py

clean:
	rm -rf $(VENV) build *.egg-info
