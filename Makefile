# loaderlab: `make lab` to learn, `make test` to check everything.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.loaderlab-installed

.PHONY: setup lab test test-spawn unit notebooks execute labs lint soak html clean

# Create the virtual environment, install pinned requirements and the package, register the
# Jupyter kernel and warm matplotlib's font cache. Re-runs when the requirements change.
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name loaderlab --display-name "Python (loaderlab)" >/dev/null
	$(PY) -c "import matplotlib.pyplot"
	touch $@

setup: $(STAMP)

lab: setup
	MPLBACKEND= $(PY) tools/lab_server.py

# Everything: lint first (seconds), unit tests (2 processes), nbval on notebooks/ and solutions/
# one at a time (their timing checks and the 45 s budget assume a notebook does not share the
# CPU with another), then every notebook and solution again with workers started by spawn (as
# on macOS and Windows; 2 at a time, outputs not compared). Stops at the first failing step.
test: setup
	$(PY) -m ruff check loaderlab tests tools docs notebooks solutions conftest.py
	LOADERLAB_TEST_MODE=1 $(PY) -m pytest -n 2 --dist loadscope tests
	LOADERLAB_TEST_MODE=1 $(PY) -m pytest notebooks solutions
	LOADERLAB_TEST_MODE=1 $(PY) -m pytest -n 2 --dist load -m spawn --durations=8 tests/test_course_guarantees.py

# Only the spawn run of `make test`.
test-spawn: setup
	LOADERLAB_TEST_MODE=1 $(PY) -m pytest -n 2 --dist load -m spawn --durations=8 tests/test_course_guarantees.py

unit: setup
	LOADERLAB_TEST_MODE=1 $(PY) -m pytest tests

notebooks: setup
	LOADERLAB_TEST_MODE=1 $(PY) -m pytest notebooks solutions

execute: setup
	$(PY) tools/execute_notebooks.py $(NB)

labs: setup
	$(PY) tools/make_labs.py

# Static site of the executed course under site/ (no re-execution; reads offline).
html: setup
	$(PY) tools/build_site.py

# Run the nbval suite N times (default 3); report every cell that differed in any run.
N ?= 3
soak: setup
	$(PY) tools/soak.py $(N)

lint: setup
	$(PY) -m ruff check loaderlab tests tools docs notebooks solutions conftest.py

clean:
	rm -rf $(VENV) site .pytest_cache
