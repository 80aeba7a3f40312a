"""Read a plan file's text into data within fixed limits, refusing duplicate keys.

Every plan file, whatever its shape, is read in bounded time and memory: its size, its nesting
depth and the number of values it holds (YAML aliases counted each time they are used, so an
alias bomb is refused before it is expanded) are limited, each limit named in its error. The YAML
document is checked on its event stream (one event at a time, nothing composed) before it is
loaded; the JSON document after ``json.loads`` (which keeps no aliases), without recursion.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from ..errors import PlanError, PlanProblem
from .cache_files import MAX_PLAN_BYTES

__all__ = [
    "MAX_DEPTH",
    "MAX_PLAN_BYTES",
    "MAX_PROBLEMS",
    "MAX_QUOTE",
    "MAX_VALUES",
    "clip",
    "line_numbers",
    "load_json",
    "load_yaml",
    "read_plan_bytes",
    "shown",
]


MAX_DEPTH = 64
"""How deeply mappings and lists may nest (a plan needs about six levels)."""
MAX_VALUES = 250_000
"""How many values (mappings, lists, scalars) a plan may hold, YAML aliases expanded."""
MAX_QUOTE = 200
"""At most this many characters of a bad value are quoted in an error message."""
MAX_PROBLEMS = 100
"""At most this many problems are listed; the rest are counted."""

_Loc = tuple[int | str, ...]

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = MAX_QUOTE
_REPR.maxother = MAX_QUOTE
_REPR.maxlong = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 8


def clip(text: str, limit: int = MAX_QUOTE) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_URL_PASSWORD = re.compile(r"(://[^/@:\s'\"]*):[^@/\s'\"]*@")


def shown(value: Any) -> str:
    """The repr of a value for an error message: bounded in time and at most ~200 characters."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still named
        text = f"<{type(value).__name__}>"
    # A password in a URL (scheme://user:PASSWORD@host) is never echoed back.
    return clip(_URL_PASSWORD.sub(r"\1:***@", text))


