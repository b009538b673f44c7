# The two set-up commands of the README: `make demo` and `make test`; `make docs` builds the site.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: demo test test-all lint bench clean install docs gallery

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# the docs extra, once (the dev extra includes it; this serves a venv made before it did)
$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

# the site into site/: offline, warnings are errors (mkdocs.yml: strict)
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

demo: $(STAMP)
	$(BIN)/shallowflow demo --out runs/demo --overwrite

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n auto -m "not heavy"

# make test, and the many-process fault, cluster and wheel tests (tests marked heavy): what CI runs.
test-all: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n auto

# Refresh gallery folders (the quick preset of each name into gallery/NAME, timed and pruned to
# what its page needs): make gallery NAMES="dana-fig2 bf-fig2"; then commit gallery/.
gallery: $(STAMP)
	$(BIN)/python docs/_ext/gallery.py $(NAMES)

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf runs site dist .pytest_cache build *.egg-info src/*.egg-info

# The wheel and the sdist a user installs, into dist/ (tests/test_wheel.py installs the wheel into
# a fresh environment and runs it outside the repository).
.PHONY: wheel
wheel: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist
