"""Check a ref's kind-specific fields with its resolver's config model; clear messages."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..errors import RefConfigError
from ._raw_secrets import raw_secret_problems
from .base import RefConfig
from .registry import UnknownRefKind, config_model_for, known_kinds

__all__ = ["RefConfigError", "parse_ref_config", "ref_field_problems"]

Loc = tuple[int | str, ...]


def _near(name: str, choices: list[str]) -> str:
    import difflib

    match = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else ""


_NUMBER_ERRORS = (
    "float_type",
    "float_parsing",
    "finite_number",
    "int_type",
    "int_parsing",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
)


def _bounds(model: type[RefConfig], loc: Loc) -> str:
    """A numeric field's bounds in words ("above 0, at most 600"), from its constraints."""
    field = model.model_fields.get(str(loc[0])) if len(loc) == 1 else None
    if field is None:
        return ""
    words = []
    for item in field.metadata:
        for attr, word in (("gt", "above"), ("ge", "at least"), ("lt", "below"), ("le", "at most")):
            bound = getattr(item, attr, None)
            if isinstance(bound, int | float):
                words.append(f"{word} {bound:g}")
    return ", ".join(words)


def _got(value: Any) -> str:
    """A bad value for a message: at most ~200 characters of its repr."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring = short.maxother = 200
    text = short.repr(value)
    return text if len(text) <= 200 else text[:199] + "…"


def ref_field_problems(data: Any, *, from_plan_file: bool = True) -> list[tuple[Loc, str]]:
    """Every problem with one ref's fields, as (path inside the ref, message)."""
    if not isinstance(data, dict):
        return [((), "expected a mapping with name and kind")]
    # Raw secrets first, whatever else is wrong; later messages see them masked (never echoed).
    problems, data = raw_secret_problems(data, from_plan_file=from_plan_file)
    kind = data.get("kind")
    if not isinstance(kind, str):
        return problems  # the plan's own model reports a missing kind
    try:
        model = config_model_for(kind)
    except UnknownRefKind:
        kinds = known_kinds()
        return [
            *problems,
            (
                ("kind",),
                f"unknown kind {_got(kind)}{_near(kind[:100], kinds)} (known: {', '.join(kinds)})",
            ),
        ]
    except Exception as exc:  # noqa: BLE001 - a broken plug-in is a problem to report
        return [*problems, (("kind",), str(exc))]
    if from_plan_file and data.get("secret") is not None:
        problems.append(
            (
                ("secret",),
                "a plan file must not hold a secret: name a Prefect Secret block "
                "(secret_block: NAME) or keep the refs in a StateRefs block with credentials",
            )
        )
        data = {k: v for k, v in data.items() if k != "secret"}
    try:
        model.model_validate(data)
    except ValidationError as exc:
        fields = list(model.model_fields)
        for err in exc.errors():
            loc: Loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                name = str(loc[-1])
                msg = (
                    f"unknown field {name!r} for kind {kind!r}{_near(name, fields)} "
                    f"(expected one of: {', '.join(fields)})"
                )
            elif err["type"] == "missing":
                msg = f"required for kind {kind!r}"
            elif err["type"] == "value_error":
                msg = str(err["msg"]).removeprefix("Value error, ")
            elif err["type"] in _NUMBER_ERRORS and _bounds(model, loc):
                msg = f"expected a number {_bounds(model, loc)} (got {_got(err.get('input'))})"
            else:
                msg = f"{err['msg']} (got {_got(err.get('input'))})"
            problems.append((loc, msg))
    return problems


def parse_ref_config(data: dict[str, Any], *, from_plan_file: bool = False) -> RefConfig:
    """The typed config of one ref; raise :class:`RefConfigError` listing every problem."""
    problems = ref_field_problems(data, from_plan_file=from_plan_file)
    if problems:
        raise RefConfigError(problems)
    return config_model_for(str(data["kind"])).model_validate(data)
