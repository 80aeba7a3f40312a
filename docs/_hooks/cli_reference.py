"""mkdocs hook: reference pages generated from the code at every build.

- ``<!-- waymark-cli -->``: every ``waymark`` command with its arguments and options, as typer's
  own ``typer ... utils docs`` writes them (docs/reference/cli.md); ``waymark hook``'s from its
  own parser's ``--help``.
- ``<!-- waymark-model: module:Class -->``: a table of a pydantic model's fields — name, type,
  default, constraints, description (the plan file's and the state ref kinds' pages).

So those pages cannot drift from the code: ``mkdocs build --strict`` (``make docs``, part of
``make test``) renders what the installed package defines.
"""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any

PLACEHOLDER = "<!-- waymark-cli -->"


def _cli_markdown() -> str:
    import click
    import typer.cli
    import typer.main

    from prefect_waymark.cli.commands import app

    command = typer.main.get_command(app)
    ctx = click.Context(command, info_name="waymark")
    text: str = typer.cli.get_docs_for_click(obj=command, ctx=ctx, name="waymark", title="waymark")
    text = text.replace("```console\n$ waymark hook [OPTIONS]\n```", _hook_help())
    lines = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if not in_code and line.startswith("#"):
            line = "#" + line  # one level below the page's title
        lines.append(line)
    return "\n".join(lines)


def _hook_help() -> str:
    """``waymark hook``'s own parser's help (typer only forwards to it: hooks/command.py)."""
    from prefect_waymark.hooks.command import COMMANDS, help_text

    blocks = [f"$ waymark hook --help\n{help_text('group')}"]
    blocks += [f"$ waymark hook {c} --help\n{help_text(c)}" for c in COMMANDS]
    return "\n\n".join(f"```console\n{b}\n```" for b in blocks)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if PLACEHOLDER in markdown:
        markdown = markdown.replace(PLACEHOLDER, _cli_markdown())
    return _expand_models(markdown)


# --- field tables of the plan file's models ------------------------------------------------
#
# ``<!-- waymark-model: module:Class -->`` becomes a table of the pydantic model's fields (name,
# type, default, constraints, description), read from the model itself at build time.

MODEL_MARK = re.compile(r"<!-- waymark-model: ([\w.]+):(\w+) -->")


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if annotation is type(None):
        return "null"
    if origin in (list, tuple, set):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "mapping"
    name = getattr(annotation, "__name__", None) or str(annotation)
    return {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(name, name)


def _constraints(field: Any) -> str:
    words = []
    for item in field.metadata:
        for attr, word in (
            ("gt", "above"),
            ("ge", "at least"),
            ("lt", "below"),
            ("le", "at most"),
            ("min_length", "at least N items/characters:"),
            ("max_length", "at most N items/characters:"),
            ("pattern", "matches"),
        ):
            value = getattr(item, attr, None)
            if value is None:
                continue
            if attr == "pattern":
                words.append(f"matches `{value}`")
            elif "N items" in word:
                words.append(word.replace("N items/characters:", f"{value} long"))
            else:
                number = int(value) if float(value).is_integer() else value
                words.append(f"{word} {number:,}")
    return ", ".join(words)


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    try:
        return f"`{json.dumps(value)}`"
    except TypeError:
        return f"`{value!r}`"


def _model_table(module: str, name: str) -> str:
    import importlib

    model = getattr(importlib.import_module(module), name)
    rows = ["| field | type | default | description |", "| --- | --- | --- | --- |"]
    for field_name, field in model.model_fields.items():
        if field.exclude:
            continue
        desc = (field.description or "").replace("|", "\\|").replace("\n", " ")
        limits = _constraints(field)
        if limits and limits not in desc:  # a description may state its bounds itself
            desc = f"{desc} ({limits})" if desc else limits
        rows.append(
            f"| `{field.alias or field_name}` | {_type_name(field.annotation)} "
            f"| {_default(field)} | {desc} |"
        )
    return "\n".join(rows)


def _expand_models(markdown: str) -> str:
    return MODEL_MARK.sub(lambda m: _model_table(m.group(1), m.group(2)), markdown)
