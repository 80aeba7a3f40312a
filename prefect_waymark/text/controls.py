"""Text that reaches a terminal or a Markdown file is text: control characters from a plan, a
step's output or an executor's reason (``\\e[2J`` clears a screen, ``\\e]0;...\\a`` sets a
terminal's title) are shown as ``\\u001b``-style escapes, never sent as they are. Line breaks and
tabs stay. The escape is also JSON's own spelling, so a JSON document stays valid and means the
same after it."""

from __future__ import annotations

import re

__all__ = ["visible"]

#: C0 controls but tab and line feed, DEL, and the C1 controls (U+0080-U+009F: ``\x9b`` is a CSI
#: on many terminals).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible(text: str) -> str:
    """``text`` with each control character (but ``\\n`` and ``\\t``) as a ``\\uXXXX`` escape."""
    return _CONTROLS.sub(_escape, text) if _CONTROLS.search(text) else text
