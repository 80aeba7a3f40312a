"""A big plan's status table is drawn without rich's per-row work, exactly as rich draws it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from prefect_waymark.cli.status_output import print_table
from prefect_waymark.cli.status_table import LARGE_TABLE_ROWS
from prefect_waymark.ledger.progress_view import build_view
from prefect_waymark.plan.loader import validate_plan_data

OWNERS = [None, "bench", "Zoë", "張偉", "a-much-longer-owner-name"]


def _view(n: int, title: str = "a big plan") -> object:
    steps = [
        {
            "id": f"s{i:04d}",
            "run": "true",
            "branch": "docs" if i % 7 == 3 else "main",
            **({"owner": OWNERS[i % len(OWNERS)]} if OWNERS[i % len(OWNERS)] else {}),
            **({"depends_on": [f"s{i - 1:04d}"]} if i else {}),
        }
        for i in range(n)
    ]
    spec = validate_plan_data({"plan_id": "big", "title": title, "steps": steps})
    return build_view(spec, {})


@pytest.mark.parametrize("title", ["a big plan", "ö" * 90])
def test_big_table_is_the_table_rich_draws(capsys: pytest.CaptureFixture[str], title: str) -> None:
    view = _view(LARGE_TABLE_ROWS + 20, title)
    rich_out = io.StringIO()
    print_table(view, {}, Console(width=120, file=rich_out))  # type: ignore[arg-type]
    print_table(view, {})  # type: ignore[arg-type]
    fast = capsys.readouterr().out
    assert fast == rich_out.getvalue()
    assert fast.count("\n") > LARGE_TABLE_ROWS
