# The README's two commands: `make demo` (set up + main job) and `make test` (set up + tests).
# Both bootstrap .venv with Python 3.11 on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-studies lint format bench results clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=python3 ...'"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first, pinned: where a CPU wheel of this release is on the machine pip takes it;
	# an unpinned `torch` would pull the newest (multi-GB CUDA) build.
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[train,ecosystem,openspiel,bench,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/derby-envs demo

# on every core (pytest-xdist); tests/conftest.py compiles the numba kernels once before the
# workers start
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m slow

# the research studies of scripts/studies/ (not part of the product, not in `make test`)
test-studies: $(STAMP)
	$(BIN)/python -m pytest -q scripts/studies/tests

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

# the training configs whose speed against random seats and their strongest-heuristic field
# bench reports: each game's recipe on single-game envs beside its batched one
BENCH_CONFIGS = configs/kentucky_derby_5p_dummy.yaml configs/kentucky_derby_5p.yaml \
	configs/derby_4p_subproc.yaml configs/derby_4p.yaml \
	configs/demolition_derby_2p_subproc.yaml configs/demolition_derby_2p.yaml \
	configs/demolition_derby_4p_subproc.yaml configs/demolition_derby_4p.yaml

bench: $(STAMP)
	$(BIN)/derby-envs bench --config $(BENCH_CONFIGS)

# docs/results/*.md from the stored measurements (docs/results/data/) and the training sidecars;
# `python -m training.tools.results run NAME ...` re-measures first
results: $(STAMP)
	$(BIN)/python -m training.tools.results

clean:
	rm -rf $(VENV) build *.egg-info runs
