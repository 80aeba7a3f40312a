"""Read a plan file's text into data within fixed limits, refusing duplicate keys.

Every plan file, whatever its shape, is read in bounded time and memory: its size, its nesting
depth and the number of values it holds (YAML aliases counted each time they are used, so an
alias bomb is refused before it is expanded) are limited, each limit named in its error. A YAML
document is composed by PyYAML's C loader (libyaml) and its nodes walked once, building the values
and checking them (:func:`load_yaml`); a JSON document is checked after ``json.loads`` (which
keeps no aliases), without recursion.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Callable, Hashable
from typing import Any

import yaml

from ..errors import PlanError, PlanProblem

__all__ = [
    "MAX_DEPTH",
    "MAX_PLAN_BYTES",
    "MAX_PROBLEMS",
    "MAX_QUOTE",
    "MAX_VALUES",
    "clip",
    "clip_message",
    "line_numbers",
    "load_json",
    "load_yaml",
    "read_plan_text",
    "shown",
    "yaml_problem",
]


MAX_PLAN_BYTES = 4 * 1024 * 1024
"""A plan file's size limit (4 MiB; a 10,000-step plan is about 1.3 MB)."""
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


_MAX_MESSAGE = 600


def clip_message(msg: str) -> str:
    """A message cut to ~600 characters: values are quoted short already, but a resolver's message
    or a long list of names is cut here too."""
    if len(msg) <= _MAX_MESSAGE:
        return msg
    return msg[: _MAX_MESSAGE - 160] + " … " + msg[-150:]


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


def read_plan_text(path: Any, source: str) -> str:
    """The file's text: UTF-8, newlines as text mode reads them (``\\r\\n`` and ``\\r`` become
    ``\\n``); refuse a file over :data:`MAX_PLAN_BYTES` without reading all of it."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_PLAN_BYTES + 1)
    if len(data) > MAX_PLAN_BYTES:
        raise _refuse(
            source, (), f"the file is larger than the plan file limit of {MAX_PLAN_BYTES:,} bytes"
        )
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _too_many(source: str, loc: _Loc, line: int | None, aliases: bool) -> PlanError:
    what = f"holds more than {MAX_VALUES:,} values (the limit on a plan's size"
    what += ", YAML aliases counted each time they are used)" if aliases else ")"
    return _refuse(source, loc, f"the document {what}", line)


def _too_deep(source: str, loc: _Loc, line: int | None) -> PlanError:
    msg = f"nested more than {MAX_DEPTH} levels deep (the limit on a plan's nesting)"
    path = _fmt_path(loc[:6]) + ("…" if len(loc) > 6 else "")  # where it starts to go deep
    return PlanError([PlanProblem(source, path, msg, line)])


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader; PyYAML's pure-Python one only where its C extension is missing."""

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"

_Lookup = Callable[[list[_Loc]], dict[_Loc, int]]  # the line of each field path asked


def _anchor_of(text: str, node: Any) -> str:
    """The anchor name of a collection node (nodes do not keep it; its start event does)."""
    at = (node.start_mark.line, node.start_mark.column)
    for event in yaml.parse(text, Loader=_LOADER):
        mark: Any = event.start_mark
        if isinstance(event, yaml.CollectionStartEvent) and (mark.line, mark.column) == at:
            return str(event.anchor)
    return "?"


