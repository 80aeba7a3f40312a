"""The status table of a big plan, drawn as rich draws it but without rich's per-row measuring
and rendering (10,000 rows took rich ~13 s): the same box, the same column widths, no colours."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

__all__ = ["LARGE_TABLE_ROWS", "fast_table"]

#: From this many rows on ``waymark status`` draws its table itself (smaller tables: rich).
LARGE_TABLE_ROWS = 500


def fast_table(
    title: str,
    headers: Sequence[str],
    rows: list[tuple[str, ...]],
    width: int,
    out: IO[str] | None = None,
) -> bool:
    """Write the table (rich's heavy-head box, title left above it); ``False`` (nothing written)
    if a row does not fit in ``width`` columns or a cell holds a character that is not printable
    (a line break, a tab, an escape sequence): rich wraps, expands or escapes those."""
    from rich.cells import cell_len

    widths = [cell_len(h) for h in headers]
    for row in rows:
        for i, value in enumerate(row):
            n = len(value) if value.isascii() else cell_len(value)
            if n > widths[i]:
                widths[i] = n
    total = sum(widths) + 3 * len(widths) + 1
    if total > width or cell_len(title) > total:
        return False
    if not all(v.isprintable() for row in rows for v in row):
        return False  # a line break, a tab, an escape sequence: rich wraps, expands or escapes

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def cells(row: Sequence[str], bar: str) -> str:
        parts = (
            f" {v}{' ' * (w - (len(v) if v.isascii() else cell_len(v)))} "
            for v, w in zip(row, widths, strict=True)
        )
        return bar + bar.join(parts) + bar

    out = out or sys.stdout
    lines = [title + " " * (total - cell_len(title))]
    lines.append(line("┏", "━", "┳", "┓"))
    lines.append(cells(headers, "┃"))
    lines.append(line("┡", "━", "╇", "┩"))
    lines.extend(cells(row, "│") for row in rows)
    lines.append(line("└", "─", "┴", "┘"))
    out.write("\n".join(lines) + "\n")
    out.flush()
    return True
