# The two commands of the README:
#   make book   create .venv, install requirements.txt, build the book into _build/html
#   make test   unit + property tests, a clean build of the book (every chapter
#               executed, warnings are errors), the layout checks of the executed
#               chapters (tests/test_book_layout.py: printed lines <= 79 characters,
#               every figure numbered and captioned), then nbval on them, then
#               the browser check (tests/test_browser.py: every page in headless
#               Chromium, offline: math typeset, images loaded, a quiet console,
#               no sideways overflow; skipped, saying so, without chromium)
#   make screenshots   (not part of make test) a full-page PNG of every chapter
#               of the built HTML, by headless Chromium, into _build/screenshots/
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | cksum | cut -d' ' -f1)

# Deterministic numerics: one thread everywhere, so that the numbers the chapters
# print are the same on every run (nbval compares them with the built notebooks).
export OMP_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export NUMBA_NUM_THREADS := 1
export PYTHONHASHSEED := 0
# Real LETOR data: used when LETOR_HOME is set, or when the shared folder sits beside the repo.
ifeq ($(origin LETOR_HOME), undefined)
ifneq ($(wildcard ../shared/letor),)
export LETOR_HOME := $(abspath ../shared/letor)
endif
endif

define NEWLINE


endef

JB := $(BIN)/jupyter-book build . -n -W --keep-going
NBVAL := $(BIN)/python -m pytest --nbval --nbval-current-env \
	--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:python -p no:cacheprovider \
	_build/jupyter_execute

.PHONY: install book test unit nbval browser bench clean unit-blas book-blas screenshots

install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.11 not found: set PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $@

book: install
	$(JB)

unit: install
	$(BIN)/python -m pytest tests

nbval: install
	$(NBVAL)

# The built book in headless Chromium (Debian's chromium; CHROMIUM=/path
# overrides).  Without a browser it says so and passes: the check is a
# reader's view, not a build requirement.
browser: install
	@if $(BIN)/python -c 'import sys; sys.path.insert(0, "tools"); \
	    import browser; sys.exit(browser.find_chromium() is None)'; then \
	  BOOK_HTML=_build/html $(BIN)/python -m pytest tests/test_browser.py \
	    -p no:cacheprovider -rs; \
	else \
	  echo "browser check SKIPPED: no chromium found (apt-get install chromium)"; \
	fi

test: install
	$(BIN)/python -m pytest tests
	rm -rf _build/.jupyter_cache _build/.doctrees _build/jupyter_execute
	$(JB)
	$(BIN)/python -m pytest tests/test_book_layout.py -p no:cacheprovider \
		--executed _build/jupyter_execute
	$(NBVAL)
	$(MAKE) --no-print-directory browser

# Machine independence (issue 12): the unit tests, or the whole book, under
# OpenBLAS kernels other than this machine's.  "default" unsets
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (the processor's own kernel).  Not
# part of `make test`: CI runs with the environment it is given, and on some
# processors OPENBLAS_CORETYPE is set there on purpose.  Each run prints the
# kernel OpenBLAS reports, since an unknown or unsupported name falls back.
BLAS_CORETYPES ?= Haswell Sandybridge Prescott
BLAS_KERNEL := $(BIN)/python -c 'import numpy; from threadpoolctl import threadpool_info as t; \
	print("OpenBLAS kernel:", *{i.get("architecture") for i in t() if i["user_api"] == "blas"})'
blas_env = $(if $(filter default,$(1)),env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE,env OPENBLAS_CORETYPE=$(1))

unit-blas: install
	$(foreach c,$(BLAS_CORETYPES),@echo "== OPENBLAS_CORETYPE=$(c)" && \
	  $(call blas_env,$(c)) $(BLAS_KERNEL) && \
	  $(call blas_env,$(c)) $(BIN)/python -m pytest tests -q -p no:cacheprovider$(NEWLINE))

book-blas: install
	$(foreach c,$(BLAS_CORETYPES),@echo "== OPENBLAS_CORETYPE=$(c)" && \
	  $(call blas_env,$(c)) $(BLAS_KERNEL) && \
	  $(call blas_env,$(c)) $(BIN)/jupyter-book build . -n -W --keep-going \
	    --path-output _build/blas-$(c)$(NEWLINE))

# Full-page screenshots of every chapter of the last build (_build/html), by
# headless Chromium (Debian's chromium), 1280 px wide, into _build/screenshots/
# (tools/screenshots.py waits for MathJax, which the book serves itself, and
# measures each page's height in the browser).  Not part of `make test`.
screenshots: install
	test -f _build/html/index.html || $(JB)
	$(BIN)/python tools/screenshots.py _build/html _build/screenshots

bench: install
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f; done

clean:
	rm -rf _build
