"""The plan file an import writes: YAML with a header naming its source and the source's
sha256, which is how a later import knows the file is its own (and nobody else's) to replace,
then what the import changed to read the source (a repeated id renamed, a parent's wait for a
child left out where it made a cycle), one comment line each."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from .._files.atomic import atomic_file, file_mode
from ..plan.reading import MAX_PLAN_BYTES
from .source import source_error

__all__ = ["imported_sha", "is_written", "plan_text", "write_plan_file"]

_SHA_LINE = re.compile(r"^# source sha256: ([0-9a-f]{64})[ \t]*$", re.MULTILINE)
_HEAD_BYTES = 4096

_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: ten times faster


def _str_scalar(dumper: Any, value: str) -> Any:
    """Multi-line text (instructions) as a literal block, the way a person would write it."""
    return dumper.represent_scalar(
        "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None
    )


_Dumper: Any = type("_ImportDumper", (_BaseDumper,), {})
_Dumper.add_representer(str, _str_scalar)


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


def _change_line(change: str, source: Path) -> str:
    """A change as the plan file lists it: where in the source (the header names the file)."""
    rest = change.removeprefix(f"{source}:").lstrip()
    line, colon, tail = rest.partition(":")
    at = f"line {line}:{tail}" if colon and line.isdigit() else rest
    return _one_line(at if rest != change else change)


def _shown_source(source: Path, out: Path) -> str:
    """The source as the header names it: relative to the plan file when it is near (in its
    folder, or one up), else absolute."""
    full = source.resolve()
    try:
        rel = os.path.relpath(full, out.resolve().parent)
    except ValueError:  # another drive (Windows)
        return str(full)
    return rel if not rel.startswith(os.path.join(os.pardir, os.pardir)) else str(full)


def plan_text(
    data: dict[str, Any],
    *,
    fmt: str,
    source: Path,
    out: Path,
    sha256: str,
    detail: str,
    changes: list[str],
) -> str:
    """The plan file's text: the header, the ``changes`` as comments, then the plan
    (``sort_keys=False``: fields in the order a person reads them). Raises
    :class:`~prefect_waymark.errors.PlanError` if the plan is more than a plan file may hold."""
    shown_source = _shown_source(source, out)
    header = (
        f"# Imported by `waymark import --from {fmt}` from {_one_line(shown_source)}"
        f"{f' ({detail})' if detail else ''}.\n"
        f"# source sha256: {sha256}\n"
        "# Importing this same file again changes nothing; importing another one into this "
        "plan is refused.\n"
    )
    if changes:
        header += (
            f"# Changed to read the source as a plan ({len(changes)}; the source file is left "
            "as it is):\n"
        )
        header += "".join(f"# - {_change_line(c, source)}\n" for c in changes)
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    text = header + body
    size = len(text.encode("utf-8"))
    if size > MAX_PLAN_BYTES:
        raise source_error(
            str(source),
            "",
            f"the plan would be {size:,} bytes; a plan file holds at most {MAX_PLAN_BYTES:,} "
            "(import it as several plans: a Task Master tag, or a part of the file, at a time)",
        )
    return text


def imported_sha(out: Path) -> str | None:
    """The source sha256 named by an existing plan file's header: ``None`` if there is no file,
    ``""`` if it is not an import's (no header, or not readable as text)."""
    try:
        with out.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    found = _SHA_LINE.search(head.decode("utf-8", errors="replace"))
    return found.group(1) if found else ""


def is_written(out: Path, text: str) -> bool:
    """Whether the file ``out`` holds exactly ``text``, byte for byte as :func:`write_plan_file`
    writes it: the only plan file an import may write over (any edit is someone's work). Reads
    at most one byte more than ``text`` takes."""
    want = text.encode("utf-8")
    try:
        with out.open("rb") as fh:
            have = fh.read(len(want) + 1)
    except OSError:
        return False
    return have == want


def write_plan_file(out: Path, text: str) -> None:
    """Write the plan file whole or not at all (a temporary file renamed over it), as UTF-8
    bytes with ``\n`` line ends on every platform (what :func:`is_written` compares)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out, mode=file_mode()) as fh:  # the umask's mode, as open() gives
        fh.write(text.encode("utf-8"))
