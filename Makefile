# Two commands from a fresh clone (README): `make demo` and `make test`.
PYTHON ?= python3
# The Colab-like environment: Python 3.13 with what Colab ships (docs/design.md), torch 2.11, JAX and
# TensorFlow included (Colab ships both; CPU builds here), so the lessons' Colab branches run in `make test`.
# PyPI's torch 2.11.0 for cp313 is a CUDA build (about 3 GB with its CUDA libraries) that runs on a CPU;
# PyPI has no CPU-only build of it (notebooks/README.md gives the install times measured).
COLAB_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13.*/bin/python3.13) $(shell command -v python3.13))
COLAB_PINS := ipython==7.34.0 ipykernel==6.17.1 ipywidgets==7.7.1 traitlets==5.7.1 jupyter_client==7.4.9 matplotlib==3.10.0 numpy==2.1.3 torch==2.11.0 jax tensorflow-cpu
# torch 2.13.0 is a CPU build on this machine's disk; a bare `torch` would pull a multi-GB CUDA build.
TORCH := torch==2.13.0
# JAX's CPU build dispatches asynchronously for real: the async trap without a GPU.
# TensorFlow's CPU build (about 3 minutes to install) checks its backend in eager and graph mode.
# pandas stays optional for the package; the tests check Results.to_pandas with it.
FRAMEWORKS := jax tensorflow-cpu pandas
PIP_QUIET := -q --disable-pip-version-check
# Live frontends for tests/test_frontends.py, each in its own venv: JupyterLab and Notebook 7
# (one server serves both) with ipywidgets 8; classic Notebook 6.5 with Colab's ipywidgets 7.7.1.
FRONTEND_PINS := 'jupyterlab==4.6.*' 'notebook==7.6.*' 'ipywidgets>=8,<9' ipykernel
CLASSIC_PYTHON ?= $(PYTHON)
CLASSIC_PINS := notebook==6.5.7 ipywidgets==7.7.1 ipython==7.34.0 ipykernel==6.17.1 traitlets==5.7.1 jupyter_client==7.4.9

# The GPU machine's image as far as CPU wheels go, the one list of it (docs/gpu.md quotes it and
# lists the image): Python 3.12, torch 2.11 (a CUDA build, run here on the CPU), JAX's CPU build,
# numpy, matplotlib, pandas, pytest; no TensorFlow, no IPython. scripts/gpu-dry-run rehearses with it.
GPU_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12.*/bin/python3.12) $(shell command -v python3.12))
GPU_IMAGE := torch==2.11.0 jax==0.11.2 jaxlib==0.11.2 numpy==2.5.2 matplotlib pandas pytest

.PHONY: demo dist test test-current test-colab lint browser-deps frontends bench screenshots expected clean notebooks gpu-wheels gpu-dry-run

# `make demo` installs what the demo shows and nothing more: the project, torch's CPU build and JAX
# (the `demo` extra), then `make test` adds its own. Measured from a fresh clone on this project's
# 2-core machine, pip's cache off (README.md): 1.7 GB in .venv, the first report 47 s after `make demo`
# on a quiet machine; 116 s were measured with the cores busy.
.venv/.demo-installed: pyproject.toml Makefile
	@echo "Installing into .venv the project, $(TORCH) (its CPU build) and JAX: about 1.7 GB, a minute or two"
	@echo "on 2 cores (a CUDA build of torch, where pip picks one, is several GB more). pip's progress follows."
	$(PYTHON) -m venv .venv
	.venv/bin/pip install --disable-pip-version-check --progress-bar on -e '.[demo]' '$(TORCH)'
	touch $@

# `make test` adds the test tools and the other frameworks to the demo's venv (3.5 GB in all, measured from
# a fresh clone on this machine; TensorFlow is the largest part).
.venv/.installed: .venv/.demo-installed pyproject.toml Makefile
	@echo "Adding the test tools, TensorFlow and pandas to .venv: about 1.8 GB more, several minutes."
	.venv/bin/pip install $(PIP_QUIET) -e '.[test]' '$(TORCH)' $(FRAMEWORKS)
	touch $@

