# modlens: `make run` sets up a virtual environment and starts the daemon; `make test` runs every test.
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(abspath $(VENV))/bin:$(PATH)
# the installs `make test` needs (this venv, npm's tools, Label Studio's and Potato's venvs) are independent:
# run them side by side, which takes minutes off a fresh machine's first run (CI's)
MAKEFLAGS += --jobs=4

.PHONY: setup run lint test test-fast system-deps bench clean labelstudio potato perspective-clients

$(VENV)/.installed: pyproject.toml setup.py constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[test,ray,onnx,teacher]'
	$(PY) -m pip download -q --no-deps toxic-comment-classifier==0.3.0 -d $(HOME)/.cache/modlens
	touch $@

setup: $(VENV)/.installed

# Label Studio in its own environment (its Django stack would clash with ours): tests/test_labelstudio_real.py
# runs it for real and is skipped without it. Start it on loopback: `label-studio start --internal-host 127.0.0.1`
# (its --host is only the public URL; the bind address defaults to 0.0.0.0, every interface).
# Measured on the shared 2-core dev machine: install 137 s; a start on the migrated database below 7 s (74 s when it
# migrates first).
# one tool in a virtual environment of its own: $(call tool_venv,FOLDER,PACKAGE==VERSION)
define tool_venv
	python3 -m venv $(1)
	$(1)/bin/pip install -q $(2)
	touch $(1)/.installed
endef

LS_VENV := .venv-labelstudio
$(LS_VENV)/.installed:
	$(call tool_venv,$(LS_VENV),label-studio==1.23.2)

# its empty database migrated once here, beside the other installs, not at each test's start (about 70 s of
# CPU-bound Django migrations); the test copies it into a fresh data folder. Label Studio's own manage.py
LS_MIGRATED := $(LS_VENV)/migrated/label_studio.sqlite3
$(LS_MIGRATED): $(LS_VENV)/.installed
	rm -rf $(LS_VENV)/migrated $(LS_VENV)/migrating
	cd "$$($(LS_VENV)/bin/python -c 'import label_studio, os; print(os.path.dirname(label_studio.__file__))')" && \
	  LABEL_STUDIO_BASE_DATA_DIR=$(abspath $(LS_VENV))/migrating LATEST_VERSION_CHECK=false \
	  $(abspath $(LS_VENV))/bin/python manage.py migrate --no-input -v 0
	mv $(LS_VENV)/migrating $(LS_VENV)/migrated

labelstudio: $(LS_VENV)/.installed $(LS_MIGRATED)

# Potato (potato-annotation) in its own environment too: tests/test_potato_real.py starts its server on an exported
# project, annotates as two users over HTTP and imports what Potato writes; skipped without it. Potato binds
# 0.0.0.0 unless told: the exported config.yaml sets `host: 127.0.0.1` (`potato start --host` overrides it).
POTATO_VENV := .venv-potato
$(POTATO_VENV)/.installed:
	$(call tool_venv,$(POTATO_VENV),potato-annotation==2.12.1)

potato: $(POTATO_VENV)/.installed

# Perspective API clients from PyPI, unchanged, in environments of their own (two install a module named
# `perspective`): tests/test_perspective_clients_unchanged.py runs them through `serve --perspective-proxy`
# with only the environment modlens prints; skipped without them. PySocks: httplib2 needs it for HTTPS_PROXY
PC_VENV := .venv-perspective-clients
$(PC_VENV)/.installed:
	$(call tool_venv,$(PC_VENV),PyPerspective==1.0.4 PySpective==0.0.2 perspectiveapi==1.1.0)
PPY_VENV := .venv-perspective-py
$(PPY_VENV)/.installed:
	$(call tool_venv,$(PPY_VENV),perspective.py==0.3.4 PySocks==1.7.1)

