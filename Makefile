# The two commands a new user needs: `make run` (a hub) and `make test` (every test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,spark,zk]' --config-settings editable_mode=compat
	touch $(STAMP)

# A hub on 127.0.0.1:4080 with its data under ./data (embedded: mmap ledgers + SQLite).
run: $(STAMP)
	$(VENV)/bin/hedwig hub --data-dir ./data

# Lint, then every test: unit tests and integration tests with real hubs and Spark.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(STAMP)
	for b in bench/*_bench.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
