# modlens: `make run` sets up a virtual environment and starts the daemon; `make test` runs every test.
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup run test system-deps bench clean

$(VENV)/.installed: pyproject.toml setup.py constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $@

setup: $(VENV)/.installed

run: setup
	$(VENV)/bin/modlens serve $(ARGS)

test: setup
	$(PY) -m pytest -q $(ARGS)

# Debian packages for the browser tests and WordNet (needs root).
system-deps:
	apt-get update
	apt-get install -y --no-install-recommends chromium fonts-dejavu-core firefox-esr wordnet-base

bench: setup
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
