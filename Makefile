# Quick start: `make run` (default benchmark) and `make test` (the whole suite).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# CPU build; an unpinned torch pulls several GB of CUDA wheels.
TORCH_SPEC ?= torch==2.13.0
# pytest-xdist workers for `make test` (0: one process). Three on two cores: the tests
# wait on sleeps and sockets about a third of the time (4.5 min against 5.3 min at two).
TEST_WORKERS ?= 3

.PHONY: run test lint typecheck venv dev clean coefficients

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[report]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q '$(TORCH_SPEC)' || echo "torch not installed: torch tests will be skipped"
	# The image-metrics extra without re-resolving torch (CLIP's processor needs Pillow).
	$(PIP) install -q '$(TORCH_SPEC)' 'torchmetrics>=1.3' 'transformers>=4.40,<5' 'pillow>=10' \
		|| echo "torchmetrics not installed: the CLIP score and FID tests will be skipped"
	touch $(VENV)/.installed $@

venv: $(VENV)/.installed
dev: $(VENV)/.dev-installed

run: $(VENV)/.installed
	$(VENV)/bin/infermeter run

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/lint-imports

typecheck: $(VENV)/.dev-installed
	$(VENV)/bin/mypy

# The suite on every core: a test file runs whole on one worker (tests/conftest.py).
test: $(VENV)/.dev-installed lint typecheck
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# Refit the performance model's shipped coefficients from ../shared (docs/perfmodel.md).
COEFFICIENTS := src/infermeter/perfmodel/data/coefficients.json
coefficients: $(VENV)/.installed
	$(VENV)/bin/infermeter model calibrate --results v4.1 --holdout none --write $(COEFFICIENTS)
	$(VENV)/bin/infermeter model calibrate --results v4.1 --results v5.1 --holdout none --write $(COEFFICIENTS)
	$(VENV)/bin/infermeter model calibrate --results v4.1 --results v5.1 --results v6.1 --holdout none --write $(COEFFICIENTS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