.venv-colab/.installed: pyproject.toml Makefile
	$(COLAB_PYTHON) -m venv .venv-colab
	.venv-colab/bin/pip install $(PIP_QUIET) -e '.[test]' $(COLAB_PINS)
	touch $@

.venv-frontends/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv .venv-frontends
	.venv-frontends/bin/pip install $(PIP_QUIET) -e . $(FRONTEND_PINS)
	touch $@

.venv-classic/.installed: pyproject.toml Makefile
	$(CLASSIC_PYTHON) -m venv .venv-classic
	.venv-classic/bin/pip install $(PIP_QUIET) -e . $(CLASSIC_PINS)
	touch $@

frontends: .venv-frontends/.installed .venv-classic/.installed

demo: .venv/.demo-installed
	.venv/bin/ipython --no-banner --colors=NoColor demo/demo.ipy

test: test-current test-colab

# The wheel and the sdist in dist/, checked as an index would check them (build and twine come with .[test]).
dist: .venv/.installed
	rm -rf dist
	.venv/bin/python -m build --outdir dist .
	.venv/bin/python -m twine check --strict dist/*

# Debian's chromium (when root with apt) and the pinned widget JS; tests skip with a reason otherwise.
browser-deps:
	scripts/install-browser-deps

# ruff's checks, then mypy --strict, over the library (their settings are in pyproject.toml); both come with .[test].
lint: .venv/.installed
	.venv/bin/ruff check ipython_cudatime && .venv/bin/mypy --strict

test-current: lint browser-deps frontends
	.venv/bin/python -m pytest

test-colab: browser-deps
	@if [ -z "$(COLAB_PYTHON)" ]; then \
	  echo "SKIPPED: the Colab-like tests need Python 3.13 (none found; set COLAB_PYTHON=/path/to/python3.13)"; \
	else \
	  $(MAKE) --no-print-directory .venv-colab/.installed && \
	  echo "== Colab-like environment: $$(.venv-colab/bin/python -c 'import sys, IPython, ipywidgets, torch; print("Python", sys.version.split()[0], "IPython", IPython.__version__, "ipywidgets", ipywidgets.__version__, "torch", torch.__version__)')" && \
	  .venv-colab/bin/python -m pytest -p no:cacheprovider -m "not install and not frontends"; \
	fi

# Rewrite the stored reports (tests/expected/) from what the code prints now; review the diff.
expected: .venv/.installed
	EXPECTTEST_ACCEPT=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_reports.py tests/test_clocks.py

bench: .venv/.installed
	.venv/bin/python benchmarks/overhead.py
	.venv/bin/python benchmarks/display.py
	.venv/bin/python benchmarks/progress.py
	.venv/bin/python benchmarks/roofline.py
	.venv/bin/python benchmarks/cpu_context.py

# README's pictures, from a real run rendered in headless Chromium.
screenshots: .venv/.installed browser-deps frontends
	.venv/bin/python scripts/screenshots.py

# The wheels the GPU machine lacks (IPython, ipywidgets, the Jupyter client), in .whl/.
gpu-wheels:
	scripts/gpu-wheels

.venv-gpu/.installed: Makefile
	@test -n "$(GPU_PYTHON)" || { echo "gpu-dry-run needs Python 3.12 (set GPU_PYTHON=/path/to/python3.12)"; exit 1; }
	$(GPU_PYTHON) -m venv .venv-gpu
	.venv-gpu/bin/pip install $(PIP_QUIET) $(GPU_IMAGE)
	touch $@

# Not part of `make test`: downloads about 3 GB once (the image stand-in's torch).
gpu-dry-run: .venv-gpu/.installed
	@ls .whl/*.whl >/dev/null 2>&1 || scripts/gpu-wheels
	scripts/gpu-dry-run .venv-gpu/bin/python

# The teaching notebooks, built from notebooks/src/*.py (jupytext) and executed on this machine.
notebooks: .venv/.installed
	.venv/bin/python scripts/build-notebooks.py

clean:
	rm -rf .venv .venv-colab .venv-gpu .gpu-dry-run .venv-frontends .venv-classic
