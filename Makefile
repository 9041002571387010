# The two set-up commands of the README. Each installs what it needs (uv, then the locked
# environment in .venv) and works on a fresh clone.
PYTHON ?= python3
UV := $(PYTHON) -m uv

.PHONY: demo test install bench

install:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@$(UV) sync --frozen --quiet

demo: install
	$(UV) run --frozen clusterstack plan --all

test: install
	$(UV) run --frozen pytest
	$(UV) run --frozen clusterstack iam check

bench: install
	$(UV) run --frozen python bench/plan_bench.py
