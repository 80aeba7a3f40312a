"""The README and the docs site stay true: a short README whose commands and links exist, and an
environment-variable table that names every ``WAYMARK_*`` variable the package reads or sets.

The site itself is built with ``mkdocs build --strict`` by ``make docs`` (part of ``make test``):
a broken link or anchor fails it, and the CLI reference and the plan file's field tables are
generated from the code at build time (docs/_hooks/cli_reference.py).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ENV_PAGE = ROOT / "docs" / "reference" / "environment.md"


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    head = "\n".join(lines[:6])
    assert "make demo" in head and "make test" in head


def test_the_readmes_links_into_the_repository_exist() -> None:
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert targets
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert missing == []


def _waymark_variables() -> set[str]:
    """Every ``WAYMARK_*`` name the package reads (a string literal) or sets for a step's
    command (a keyword argument)."""
    names: set[str] = set()
    pattern = re.compile(r"^WAYMARK_[A-Z_]+$")
    for path in (ROOT / "prefect_waymark").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if pattern.match(node.value):
                    names.add(node.value)
            elif isinstance(node, ast.keyword) and node.arg and pattern.match(node.arg):
                names.add(node.arg)
    return names


def test_every_waymark_variable_is_in_the_environment_page() -> None:
    page = ENV_PAGE.read_text(encoding="utf-8")
    documented = set(re.findall(r"`(WAYMARK_[A-Z_]+)`", page))
    found = _waymark_variables()
    assert {"WAYMARK_LEDGER_URL", "WAYMARK_STEP_ID"} <= found  # the scan sees both kinds
    assert sorted(found - documented) == []