# HELM's PerspectiveAPIClient, lm-eval's realtoxicityprompts metric and begentle, one environment each. crfm-helm and
# lm-eval require torch, transformers, datasets, spaCy, ... that their Perspective code never imports (`pip install
# --dry-run crfm-helm==0.5.16` resolves 102 packages, CUDA torch among them): each is installed --no-deps, after only
# what the modules the tests import do import. HELM: helm.clients.perspective_api_client and helm.common.cache import
# googleapiclient, dacite, retrying, filelock, zstandard, tqdm, pyhocon, colorlog, sqlitedict, PyYAML (zstandard 0.25, a
# wheel: HELM asks ~=0.18, which has no wheel for Python 3.11 and is compiled from C; this code only imports it). lm-eval:
# the metric imports requests, the harness's YAML loader (lm_eval/tasks/_yaml_loader.py) PyYAML. Installing the three
# took 54 s side by side, pip's cache empty, on the shared 2-core machine (load average 4-5).
HELM_VENV := .venv-perspective-helm
$(HELM_VENV)/.installed:
	python3 -m venv $(HELM_VENV)
	$(HELM_VENV)/bin/pip install -q google-api-python-client==2.202.0 PySocks==1.7.1 dacite==1.9.2 retrying==1.4.2 \
		filelock==4.3.2 zstandard==0.25.0 tqdm==4.70.1 pyhocon==0.3.63 colorlog==6.12.0 sqlitedict==2.1.0 PyYAML==6.0.4
	$(HELM_VENV)/bin/pip install -q --no-deps crfm-helm==0.5.16
	touch $@
LMEVAL_VENV := .venv-perspective-lmeval
$(LMEVAL_VENV)/.installed:
	python3 -m venv $(LMEVAL_VENV)
	$(LMEVAL_VENV)/bin/pip install -q requests==2.34.2 PyYAML==6.0.4
	$(LMEVAL_VENV)/bin/pip install -q --no-deps lm-eval==0.4.13
	touch $@
BEGENTLE_VENV := .venv-perspective-begentle
$(BEGENTLE_VENV)/.installed:
	$(call tool_venv,$(BEGENTLE_VENV),begentle==0.1.1 google-api-python-client==2.202.0 PySocks==1.7.1)

perspective-clients: $(PC_VENV)/.installed $(PPY_VENV)/.installed $(HELM_VENV)/.installed $(LMEVAL_VENV)/.installed \
	$(BEGENTLE_VENV)/.installed

# npm dev tools pinned in package-lock.json: web-ext (Mozilla's linter) checks the Firefox build in `make test`
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

run: setup
	@echo "modlens: installed in $(VENV), not on your PATH: in a new terminal run '. $(VENV)/bin/activate' (or call $(VENV)/bin/modlens)"
	$(VENV)/bin/modlens serve $(ARGS)

# ruff, and mypy strict on every module of src/modlens and daemon/; what they check is configured in pyproject.toml
lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

# both test targets run on WORKERS pytest-xdist workers, each test file on one worker (its module-scoped servers and
# fixtures are built once): many tests wait on sockets, browsers and child processes. WORKERS=0 runs in one process
WORKERS ?= 2
XDIST = -n $(WORKERS) --dist loadfile
test: lint node_modules/.package-lock.json labelstudio potato perspective-clients
	$(PY) -m pytest -q $(XDIST) $(ARGS)

# the quick loop while editing, chosen by marker (tests/conftest.py applies them): no browser, no slow test, no tool
# from outside the venv (`realtool`: OCR, speech, video, node, Label Studio, Potato, ...). A test not marked slow that
# takes longer than FAST_LIMIT seconds fails the run, named: list it in tests/conftest.py's SLOW or make it faster
FAST_LIMIT ?= 2
test-fast: setup
	$(PY) -m pytest -q $(XDIST) -m "not browser and not slow and not realtool" --max-test-seconds=$(FAST_LIMIT) $(ARGS)

# Debian packages for the browser tests, WordNet and the media tools of docs/FUSION.md (Tesseract OCR, espeak-ng,
# ffmpeg, the colour emoji font); needs root. npm for web-ext (which needs Node.js >= 20).
system-deps:
	apt-get update
	apt-get install -y --no-install-recommends chromium fonts-dejavu-core firefox-esr wordnet-base \
		tesseract-ocr tesseract-ocr-eng espeak-ng ffmpeg fonts-noto-color-emoji
	command -v npm >/dev/null || apt-get install -y --no-install-recommends nodejs npm

# one bench at a time (each takes minutes to hours, several need a mode): `make bench` lists them with what each
# measures; `make bench B=audit_floor ARGS="--rounds 3"` runs bench/bench_audit_floor.py. Every bench also runs in
# the suite on a tiny input (tests/test_bench_tiny.py), so none rots unnoticed
bench: setup
ifdef B
	$(PY) bench/bench_$(B).py $(ARGS)
else
	@for b in bench/bench_*.py; do printf '%-20s %s\n' "$$(basename $$b .py | sed 's/^bench_//')" "$$(sed -n '1s/^"""//p' $$b)"; done
	@echo 'run one: make bench B=<name> ARGS="<its options, in its docstring>"'
endif

clean:
	rm -rf $(VENV) $(LS_VENV) $(POTATO_VENV) build *.egg-info node_modules
