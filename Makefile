# Two entry points, both self-contained on a fresh machine with Python 3.11:
#   make demo   set up, load the MetaQA sample, ask a question, show the run
#   make test   set up, run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STORE  ?= .tog/demo-store
export LITELLM_LOCAL_MODEL_COST_MAP = True

.PHONY: setup setup-test demo test neo4j-start neo4j-stop bench-load bench-neo4j bench-metaqa clean

# The demo installs only the package; the tests add their extras (pytest, playwright, ...).
setup: $(VENV)/.installed

setup-test: $(VENV)/.installed-test

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -qq -e .  # -qq: no setuptools notes about editable installs
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: setup
	$(BIN)/tog load examples/metaqa/kb.txt --store $(STORE)
	$(BIN)/tog ask "who directed the films written by [Paul Attanasio]" --store $(STORE)
	$(BIN)/tog runs show last --store $(STORE) --kept-only

test: setup-test
	$(BIN)/python -m pytest -q

# A real Neo4j server from Maven Central (Java 17 + Maven, no Docker); see README.
neo4j-start:
	launcher/neo4j-server start

neo4j-stop:
	launcher/neo4j-server stop

bench-load: setup
	$(BIN)/python benchmarks/load.py --sizes 1000000 10000000

bench-neo4j: setup
	$(BIN)/python benchmarks/neo4j_load.py --size 1000000

bench-metaqa: setup
	$(BIN)/python benchmarks/metaqa.py --per-hop 1000

clean:
	rm -rf $(VENV) .tog *.egg-info