class _Walk:
    """One walk over a composed YAML document that builds its values as PyYAML's safe
    constructor builds them (the constructor itself makes every scalar that is not a plain
    string, and any collection with a tag of its own) and checks them on the way: the limits
    (an alias counted each time it is used: the node it names is built once, and its size
    added again), duplicate keys, an alias inside its own anchor. Recursive, but never deeper
    than :data:`MAX_DEPTH` levels: a deeper collection is refused before it is entered."""

    def __init__(self, text: str, source: str, loader: Any) -> None:
        self.text, self.source, self.loader = text, source, loader
        self.total = self.chars = 0
        self.aliases = False
        #: id of a collection node -> (its value, values, characters, levels): for its aliases.
        self.built: dict[int, tuple[Any, int, int, int]] = {}
        self.scalars: set[int] = set()  # scalar nodes met (a second meeting is an alias)
        self.open: set[int] = set()  # collections being walked (an alias to one is a loop)
        self.dups: list[PlanProblem] = []

    def _count(self, values: int, chars: int, loc: _Loc, line: int) -> None:
        self.total += values
        self.chars += chars
        if self.total > MAX_VALUES:
            raise _too_many(self.source, loc, line, self.aliases)
        if self.chars > MAX_PLAN_BYTES:  # only aliases can expand the text past the file limit
            msg = "with its YAML aliases expanded the document holds more than "
            msg += f"{MAX_PLAN_BYTES:,} characters (the plan file limit)"
            raise _refuse(self.source, loc, msg, line)

    def value(self, node: Any, loc: _Loc, depth: int) -> tuple[Any, int]:
        """The node's value and its levels of collections (0: a scalar); ``depth``: the
        collections around it."""
        line = node.start_mark.line + 1
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            self.aliases |= key in self.scalars
            self.scalars.add(key)
            self._count(1, len(node.value), loc, line)
            if node.tag == _STR:
                return node.value, 0
            return self.loader.construct_object(node), 0  # built once, kept by the constructor
        done = self.built.get(key)
        if done is not None:  # an alias (or a merge key's) to a collection built already
            self.aliases = True
            value, values, chars, height = done
            self._count(values, chars, loc, line)
            if depth + height > MAX_DEPTH:
                raise _too_deep(self.source, loc, line)
            return value, height
        if key in self.open:
            name = clip(_anchor_of(self.text, node))
            raise _refuse(self.source, loc, f"the YAML alias *{name} refers to itself", line)
        if depth >= MAX_DEPTH:
            raise _too_deep(self.source, loc, line)
        total, chars = self.total, self.chars
        self._count(1, 0, loc, line)
        self.open.add(key)
        if isinstance(node, yaml.SequenceNode):
            value, height = self._sequence(node, loc, depth + 1)
        else:
            value, height = self._mapping(node, loc, depth + 1)
        self.open.discard(key)
        if node.tag not in (_SEQ, _MAP):  # !!set, !!omap, another tag: the constructor's own
            value = self.loader.construct_object(node, deep=True)
        self.built[key] = (value, self.total - total, self.chars - chars, height + 1)
        return value, height + 1

    def _sequence(self, node: yaml.SequenceNode, loc: _Loc, depth: int) -> tuple[Any, int]:
        items, height = [], 0
        for i, child in enumerate(node.value):
            item, levels = self.value(child, (*loc, i), depth)
            items.append(item)
            height = max(height, levels)
        return items, height

    def _mapping(self, node: yaml.MappingNode, loc: _Loc, depth: int) -> tuple[Any, int]:
        pairs: list[tuple[Any, Any]] = []
        merges = False
        firsts: dict[tuple[str, str], int] = {}
        height = 0
        for key_node, value_node in node.value:
            scalar = isinstance(key_node, yaml.ScalarNode)
            at = (*loc, key_node.value if scalar else "?")
            if scalar and key_node.tag == _MERGE:  # ``<<``: counted here, merged by PyYAML
                merges = True
                self._count(1, len(key_node.value), at, key_node.start_mark.line + 1)
                height = max(height, self.value(value_node, at, depth)[1])
                continue
            if scalar and key_node.tag == _VALUE:  # ``=`` as a key: a string (PyYAML's rule)
                key_node.tag = _STR
            if scalar:
                line = key_node.start_mark.line + 1
                ident = (key_node.tag, key_node.value)
                first = firsts.get(ident)
                if first is None:
                    firsts[ident] = line
                elif len(self.dups) < MAX_PROBLEMS:
                    msg = f"duplicate key {shown(key_node.value)} (first at line {first}); "
                    msg += "remove one: YAML would silently keep the last"
                    self.dups.append(PlanProblem(self.source, _fmt_path(at), msg, line))
            key, levels = self.value(key_node, at, depth)
            value, value_levels = self.value(value_node, at, depth)
            height = max(height, levels, value_levels)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found unhashable key",
                    key_node.start_mark,
                )
            pairs.append((key, value))
        if merges:  # PyYAML's own rules for which merged key wins: its constructor builds it
            return self.loader.construct_object(node, deep=True), height
        return dict(pairs), height


def yaml_problem(source: str, exc: yaml.YAMLError) -> PlanProblem:
    """A YAML syntax error at its line, with where the unfinished construct began."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    msg = f"YAML syntax error: {getattr(exc, 'problem', None) or exc}"
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark.line + 1 != line:
        msg += f" ({context} started at line {context_mark.line + 1})"
    elif context:
        msg += f" ({context})"
    return PlanProblem(source, "", clip_message(msg), line)


def load_yaml(text: str, source: str) -> Any:
    """The YAML document's data, or :class:`PlanError` (syntax, a limit, duplicate keys): the
    text composed once by PyYAML (:data:`_LOADER`), its nodes walked once (:class:`_Walk`)."""
    loader = _LOADER(text)
    try:
        root = loader.get_single_node()
        if root is None:  # an empty document
            return None
        walk = _Walk(text, source, loader)
        data, _ = walk.value(root, (), 0)
        if walk.dups:
            raise PlanError(walk.dups)
        return data
    except yaml.YAMLError as exc:
        raise PlanError([yaml_problem(source, exc)]) from None
    except RecursionError:  # only the pure-Python loader recurses; libyaml stops at 1,000 levels
        raise _too_deep(source, (), None) from None
    except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
        # A value the YAML constructor cannot build: a date like 2024-13-45, a 5,000-digit int.
        msg = f"YAML value cannot be read: {clip(str(exc))}"
        raise PlanError([PlanProblem(source, "", msg)]) from None
    finally:
        loader.dispose()


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


def line_numbers(text: str, locs: list[_Loc]) -> dict[_Loc, int]:
    """The 1-based line of each field path in ``locs`` and of each of its parents, in the YAML
    (or JSON) text composed again: a key's path takes the key's line (the last of a duplicate
    key's: the one whose value was kept), an item's its own. Only asked when a problem is
    reported; a text YAML cannot read gives none."""
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except (yaml.YAMLError, ValueError, RecursionError):
        return {}
    found: dict[_Loc, int] = {}
    if root is None:
        return found
    for loc in locs:
        node: Any = root
        found[()] = root.start_mark.line + 1
        for end, part in enumerate(loc, 1):
            node, key = _child(node, part)
            if node is None:
                break
            found[loc[:end]] = (key or node).start_mark.line + 1
    return found


def _child(node: Any, part: int | str) -> tuple[Any, Any]:
    """The child node at ``part`` and, in a mapping, its key node (else ``None``)."""
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int):
        return (node.value[part], None) if 0 <= part < len(node.value) else (None, None)
    if isinstance(node, yaml.MappingNode):
        for key, value in reversed(node.value):
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return value, key
    return None, None
