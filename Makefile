# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean install

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/shallowflow demo --out runs/demo --overwrite

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n auto

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf runs .pytest_cache build *.egg-info src/*.egg-info

# The wheel and the sdist a user installs, into dist/ (tests/test_wheel.py installs the wheel into
# a fresh environment and runs it outside the repository).
.PHONY: wheel
wheel: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist
