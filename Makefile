# The two set-up commands of the README. Each installs what it needs (uv, then the locked
# environment in .venv, with bytecode compiled so the first run is as fast as the next:
# site-packages by uv, our editable src/ and the tests' helpers by compileall) and works on a
# fresh clone.
PYTHON ?= python3
# One pytest worker more than CPUs: the suite waits on child interpreters, git and locks, and
# the extra worker fills those waits (2-core machine: 90.7 s with 2 workers, 83.9 s with 3).
WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
UV := $(PYTHON) -m uv

.PHONY: demo test install bench

install:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@$(UV) sync --frozen --quiet --compile-bytecode
	@$(UV) run --frozen python -m compileall -q src tests

demo: install
	$(UV) run --frozen clusterstack plan --all

# pytest may write its assertion-rewritten test modules (and any .pyc compileall missed) even
# where the environment sets PYTHONDONTWRITEBYTECODE: a second run then skips the rewriting.
test: install
	env -u PYTHONDONTWRITEBYTECODE $(UV) run --frozen pytest -n $(WORKERS) --dist worksteal
	$(UV) run --frozen clusterstack iam check

bench: install
	$(UV) run --frozen python bench/plan_bench.py
