# Everything runs in a project-local virtual environment (.venv), created on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
OUT ?= out

.PHONY: demo test lint bench clean

$(BIN)/envsynth: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(BIN)/envsynth

# Build every shipped domain offline into $(OUT)/ and print the summary.
demo: $(BIN)/envsynth
	$(BIN)/envsynth build $(OUT)
	$(BIN)/envsynth inspect $(OUT)

test: $(BIN)/envsynth
	$(BIN)/python -m pytest

lint: $(BIN)/envsynth
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

bench: $(BIN)/envsynth
	$(BIN)/python benchmarks/bench_runtime.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
