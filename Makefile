# The two set-up commands of the README. Each installs what it needs and says so as it goes:
# uv, then the locked environment in .venv, then the bytecode of what the commands load — the
# installed modules recorded in setup/loaded-modules.txt (what the commands load, not all ~11,000:
# compiling all cost ~41 s on a fresh clone) and our src/ — so the first run is about as fast as
# the next (setup/modules.py; docs/performance.md "Set-up"). Works on a fresh clone.
PYTHON ?= python3
# One pytest worker more than CPUs: the suite waits on child interpreters, git and locks, and
# the extra worker fills those waits (2-core machine: 90.7 s with 2 workers, 83.9 s with 3).
WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
UV := $(PYTHON) -m uv

.PHONY: demo test install bench

install:
	@$(UV) --version >/dev/null 2>&1 || { echo "install: uv (pip install uv)…"; $(PYTHON) -m pip install --quiet uv; }
	@echo "install: the locked environment in .venv (uv sync --frozen: from the package cache, or downloaded the first time)…"
	@$(UV) sync --frozen --quiet
	@$(UV) run --frozen python setup/modules.py compile

demo: install
	@echo "demo: planning every shipped stack offline (the real programs under Pulumi's mock runtime)…"
	$(UV) run --frozen clusterstack plan --all

# pytest may write its assertion-rewritten test modules (and any .pyc not compiled ahead) even
# where the environment sets PYTHONDONTWRITEBYTECODE: a second run then skips the rewriting.
# The type checker (pyright, pinned in the dev group; [tool.pyright] in pyproject.toml) runs over
# src/ beside the suite, started first since it is the longest single job; either failing fails.
test: install
	@echo "test: pyright over src/ in the background, the test suite beside it…"
	@log=$$(mktemp); $(UV) run --frozen pyright src >$$log 2>&1 & checker=$$!; \
	env -u PYTHONDONTWRITEBYTECODE $(UV) run --frozen pytest -n $(WORKERS) --dist worksteal; rc=$$?; \
	if wait $$checker; then echo "pyright: $$(tail -n 1 $$log)"; \
	else cat $$log; echo "test: pyright found errors in src/ (above): fix them (the types, not an ignore)"; rc=1; fi; \
	rm -f $$log; exit $$rc
	$(UV) run --frozen clusterstack iam check

bench: install
	$(UV) run --frozen python bench/plan_bench.py
