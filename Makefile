# The two commands: `make demo` (set-up + main job) and `make test` (set-up + all tests).
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp
APT_PACKAGES := chromium libvulkan1 git git-lfs
OUT ?= out

.PHONY: setup demo test test-fast docs dist clean

setup: $(STAMP) apt web/node_modules/.package-lock.json

# Debian packages: chromium ships the SwiftShader Vulkan driver LiteRT's GPU accelerator runs on here; libvulkan1 the loader.
# git + git-lfs: the Hub round trip (tests/test_hub.py: a release folder pushed as a Git repository, binaries in LFS).
apt:
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
	  echo "setup: installing Debian packages: $(APT_PACKAGES)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  for i in $$(seq 60); do \
	    err=$$($$SUDO apt-get update -q 2>&1 >/dev/null) && break; \
	    case "$$err" in *"Could not get lock"*) [ $$i -lt 60 ] || { echo "$$err" >&2; exit 1; }; \
	      [ $$i -gt 1 ] || echo "setup: another apt/dpkg holds its lock: waiting for it (up to 10 minutes)"; sleep 10;; \
	    *) echo "$$err" >&2; exit 1;; esac; \
	  done; \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q $(APT_PACKAGES) >/dev/null; \
	fi

# torch first, alone: `pip install torch==2.13.0` takes the CPU wheel on disk; letting a dependency pull torch takes CUDA.
$(STAMP): requirements.txt requirements-nodeps.txt constraints.txt pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

# LiteRT.js and ONNX Runtime Web for the browser playground, plus transformers.js and @huggingface/tasks for the
# tests (tests/js/), exact versions from web/package-lock.json (no CDN at run time). Offline-safe: install scripts are
# skipped, then re-run with ONNXRUNTIME_NODE_INSTALL=skip, so onnxruntime-node keeps the CPU binary it ships instead of
# downloading CUDA providers; sharp's binary comes from the locked @img/sharp-linux-x64 npm packages.
web/node_modules/.package-lock.json: web/package.json web/package-lock.json
	@command -v npm >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null; }
	npm ci --prefix web --ignore-scripts --no-audit --no-fund
	ONNXRUNTIME_NODE_INSTALL=skip npm rebuild --prefix web --no-audit --no-fund
	@touch $@

demo: setup
	@bash scripts/demo.sh $(OUT)

test: setup
	$(BIN)/python -m pytest -q --durations=30 $(PYTEST_ARGS)

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow" $(PYTEST_ARGS)

# The documentation site into site/ (mkdocs.yml; reference pages generated from the code by docs/hooks/generate.py).
# Strict: a broken link or any other warning fails it. NO_MKDOCS_2_WARNING: Material's end-of-life banner, not a warning.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# sdist + wheel into dist/ (the wheel carries the recipes, records and the playground with its browser runtimes)
dist: setup
	$(BIN)/python -m build --no-isolation --outdir dist .

clean:
	rm -rf $(OUT) .pytest_cache dist site
