"""Lists of names (step ids, most often) on one line: a summary, a view's entry or a status line
shows at most :data:`LIST_MAX` of them, then how many more (a run of 2,002 steps once printed
2,002 ids on one line, twice). The whole list stays where it is kept: the ledger, the marker
file, ``--json``."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LIST_MAX", "capped_list"]

#: The most names a line shows.
LIST_MAX = 20


def capped_list(names: Sequence[str], limit: int = LIST_MAX) -> str:
    """``names`` joined with ``", "``: the first ``limit``, then ``… and K more``."""
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f" … and {len(names) - limit:,} more"
    return shown
