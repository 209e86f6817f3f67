# The course's two commands: `make lab` (start the course) and `make test` (test it).
# Both build .venv from requirements.lock (exact pins) the first time, then reuse it.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
BOOK_PORT ?= 8000
STAMP  := $(VENV)/.installed
# torch comes from PyTorch's CPU index: on Linux, PyPI's torch is the multi-GB CUDA build. The one
# switch for a machine with an NVIDIA GPU: `make install TORCH_INDEX=https://download.pytorch.org/whl/cu128`
# (any index with a CUDA build of the lock's torch version). torch goes in first without its
# dependencies; the lock then installs them (a CUDA build's nvidia packages too) from the main index.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIN := $(shell grep '^torch==' requirements.lock)
# Debian's Chromium for the browser tests (Playwright drives it; its own browser download is not used).
CHROMIUM ?= /usr/bin/chromium
ROOT_USER := $(filter 0,$(shell id -u))
SUDO := $(if $(ROOT_USER),,sudo)

.PHONY: install test test-fast test-browser test-book chromium lint lab lessons-sync book book-serve bench \
	tuned-examples binder-profile clean

install: $(STAMP)

# pip compiles every installed module to bytecode on one core; compileall writes the same files on
# all cores, so a fresh install takes less time, and leaves out the packages' own test suites
# (pandas', sympy's, scipy's...: a fifth of the files, never imported here). As with pip, a file
# that does not compile is skipped: torch ships one written for Python 3.12 only.
$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet --no-compile --no-deps --index-url $(TORCH_INDEX) "$(TORCH_PIN)"
	$(BIN)/python -m pip install --quiet --no-compile -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m compileall -q -j 0 -x '/tests?/' $(VENV)/lib >/dev/null || true
	touch $(STAMP)

lint: install
	$(BIN)/ruff check rlcourse tests benchmarks tools lessons/conftest.py

# Everything: lint, unit and fault tests, learning tests, the lessons in a browser, every lesson
# under nbval (lessons/conftest.py also fails a lesson whose memory passes Binder's 2 GiB), the book.
# Two lanes share the 2 cores, since much of tests/ waits on Ray and on processes starting: this
# shell runs tests/ but the tuned examples' learning matrix; beside it, a second lane runs the
# lessons, then that matrix, then builds the book from the lessons' executed copies (no lesson runs
# twice) and checks it and the lessons in Chromium. The second lane's output waits in
# test-artifacts/lane2.log until tests/ is done. Each pytest run ends with its 25 slowest tests; the
# target fails if any step did. Every test and lesson is written to pass on a busy machine.
test: lint
	@mkdir -p test-artifacts
	@{ f=0; $(BIN)/python -m pytest -p no:cacheprovider --durations=25 --nbval-lax \
	  --nbval-cell-timeout=600 lessons || f=1; \
	  $(BIN)/python -m pytest -p no:cacheprovider --durations=25 tests/test_learning.py || f=1; \
	  $(BIN)/python -m rlcourse.course.book build && $(MAKE) --no-print-directory test-book || f=1; \
	  $(MAKE) --no-print-directory test-browser || f=1; exit $$f; } >test-artifacts/lane2.log 2>&1 & \
	lane2=$$!; failed=0; \
	$(BIN)/python -m pytest -p no:cacheprovider --durations=25 --ignore=tests/browser \
	  --ignore=tests/test_learning.py tests || failed=1; \
	wait $$lane2 || failed=1; \
	echo "== the lessons under nbval, the learning matrix, the book, the browser (test-artifacts/lane2.log) =="; \
	cat test-artifacts/lane2.log; exit $$failed

# Unit tests only (no learning runs, no notebooks): the quick loop while editing.
test-fast: install
	$(BIN)/python -m pytest -p no:cacheprovider -m "not learning" --ignore=tests/browser tests

# The lessons as learners meet them: JupyterLab in headless Chromium, widgets clicked, screenshots
# kept in test-artifacts/browser/.
test-browser: install chromium
	RLCOURSE_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -p no:cacheprovider --durations=25 tests/browser \
	  --ignore=tests/browser/test_book_in_browser.py

chromium:
	@test -x $(CHROMIUM) || { export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y chromium || \
	  { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }; }

# binder/start sets the course's environment (Ray, threads, off-screen pygame) as on Binder.
# JupyterLab refuses to run as root unless told (containers often run as root).
lab: install
	binder/start $(BIN)/jupyter lab --notebook-dir=lessons --ip=127.0.0.1 --port=$(PORT) \
	  $(if $(ROOT_USER),--allow-root)

# Each lesson's source is lessons/source/NN_name.md (MyST Markdown), paired with the notebook learners open
# and nbval runs (lessons/jupytext.toml): JupyterLab saves both. After editing a .md elsewhere, this
# writes its cells into the notebook (the newer file of a pair is the source), then strips outputs.
lessons-sync: install
	$(BIN)/jupytext --sync lessons/source/[0-9][0-9]_*.md
	$(BIN)/jupyter nbconvert --log-level=WARN --clear-output --inplace lessons/[0-9][0-9]_*.ipynb

bench: install
	$(BIN)/python benchmarks/sampling.py
	$(BIN)/python benchmarks/startup_memory.py
	$(BIN)/python benchmarks/solve_cartpole.py --algo ppo
	$(BIN)/python benchmarks/impala_vs_ppo.py
	$(BIN)/python benchmarks/solve_cartpole.py --algo impala
	$(BIN)/python benchmarks/dqn_cartpole.py
	$(BIN)/python benchmarks/apex_throughput.py
	$(BIN)/python benchmarks/sac_pendulum.py
	$(BIN)/python benchmarks/solve_cartpole.py --tuned-example tuned_examples/ppo/cartpole_ppo.py --seeds 0 1 2 3 4
	$(BIN)/python benchmarks/tune_overhead.py
	$(BIN)/python benchmarks/serve_load.py
	$(BIN)/python benchmarks/external_sampling.py

# The tuned examples (tuned_examples/: algorithm, env, settings, pass mark) as a regression suite: a
# pass/fail table, and a failing exit code if any example misses its mark.
tuned-examples: install
	$(BIN)/rlcourse tuned-examples

# Every lesson on one core with a 64 MB /dev/shm, as on Binder: time and peak memory, written to
# docs/binder-profile.md.
binder-profile: install
	$(BIN)/python benchmarks/binder_profile.py

# The course as a book in _build/html: every lesson with the outputs of its run under nbval, which
# lessons/conftest.py keeps in _build/executed/ (`make test` runs them once; `make book` runs the
# lessons that have no executed copy, or an outdated one). Sphinx + MyST-NB, nothing downloaded.
book: install
	@missing=$$($(BIN)/python -m rlcourse.course.book missing); \
	if [ -n "$$missing" ]; then $(BIN)/python -m pytest -p no:cacheprovider -q --nbval-lax \
	  --nbval-cell-timeout=600 $$missing; fi
	$(BIN)/python -m rlcourse.course.book build

book-serve: book
	$(BIN)/python -m rlcourse.course.book serve --port $(BOOK_PORT)

# Every page of the built book in headless Chromium: links, images, plots, JavaScript errors, search.
test-book: install chromium
	RLCOURSE_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -p no:cacheprovider -s \
	  tests/browser/test_book_in_browser.py

clean:
	rm -rf $(VENV) .pytest_cache _build
