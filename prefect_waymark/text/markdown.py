"""Small Markdown builders for the artifacts: text from steps and commands is arbitrary, so
table cells, inline code and code blocks are escaped here, in one place."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ledger.progress_view import PlanView, StepView

__all__ = [
    "blocked_why",
    "cell",
    "code",
    "code_block",
    "first_line",
    "last_lines",
    "link",
    "quote",
    "table",
]

_CELL_MAX = 200


def first_line(text: str | None, limit: int = _CELL_MAX) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in (text or "").splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def blocked_why(view: PlanView, step: StepView, limit: int = 160) -> str:
    """Why a blocked step waits: the steps before it that stopped (with their statuses), else
    the reason a check-in gave (``waymark block --reason`` / ``--on``)."""
    if step.blocked_by:
        return "waits for " + ", ".join(
            f"{code(d)} ({view.step(d).status})" for d in step.blocked_by
        )
    return "blocked: " + first_line(step.error, limit) if step.error else "blocked"


def last_lines(text: str | None, count: int = 15, width: int = 300) -> str:
    """The last ``count`` non-blank-trailing lines of ``text``, each cut to ``width``."""
    lines = (text or "").rstrip().splitlines()[-count:]
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in lines)


def cell(value: object, limit: int = _CELL_MAX) -> str:
    """``value`` on one line, at most ``limit`` characters (:func:`table` escapes pipes)."""
    text = " ".join(str(value if value is not None else "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def code(value: object) -> str:
    """Inline code that survives backticks in ``value``."""
    text = " ".join(str(value).split())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(text: str, lang: str = "text") -> str:
    """A fenced block longer than any backtick run inside ``text``."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def quote(text: str) -> str:
    """A block quote of ``text`` (every line)."""
    return "\n".join(f"> {line}" if line else ">" for line in text.rstrip().splitlines())


def link(text: str, url: str | None) -> str:
    """``[text](url)``, or just ``text`` without a URL."""
    return f"[{text}]({url})" if url else text


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table. Every value is put on one line and its pipes escaped (also inside
    inline code, as GitHub-flavoured tables need); build values with :func:`cell`, :func:`code`
    or :func:`link`."""

    def one(value: object) -> str:
        return " ".join(str(value if value is not None else "").split()).replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(one(v) for v in row) + " |" for row in rows]
    return lines
