"""Read a Markdown checklist (``TASKS.md``, ``TODO.md``, a spec-driven ``tasks.md``).

An item is ``- [ ] text`` (``*`` / ``+`` bullets and ``1.`` lists too): ``[x]`` / ``[X]`` is done,
``[-]`` / ``[~]`` / ``[/]`` in progress (pending: an import records only what is done), any other
mark pending with a warning. An item nested under another, by indentation or by its number
(``2.1`` under ``2.``), is its child: the parent waits for its children. Other items depend on
nothing. The nearest heading (``#`` .. ``######``) is an item's milestone. Plain bullets and text
indented under an item are its instructions; references such as ``_Requirements: 1.2, 3.4_``
(trailing or on their own line) are kept as acceptance entries. Text in fenced code blocks and
YAML front matter is ignored.

Step ids: ``task-2.1`` for a numbered item, ``T001`` for a spec-kit id, else the item's text as
a slug (``write-the-report``), ``-2`` added to a repeat.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .source import SourceDoc, SourceItem, grouped, project_name, slug, source_error

__all__ = ["read_markdown"]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_ITEM = re.compile(r"^([ \t]*)(?:[-*+]|\d+[.)])[ \t]+\[(.)\](?:[ \t]+(.*))?$")
_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(.*)$")
_NUMBER = re.compile(r"^(\d+(?:\.\d+)+\.?|\d+\.)[ \t]+")
_SPECKIT = re.compile(r"^(T\d{2,})\b[:.]?[ \t]*")
_LABEL = r"[A-Z][A-Za-z ]{0,40}"
_REF = re.compile(rf"(?:^|\s)_({_LABEL}):[ \t]*((?:(?!\s_{_LABEL}:).)+?)_[ \t]*$")

DONE = frozenset({"x", "X"})
STARTED = frozenset({"-", "~", "/"})


@dataclass
class _Item:
    line: int
    indent: int
    mark: str
    title: str
    number: str | None
    given_id: str | None
    milestone: str | None
    parent: int | None
    details: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)


def _peel_refs(text: str) -> tuple[str, list[str]]:
    """``text`` without its trailing ``_Label: value_`` references, and those references."""
    refs: list[str] = []
    while (m := _REF.search(text)) is not None:
        refs.insert(0, f"{m.group(1).strip()}: {m.group(2).strip()}")
        text = text[: m.start()].rstrip()
    return text, refs


class _Parser:
    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[_Item] = []
        self.stack: list[tuple[int, int]] = []  # (indent, item index)
        self.numbers: dict[str, int] = {}
        self.milestone: str | None = None
        self.first_heading: str | None = None
        self.last: int | None = None
        self.warnings: list[str] = []

    def heading(self, text: str, level: int) -> None:
        text = text.strip()
        if not text:
            return
        if level == 1 and self.first_heading is None:
            self.first_heading = text
        self.milestone = text
        self.stack.clear()
        self.numbers.clear()
        self.last = None

    def item(self, n: int, indent: int, mark: str, raw: str) -> None:
        text, refs = _peel_refs(raw.strip())
        number = given = None
        if (m := _NUMBER.match(text)) is not None:
            number, text = m.group(1).rstrip("."), text[m.end() :]
        elif (m := _SPECKIT.match(text)) is not None:
            given, text = m.group(1), text[m.end() :]
        if not text.strip() and number is None and given is None:
            self.warnings.append(f"{self.file}:{n}: an empty checklist item: skipped")
            self.last = None
            return
        while self.stack and self.stack[-1][0] >= indent:
            self.stack.pop()
        parent = self.stack[-1][1] if self.stack else None
        if parent is None and number is not None and "." in number:
            parent = self.numbers.get(number.rsplit(".", 1)[0])
        idx = len(self.items)
        self.items.append(
            _Item(n, indent, mark, text.strip(), number, given, self.milestone, parent, refs=refs)
        )
        self.stack.append((indent, idx))
        if number is not None:
            self.numbers.setdefault(number, idx)
        self.last = idx

    def detail(self, indent: int, line: str) -> None:
        """A line under the last item: part of its instructions, or a reference."""
        if self.last is None or indent <= self.items[self.last].indent:
            self.last = None  # prose at the item's level ends it
            return
        it = self.items[self.last]
        m = _BULLET.match(line)
        text = (m.group(1) if m else line).strip()
        rest, refs = _peel_refs(text)
        if refs:
            it.refs += refs
        if rest:
            it.details.append(f"- {rest}" if m else rest)

    def parse(self, text: str) -> None:
        lines = text.split("\n")
        start = 0
        if lines and lines[0].strip() == "---":  # YAML front matter
            for i in range(1, len(lines)):
                if lines[i].strip() in ("---", "..."):
                    start = i + 1
                    break
        fence: str | None = None
        for n in range(start, len(lines)):
            line = lines[n].expandtabs(4)
            if fence is not None:
                s = line.strip()
                if s.startswith(fence) and not s.lstrip(fence[0]).strip():
                    fence = None
                continue
            if (f := _FENCE.match(line)) is not None:
                fence = f.group(1)
                continue
            if not line.strip():
                continue
            if (h := _HEADING.match(line)) is not None:
                self.heading(h.group(2), len(h.group(1)))
            elif (m := _ITEM.match(line)) is not None:
                self.item(n + 1, len(m.group(1)), m.group(2), m.group(3) or "")
            else:
                self.detail(len(line) - len(line.lstrip(" ")), line)


def _step_ids(items: list[_Item]) -> list[str]:
    out: list[str] = []
    taken: set[str] = set()
    for i, it in enumerate(items, 1):
        if it.number is not None:
            base = f"task-{it.number}"
        elif it.given_id is not None:
            base = it.given_id
        else:
            base = slug(it.title) or f"item-{i}"
        sid, k = base, 1
        while sid in taken:
            k += 1
            sid = f"{base}-{k}"
        taken.add(sid)
        out.append(sid)
    return out


def _status(mark: str) -> str:
    if mark in DONE:
        return "done"
    if mark == " ":
        return "open"
    return "in progress" if mark in STARTED else f"[{mark}]"


def read_markdown(path: Path, file: str, text: str) -> SourceDoc:
    """Read a Markdown checklist."""
    p = _Parser(file)
    p.parse(text)
    if not p.items:
        raise source_error(
            file, "", "no checklist items found; expected Markdown items such as '- [ ] task'"
        )
    ids = _step_ids(p.items)
    items: list[SourceItem] = []
    started: list[str] = []
    odd: list[str] = []
    for it, sid in zip(p.items, ids, strict=True):
        status = _status(it.mark)
        if it.mark in STARTED:
            started.append(sid)
        elif status.startswith("["):
            odd.append(sid)
        title = it.title or sid
        body = "\n".join(it.details)
        items.append(
            SourceItem(
                step_id=sid,
                loc="",
                line=it.line,
                title=title,
                instructions=f"{title}\n\n{body}" if body else title,
                acceptance=it.refs,
                done=it.mark in DONE,
                status=status,
                parent=ids[it.parent] if it.parent is not None else None,
                milestone=it.milestone,
            )
        )
    warnings = list(p.warnings)
    if started:
        warnings.append(
            f"{file}: "
            + grouped(
                "items in progress",
                started,
                "imported as pending (an import records only what is done)",
            )
        )
    if odd:
        warnings.append(
            f"{file}: "
            + grouped(
                "items with a mark other than [ ], [x], [-], [~] or [/]",
                odd,
                "imported as pending",
            )
        )
    folder = path.resolve().parent
    name = folder.name if not folder.name.startswith(".") else project_name(path)
    return SourceDoc(
        format="markdown",
        file=file,
        items=items,
        skipped={},
        warnings=warnings,
        title=p.first_heading or path.name,
        plan_id_hint=slug(name, 100),
        detail=f"{len(items)} items",
    )
