# loaderlab: `make lab` to learn, `make test` to check everything.
# Every target runs tools/course.py (standard library only), which does the same on Windows
# without make: `py tools/course.py lab`. `python3 tools/course.py --help` lists the commands.
#
# Variables: PYTHON (the Python that creates .venv; 3.11-3.13), OFFLINE=1 (install from
# wheelhouse/ only), NB=notebooks/03_...ipynb (make execute, make record), CHECK=1 (make labs,
# make claims: only check), N=3 (make soak), LOAD=1 (make soak and the test tiers: one core
# kept busy meanwhile, a machine shared with another job), TORCH_INDEX=URL or default (where
# torch comes from, see docs/install.md). `make -n X` shows the course.py line; add --dry-run
# to it to see its commands.
PYTHON ?= python3
COURSE = $(PYTHON) tools/course.py
OFFLINE_FLAG = $(if $(filter 1,$(OFFLINE)),--offline)
LOAD_FLAG = $(if $(filter 1,$(LOAD)),--load)
N ?= 3
LOAD ?= 0

.PHONY: setup lab preflight wheelhouse student test check test-spawn test-machines unit notebooks \
	execute record labs claims html soak lint clean

# .venv with what the notebooks and labs import (requirements.txt), the kernel and JupyterLab's
# classroom settings; again only when those inputs change. The maintainers' targets below also
# install requirements-dev.txt (pytest, nbval, ruff, selenium, mkdocs) on first use.
setup:
	$(COURSE) setup $(OFFLINE_FLAG)

lab:
	$(COURSE) lab $(OFFLINE_FLAG)

# Is this machine ready? Runs before setup too (standard library checks); after it, the deep ones.
preflight:
	$(COURSE) preflight

# PLATFORMS=all (or linux-x86_64,macos-arm64,windows-amd64) and PYTHONS=3.11,3.12,3.13: a room's
wheelhouse:
	$(COURSE) wheelhouse $(if $(PLATFORMS),--platforms $(PLATFORMS)) $(if $(PYTHONS),--pythons $(PYTHONS))

student:
	$(COURSE) student

# The test tiers (tools/course.py's CHECK, COURSE, TIMING and RELEASE say what each runs).
test:
	$(COURSE) test $(LOAD_FLAG)

check:
	$(COURSE) check $(LOAD_FLAG)

test-spawn:
	$(COURSE) test-spawn $(LOAD_FLAG)

test-machines:
	$(COURSE) test-machines

unit:
	$(COURSE) unit $(LOAD_FLAG)

notebooks:
	$(COURSE) notebooks $(LOAD_FLAG)

execute:
	$(COURSE) execute $(NB)

# The course's record: each notebook alone on a quiet machine, measured (tools/record.py).
record:
	$(COURSE) record $(NB)

labs:
	$(COURSE) labs $(if $(filter 1,$(CHECK)),--check)

claims:
	$(COURSE) claims $(if $(filter 1,$(CHECK)),--check)

html:
	$(COURSE) html

soak:
	$(COURSE) soak --runs $(N) $(LOAD_FLAG)

lint:
	$(COURSE) lint

clean:
	$(COURSE) clean
