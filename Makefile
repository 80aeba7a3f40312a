PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export NO_MKDOCS_2_WARNING := 1

.PHONY: venv demo test lint docs bench profile screenshots clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

demo: venv
	$(BIN)/python examples/research_report/run_demo.py

lint: venv
	$(BIN)/ruff check prefect_waymark tests bench examples deployments docs/_hooks
	$(BIN)/ruff format --check prefect_waymark tests bench examples deployments docs/_hooks
	$(BIN)/mypy

docs: venv  # the documentation site into site/ (mkdocs-material); --strict: a broken link fails
	$(BIN)/mkdocs build --strict --site-dir site

test: lint docs
	$(BIN)/pytest -q

screenshots: venv  # the docs' Prefect UI screenshots, from the browser test
	WAYMARK_SCREENSHOTS_DIR=docs/screenshots $(BIN)/pytest -q -m ui tests/ui

bench: venv  # every bench, then one table of the goals they measure (bench/run_all.py)
	$(BIN)/python bench/run_all.py

profile: venv  # where a run's time goes, against plain Prefect (cProfile; see bench/profile_run.py)
	$(BIN)/python bench/profile_run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
