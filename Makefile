# Everything runs in a project-local virtual environment (.venv), created on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
OUT ?= out

.PHONY: demo test lint bench clean

$(BIN)/envsynth: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,serve,llm,mcp,datasets,report,ray,verifiers,openenv,skyrl]"
	touch $(BIN)/envsynth

# Build every shipped domain offline into a corpus in $(OUT)/ (apps, 10 verified tasks per
# app in 2 initial states each, distractor depth 2) and print its summary.
demo: $(BIN)/envsynth
	$(BIN)/envsynth build $(OUT) --tasks-per-app 10 --states 2 --distractors 2
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
