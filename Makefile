# The two set-up commands of the README. Each installs what it needs (uv, then the locked
# environment in .venv, with bytecode compiled so the first run is as fast as the next)
# and works on a fresh clone.
PYTHON ?= python3
UV := $(PYTHON) -m uv

.PHONY: demo test install bench

install:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@$(UV) sync --frozen --quiet --compile-bytecode

demo: install
	$(UV) run --frozen clusterstack plan --all

test: install
	$(UV) run --frozen pytest -n auto --dist worksteal
	$(UV) run --frozen clusterstack iam check

bench: install
	$(UV) run --frozen python bench/plan_bench.py
