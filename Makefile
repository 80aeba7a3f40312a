PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The lowest Prefect declared, in an environment of its own (constraints/prefect-floor.txt).
FLOOR_VENV := .venv-floor
FLOOR_PINS := constraints/prefect-floor.txt
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export NO_MKDOCS_2_WARNING := 1

.PHONY: venv demo test test-floor lint docs bench profile screenshots clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# Built anew when the project's dependencies or the pins change: a downgrade leaves nothing behind.
$(FLOOR_VENV)/.installed: pyproject.toml $(FLOOR_PINS)
	rm -rf $(FLOOR_VENV)
	$(PY) -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/pip install -q -e '.[postgres,mcp]' -r $(FLOOR_PINS)
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
	$(MAKE) --no-print-directory test-floor

test-floor: $(FLOOR_VENV)/.installed  # the tests marked `floor` on the lowest Prefect declared
	$(FLOOR_VENV)/bin/pytest -q -p no:cacheprovider -m floor tests

screenshots: venv  # the docs' Prefect UI screenshots, from the browser test
	WAYMARK_SCREENSHOTS_DIR=docs/screenshots $(BIN)/pytest -q -m ui tests/ui

bench: venv  # every bench, then one table of the goals they measure (bench/run_all.py)
	$(BIN)/python bench/run_all.py

profile: venv  # where a run's time goes, against plain Prefect (cProfile; see bench/profile_run.py)
	$(BIN)/python bench/profile_run.py

clean:
	rm -rf $(VENV) $(FLOOR_VENV) .pytest_cache .mypy_cache .ruff_cache site
