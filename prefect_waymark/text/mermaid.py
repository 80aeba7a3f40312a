"""Text inside a Mermaid graph: a label from user input (a step's title, a milestone's name)
that can neither end its statement nor bring markup or directives with it.

Mermaid reads a quoted label ``["..."]`` up to the next ``"``, turns ``#<number>;`` into the
character of that number, and draws the label as HTML; ``%%{...}%%`` anywhere in the text is a
directive (it can change the graph's configuration), and a line break ends the statement (in a
Markdown fence, a line that starts with backticks can end the block). So :func:`label` keeps
letters, digits, spaces and a few harmless punctuation marks as they are, writes every other
character as its number (``<`` is ``#60;``, ``"`` is ``#34;``: drawn as the character, never
read as markup or syntax), turns any run of whitespace (line breaks too) into one space and
drops control and format characters. The result is one line of ASCII.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["label"]

#: Punctuation kept as it is: none of it means anything to Mermaid inside a quoted label, to
#: HTML or to a Markdown fence.
_PLAIN = frozenset(" -_.,:/!?'+*=@~$")
#: Characters dropped: control, format, surrogate, private-use and unassigned code points.
_DROPPED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})


_SAFE = re.compile(r"[A-Za-z0-9 \-_.,:/!?'+*=@~$]*")
_UNSAFE = re.compile(r"[^A-Za-z0-9 \-_.,:/!?'+*=@~$]")


def _char(ch: str) -> str:
    if ch.isascii() and (ch.isalnum() or ch in _PLAIN):
        return ch
    if unicodedata.category(ch) in _DROPPED:
        return ""
    return f"#{ord(ch)};"


def label(text: object, limit: int = 60) -> str:
    """``text`` as a quoted Mermaid label's content: on one line, cut to ``limit`` characters
    (before escaping; a cut ends with ``…``), every character outside letters, digits, space
    and ``-_.,:/!?'+*=@~$`` written as ``#<number>;``."""
    words = " ".join(str(text if text is not None else "").split())
    if _SAFE.fullmatch(words) is None:  # else: plain ASCII, as most ids and titles are
        words = "".join(ch for ch in words if unicodedata.category(ch) not in _DROPPED)
        words = " ".join(words.split())  # a dropped character between two spaces
    if len(words) > limit:
        words = words[: max(0, limit - 1)].rstrip() + "…"
    return _UNSAFE.sub(lambda m: _char(m.group()), words)