def _fmt_path(loc: _Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _refuse(source: str, loc: _Loc, message: str, line: int | None = None) -> PlanError:
    return PlanError([PlanProblem(source, _fmt_path(loc), message, line)])


def read_plan_bytes(path: Any, source: str) -> bytes:
    """The file's bytes; refuse a file over :data:`MAX_PLAN_BYTES` without reading all of it."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_PLAN_BYTES + 1)
    if len(data) > MAX_PLAN_BYTES:
        raise _refuse(
            source, (), f"the file is larger than the plan file limit of {MAX_PLAN_BYTES:,} bytes"
        )
    return data


def _too_many(source: str, loc: _Loc, line: int | None, aliases: bool) -> PlanError:
    what = f"holds more than {MAX_VALUES:,} values (the limit on a plan's size"
    what += ", YAML aliases counted each time they are used)" if aliases else ")"
    return _refuse(source, loc, f"the document {what}", line)


def _too_deep(source: str, loc: _Loc, line: int | None) -> PlanError:
    msg = f"nested more than {MAX_DEPTH} levels deep (the limit on a plan's nesting)"
    path = _fmt_path(loc[:6]) + ("…" if len(loc) > 6 else "")  # where it starts to go deep
    return PlanError([PlanProblem(source, path, msg, line)])


class _Frame:
    """One open mapping or list of the event stream."""

    __slots__ = (
        "anchor",
        "chars",
        "component",
        "expect_key",
        "height",
        "index",
        "is_map",
        "keys",
        "total",
    )

    def __init__(self, is_map: bool, anchor: str | None, total: int, chars: int) -> None:
        self.is_map = is_map
        self.anchor = anchor
        self.total = total  # values counted before this one started
        self.chars = chars  # scalar characters counted before this one started
        self.height = 0  # levels of collections below this one
        self.index = 0
        self.expect_key = True
        self.component: int | str = 0
        self.keys: dict[tuple[str, str], int] = {}


_Lookup = Callable[[list[_Loc]], dict[_Loc, int]]
"""Gives the line of each field path asked (see :func:`line_numbers`)."""

_RESOLVER = yaml.resolver.Resolver()


def _key_identity(event: yaml.ScalarEvent) -> tuple[str, str]:
    """A mapping key as YAML compares it: its resolved tag and its text."""
    tag = event.tag
    if tag is None or tag == "!":
        resolve: Callable[..., str] = _RESOLVER.resolve
        tag = resolve(yaml.ScalarNode, event.value, event.implicit)
    return (tag, event.value)


def _scan_yaml(text: str, source: str, loader: Any, build: Any = None) -> list[PlanProblem]:
    """Walk the event stream once: refuse a document over a limit, list its duplicate keys;
    feed each event to ``build`` (a :class:`~.yaml_build.ValueBuilder`)."""
    stack: list[_Frame] = []
    anchors: dict[str, tuple[int, int, int]] = {}  # name -> (values, chars, height) of its node
    total = chars = 0
    aliases = False
    dups: list[PlanProblem] = []

    def loc() -> _Loc:
        return tuple(f.component for f in stack)

    node_events = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent)
    events: Iterator[Any] = yaml.parse(text, Loader=loader)
    for event in events:
        if build is not None:
            build.feed(event)
        cls = type(event)
        if cls in node_events or cls is yaml.MappingStartEvent:
            line = event.start_mark.line + 1
            if stack:
                top = stack[-1]
                if not top.is_map:
                    top.component = top.index
                    top.index += 1
                elif top.expect_key:
                    top.expect_key = False
                    if cls is yaml.ScalarEvent:
                        top.component = event.value
                        if event.value != "<<" or event.tag is not None:
                            ident = _key_identity(event)
                            first = top.keys.get(ident)
                            if first is None:
                                top.keys[ident] = line
                            elif len(dups) < MAX_PROBLEMS:
                                dups.append(
                                    PlanProblem(
                                        source,
                                        _fmt_path(loc()),
                                        f"duplicate key {shown(event.value)} (first at line "
                                        f"{first}); remove one: YAML would silently keep the last",
                                        line,
                                    )
                                )
                    else:
                        top.component = "?"
                else:
                    top.expect_key = True
            total += 1
            if cls is yaml.AliasEvent:
                aliases = True
                name = event.anchor
                if any(f.anchor == name for f in stack):
                    raise _refuse(
                        source, loc(), f"the YAML alias *{clip(name)} refers to itself", line
                    )
                size, size_chars, height = anchors.get(name, (1, 0, 0))
                total += size - 1
                chars += size_chars
                if stack:
                    stack[-1].height = max(stack[-1].height, height)
                if len(stack) + height > MAX_DEPTH:
                    raise _too_deep(source, loc(), line)
            elif cls is yaml.ScalarEvent:
                chars += len(event.value)
                if event.anchor is not None:
                    anchors[event.anchor] = (1, len(event.value), 0)
            else:
                stack.append(_Frame(cls is yaml.MappingStartEvent, event.anchor, total - 1, chars))
                if len(stack) > MAX_DEPTH:
                    raise _too_deep(source, loc()[:-1], line)
            if total > MAX_VALUES:
                raise _too_many(source, loc(), line, aliases)
            if chars > MAX_PLAN_BYTES:  # only aliases can expand the text past the file limit
                raise _refuse(
                    source,
                    loc(),
                    f"with its YAML aliases expanded the document holds more than "
                    f"{MAX_PLAN_BYTES:,} characters (the plan file limit)",
                    line,
                )
        elif cls is yaml.SequenceEndEvent or cls is yaml.MappingEndEvent:
            done = stack.pop()
            height = done.height + 1
            if stack:
                stack[-1].height = max(stack[-1].height, height)
            if done.anchor is not None:
                anchors[done.anchor] = (total - done.total, chars - done.chars, height)
        elif cls is yaml.DocumentStartEvent:
            anchors.clear()
    return dups


def load_yaml(text: str, source: str, loader: Any, syntax_problem: Callable[..., Any]) -> Any:
    """The YAML document's data, or :class:`PlanError` (syntax, a limit, duplicate keys)."""
    from .yaml_build import ValueBuilder

    build = ValueBuilder(loader)
    try:
        dups = _scan_yaml(text, source, loader, build)
        if dups:
            raise PlanError(dups)
        if build.done:  # built from the scan's events: the same values as yaml.load's
            return build.value
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader (yaml.SafeLoader's)
    except yaml.YAMLError as exc:
        raise PlanError([syntax_problem(source, exc)]) from None
    except RecursionError:  # only the pure-Python loader recurses; libyaml stops at 1,000 levels
        raise _too_deep(source, (), None) from None
    except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
        # A value the YAML constructor cannot build: a date like 2024-13-45, a 5,000-digit int.
        msg = f"YAML value cannot be read: {clip(str(exc))}"
        raise PlanError([PlanProblem(source, "", msg)]) from None
    finally:
        build.close()


class _Pairs(dict[str, Any]):
    """A JSON object that had duplicate keys; ``dups`` names them."""

    dups: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _Pairs(obj)
    marked.dups = []
    for key, _ in pairs:
        if key in seen and key not in marked.dups:
            marked.dups.append(key)
        seen.add(key)
    return marked


def _check_json(data: Any, source: str, lookup: _Lookup) -> None:
    """Refuse nesting over :data:`MAX_DEPTH`, over :data:`MAX_VALUES` values and duplicate keys,
    walking without recursion."""
    dup_locs: list[_Loc] = []
    total = 1
    work: list[tuple[Any, _Loc]] = [(data, ())]
    while work:
        value, loc = work.pop()
        if len(loc) >= MAX_DEPTH:
            raise _too_deep(source, loc, None)
        total += len(value)
        if total > MAX_VALUES:
            raise _too_many(source, loc, None, aliases=False)
        if isinstance(value, _Pairs) and len(dup_locs) < MAX_PROBLEMS:
            dup_locs += [(*loc, key) for key in value.dups]
        if isinstance(value, dict):
            work.extend((v, (*loc, k)) for k, v in value.items() if isinstance(v, dict | list))
        else:
            work.extend((v, (*loc, i)) for i, v in enumerate(value) if isinstance(v, dict | list))
    if dup_locs:
        dup_locs = dup_locs[:MAX_PROBLEMS]
        lines = lookup(dup_locs)
        msg = "duplicate key {}; remove one: JSON would silently keep the last"
        raise PlanError(
            [
                PlanProblem(source, _fmt_path(at), msg.format(shown(at[-1])), lines.get(at))
                for at in dup_locs
            ]
        )


def load_json(text: str, source: str, lookup: _Lookup) -> Any:
    """The JSON document's data, or :class:`PlanError` (syntax, a limit, duplicate keys)."""
    try:
        data = json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        msg = f"JSON syntax error: {exc.msg}"
        raise PlanError([PlanProblem(source, "", msg, exc.lineno)]) from None
    except RecursionError:
        raise _too_deep(source, (), None) from None
    except ValueError as exc:  # a number over Python's 4,300-digit limit
        msg = f"JSON value cannot be read: {clip(str(exc))}"
        raise PlanError([PlanProblem(source, "", msg)]) from None
    if isinstance(data, dict | list):
        _check_json(data, source, lookup)
    return data


def line_numbers(
    text: str, locs: list[_Loc], loader: Any, *, stop_early: bool = True
) -> dict[_Loc, int]:
    """The 1-based line of each field path in ``locs`` and of each of its parents, from one pass
    over the YAML (or JSON) text's event stream: nothing is composed, and only the branches that
    lead to a path asked for are followed. A key's path takes the key's line (the last one for a
    duplicate key, unless ``stop_early``: then the pass ends once every path asked is found); a
    path inside an aliased node is not found (its parents are)."""
    wanted = {loc[:end] for loc in locs for end in range(len(loc) + 1)}
    exact = set(locs)
    missing = len(exact)
    found: dict[_Loc, int] = {}
    # Per open collection: [its path or None (not asked for), is a mapping, expects a key, the
    # current key or next index].
    stack: list[list[Any]] = []
    events: Iterator[Any] = yaml.parse(text, Loader=loader)
    try:
        for event in events:
            cls = type(event)
            if cls is yaml.SequenceEndEvent or cls is yaml.MappingEndEvent:
                stack.pop()
                continue
            if cls is not yaml.ScalarEvent and cls is not yaml.AliasEvent:
                if cls is not yaml.SequenceStartEvent and cls is not yaml.MappingStartEvent:
                    continue
            at: _Loc | None = ()
            if stack:
                top = stack[-1]
                if top[1] and top[2]:  # a mapping's key: its path is the key's, at this line
                    top[2] = False
                    top[3] = event.value if cls is yaml.ScalarEvent else None
                    if top[0] is not None and top[3] is not None:
                        key_at = (*top[0], top[3])
                        if key_at in wanted:
                            if key_at in exact and key_at not in found:
                                missing -= 1
                            found[key_at] = event.start_mark.line + 1
                    at = None
                elif top[1]:  # a mapping's value: the key's line stands for it
                    top[2] = True
                    at = None if top[0] is None or top[3] is None else (*top[0], top[3])
                    if at is not None and at not in wanted:
                        at = None
                else:
                    at = None if top[0] is None else (*top[0], top[3])
                    top[3] += 1
                    if at is not None and at not in wanted:
                        at = None
                    elif at is not None:
                        if at in exact and at not in found:
                            missing -= 1
                        found[at] = event.start_mark.line + 1
            else:
                if () in exact and () not in found:
                    missing -= 1
                found[()] = event.start_mark.line + 1
            if stop_early and missing <= 0:
                break
            if cls is yaml.SequenceStartEvent:
                stack.append([at, False, False, 0])
            elif cls is yaml.MappingStartEvent:
                stack.append([at, True, True, None])
    except (yaml.YAMLError, ValueError):
        pass  # the lines found so far (a JSON text YAML cannot read has none)
    return found
