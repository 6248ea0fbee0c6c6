# The two commands a new user needs: `make run` (a hub) and `make test` (every test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# What a hub needs (the package and its dependencies, no extras); the tests add their
# tools, Spark and ZooKeeper on top. Both are editable installs of this checkout.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# Replicated ledgers ([ledger] store = rados) use librados's Python binding, which Debian
# builds for its CPython 3.11 only (python3-rados): the venv gets a link to it when the
# package is installed and the venv's Python can load it (docs/operations.md, "RADOS").
RADOS_LINK := $(VENV)/.rados-link

.PHONY: run extras test lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUN_STAMP): setup.cfg pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e . --config-settings editable_mode=compat
	touch $(RUN_STAMP)

$(TEST_STAMP): setup.cfg pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,spark,zk]' --config-settings editable_mode=compat
	touch $(TEST_STAMP) $(RUN_STAMP)

$(RADOS_LINK): | $(RUN_STAMP)
	$(PY) -m hedwig.ledger.rados_binding --link
	touch $(RADOS_LINK)

# A hub on 127.0.0.1:4080 with its data under ./data (embedded: mmap ledgers + SQLite),
# serving Kafka clients on 127.0.0.1:9092 too (docs/kafka.md).
run: $(RUN_STAMP) $(RADOS_LINK)
	$(VENV)/bin/hedwig hub --data-dir ./data --kafka-port 9092

# Add optional extras to .venv, keeping the install editable: `make extras EXTRAS=spark`
# (several: EXTRAS=spark,zk; the extras are setup.cfg's: spark, zk, tls, compression, uvloop).
# (The package index's `hedwig` is an unrelated project: extras install from here.)
extras: $(RUN_STAMP)
	@test -n "$(EXTRAS)" || { echo "make extras EXTRAS=spark,zk,tls,compression,uvloop (one or more)"; exit 2; }
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]' --config-settings editable_mode=compat

# Lint, then every test: unit tests and integration tests with real hubs and Spark.
test: $(TEST_STAMP) $(RADOS_LINK)
	$(VENV)/bin/ruff check .
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(TEST_STAMP) $(RADOS_LINK)
	for b in bench/*_bench.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
