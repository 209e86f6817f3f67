# The course's two commands: `make lab` (start the course) and `make test` (test it).
# Both build .venv from requirements.lock (exact pins) the first time, then reuse it.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
STAMP  := $(VENV)/.installed

.PHONY: install test test-fast lint lab bench clean

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

lint: install
	$(BIN)/ruff check rlcourse tests benchmarks tools

# Everything: lint, unit and fault tests, learning tests, and every lesson under nbval.
test: lint
	$(BIN)/python -m pytest -p no:cacheprovider tests
	$(BIN)/python -m pytest -p no:cacheprovider --nbval-lax --nbval-cell-timeout=600 lessons

# Unit tests only (no learning runs, no notebooks): the quick loop while editing.
test-fast: install
	$(BIN)/python -m pytest -p no:cacheprovider -m "not learning" tests

lab: install
	$(BIN)/jupyter lab --notebook-dir=lessons --ip=127.0.0.1 --port=$(PORT)

bench: install
	$(BIN)/python benchmarks/sampling.py
	$(BIN)/python benchmarks/startup_memory.py
	$(BIN)/python benchmarks/solve_cartpole.py --algo ppo
	$(BIN)/python benchmarks/impala_vs_ppo.py
	$(BIN)/python benchmarks/solve_cartpole.py --algo impala

clean:
	rm -rf $(VENV) .pytest_cache
