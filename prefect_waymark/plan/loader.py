"""Load a plan file (YAML or JSON) and validate it, collecting every problem with its field path."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import PlanError, PlanProblem
from ..ledger.pin import LedgerPin
from ..models import GoalContract
from ..resolvers.validation import ref_field_problems
from .reading import (
    MAX_PROBLEMS,
    clip,
    clip_message,
    line_numbers,
    load_json,
    load_yaml,
    read_plan_text,
    shown,
)
from .results_pin import ResultsPin
from .spec import NUMBER_BOUNDS, BlockRef, PlanSpec, StateRefSpec, StepSpec
from .step_checks import check_contract_links, check_steps, near
from .subplan_field import plan_step_problems, resolve_subplans

__all__ = ["load_plan", "validate_plan_data"]

_Loc = tuple[int | str, ...]


def _fmt_path(loc: _Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_NOT_IN_FILE = ("source", "base_dir")


def _plan_fields() -> str:
    return ", ".join(f for f in PlanSpec.model_fields if f not in _NOT_IN_FILE)


def _line_of(lines: Mapping[_Loc, int], loc: _Loc) -> int | None:
    """The line of ``loc``, else of its nearest parent (a missing field has no line of its own)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


_Found = list[tuple[_Loc, str]]
"""Problems as (field path, message); lines are looked up only for those listed."""


def _plan_error(source: str, lines: Mapping[_Loc, int], found: _Found) -> PlanError:
    """The error listing the first :data:`MAX_PROBLEMS` problems, with their lines, counting the
    rest: a document with 500,000 wrong values is refused as fast as one with a single one."""
    shown_ = found[:MAX_PROBLEMS]
    if isinstance(lines, _LazyLines):
        lines = lines.lookup([loc for loc, _ in shown_])
    problems = [
        PlanProblem(source, _fmt_path(loc), clip_message(msg), _line_of(lines, loc))
        for loc, msg in shown_
    ]
    if len(found) > MAX_PROBLEMS:
        more = len(found) - MAX_PROBLEMS
        problems.append(PlanProblem(source, "", f"... and {more:,} more problems not listed"))
    return PlanError(problems)


_NUMBER_ERRORS = {
    "int_type",
    "int_from_float",
    "int_parsing",
    "float_type",
    "float_parsing",
    "finite_number",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
}


#: The models of the plan's fields that are mappings, for an unknown field's list of fields.
_NESTED: dict[str, type[BaseModel]] = {
    "steps": StepSpec,
    "ledger": LedgerPin,
    "results": ResultsPin,
}


def _model_problems(model: type[BaseModel], data: Any, prefix: _Loc) -> tuple[Any, _Found]:
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        problems: _Found = []
        for n, err in enumerate(exc.errors(include_url=False)):
            loc: _Loc = prefix + tuple(err["loc"])
            if n >= MAX_PROBLEMS:  # counted, not listed: no need to word them
                problems.append((loc, ""))
                continue
            if err["type"] == "extra_forbidden":
                name = str(err["loc"][-1])
                owner = model
                if len(err["loc"]) > 1 and model is PlanSpec:
                    owner = _NESTED.get(str(err["loc"][0]), PlanSpec)
                names = [f for f in owner.model_fields if f not in _NOT_IN_FILE]
                msg = f"unknown field {shown(name)}{near(name, names)} (expected one of: "
                msg += ", ".join(names) + ")"
            elif err["type"] == "text_too_long":  # a TextLimit (models): the value not quoted
                msg = err["msg"]
            elif err["type"] == "missing":
                msg = "required field is missing"
            elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
                msg = f"expected a mapping of fields, got {shown(err.get('input'))}"
            elif err["type"] == "string_pattern_mismatch":
                pattern = (err.get("ctx") or {}).get("pattern", "")
                msg = f"{shown(err['input'])} does not match {pattern}"
                if pattern.startswith("^[A-Za-z0-9._-]"):
                    msg += " (ids may hold only letters, digits, '.', '_' and '-')"
                elif ":" in str(pattern):
                    msg += " (expected 'package.module:function')"
            elif loc and loc[-1] in NUMBER_BOUNDS and err["type"] in _NUMBER_ERRORS:
                got = err.get("input")
                got_text = f"the boolean {got!r}" if isinstance(got, bool) else shown(got)
                msg = f"expected {NUMBER_BOUNDS[str(loc[-1])]}, got {got_text}"
            else:
                msg = f"{err['msg']} (got {shown(err.get('input'))})"
            problems.append((loc, msg))
        return None, problems


def validate_plan_data(
    data: Any,
    *,
    source: str = "<memory>",
    base_dir: Path | None = None,
    lines: Mapping[_Loc, int] | None = None,
) -> PlanSpec:
    """Validate an already-parsed plan document; raise :class:`PlanError` listing every problem."""
    lines = lines or {}
    problems: _Found = []

    def add(loc: _Loc, msg: str) -> None:
        problems.append((loc, msg))

    def full() -> bool:
        return len(problems) >= MAX_PROBLEMS

    if not isinstance(data, dict):
        got = "an empty document" if data is None else type(data).__name__
        add((), f"expected a mapping with plan_id and steps at the top level, got {got}")
        raise _plan_error(source, lines, problems)
    data = dict(data)
    for internal in _NOT_IN_FILE:  # PlanSpec fields set by the loader, not by the file
        if internal in data:
            data.pop(internal)
            add((internal,), f"unknown field {internal!r} (expected one of: {_plan_fields()})")
    if "steps" in data and data["steps"] in (None, []):
        add(("steps",), "the plan has no steps; expected a list with at least one step")
        data.pop("steps")
        if "plan_id" not in data:
            add(("plan_id",), "required field is missing")
        raise _plan_error(source, lines, problems)

    # The contract and state_refs take one of two shapes; validate the chosen one by itself.
    contract_raw = data.pop("contract", None)
    refs_raw = data.pop("state_refs", [])
    contract: GoalContract | BlockRef | None = None
    if contract_raw is not None:
        cmodel: type[BaseModel] = (
            BlockRef if isinstance(contract_raw, dict) and "block" in contract_raw else GoalContract
        )
        contract, more = _model_problems(cmodel, contract_raw, ("contract",))
        problems += more
    refs: list[StateRefSpec] | BlockRef = []
    if isinstance(refs_raw, dict):
        refs_model, more = _model_problems(BlockRef, refs_raw, ("state_refs",))
        problems += more
        refs = refs_model or []
    elif isinstance(refs_raw, list):
        ref_list: list[StateRefSpec] = []
        for i, raw in enumerate(refs_raw):
            ref, more = _model_problems(StateRefSpec, raw, ("state_refs", i))
            problems += more
            if ref is not None:
                ref_list.append(ref)
                for loc, msg in ref_field_problems(raw):  # the kind's own fields (resolvers/)
                    add(("state_refs", i, *loc), msg)
        refs = ref_list
    else:
        add(("state_refs",), "expected a list of refs or {block: NAME}")

    allow_outside = data.get("allow_outside_workdir") is True
    raw_steps = data.get("steps")
    if isinstance(raw_steps, list) and len(raw_steps) > MAX_PROBLEMS:
        # A flood of non-mappings is listed here: pydantic would word every one of them.
        bad = [i for i, raw in enumerate(raw_steps) if not isinstance(raw, dict)]
        if len(bad) > MAX_PROBLEMS:
            for i in bad:
                add(
                    ("steps", i),
                    "" if full() else f"expected a mapping of fields, got {shown(raw_steps[i])}",
                )
            raise _plan_error(source, lines, problems)
    spec, more = _model_problems(PlanSpec, data, ())
    problems += more
    if isinstance(data.get("steps"), list):
        for i, raw in enumerate(data["steps"]):
            if not isinstance(raw, dict):
                continue
            if raw.get("kind") in ("agent", "manual"):
                code = [f for f in ("run", "call", "plan", "probe") if raw.get(f) is not None]
                if code:
                    article = "an" if raw["kind"] == "agent" else "a"
                    add(
                        ("steps", i),
                        f"{article} {raw['kind']} step is done outside the flow: it must not "
                        f"have {' or '.join(repr(f) for f in code)}; give 'instructions' instead",
                    )
                if not (isinstance(raw.get("instructions"), str) and raw["instructions"].strip()):
                    article = "an" if raw["kind"] == "agent" else "a"
                    add(
                        ("steps", i, "instructions"),
                        f"{article} {raw['kind']} step needs instructions: what its executor does",
                    )
            elif raw.get("plan") is not None or raw.get("kind") == "plan":
                for loc, msg in plan_step_problems(raw):  # subplans/: `plan: sub.yaml`
                    add(("steps", i, *loc), msg)
            elif (raw.get("run") is None) == (raw.get("call") is None):
                which = "both" if raw.get("run") is not None else "neither"
                add(
                    ("steps", i),
                    f"has {which} of 'run' and 'call'; expected exactly one (or 'plan', or "
                    "`kind: agent` / `kind: manual` with 'instructions')",
                )
    if spec is None:
        raw_steps = data.get("steps")
        if isinstance(raw_steps, list):
            # Still report cross-step problems for the steps that did parse; a step that did not
            # parse still names an id that others may depend on.
            steps: list[StepSpec | None] = []
            for raw in raw_steps:
                try:
                    steps.append(StepSpec.model_validate(raw) if isinstance(raw, dict) else None)
                except ValidationError:
                    steps.append(None)
            raw_ids = [
                r["id"] if isinstance(r, dict) and isinstance(r.get("id"), str) else None
                for r in raw_steps
            ]
            check_steps(steps, refs, add, raw_ids, full=full, allow_outside=allow_outside)
        raise _plan_error(source, lines, problems)

    check_steps(
        list[StepSpec | None](spec.steps), refs, add, full=full, allow_outside=allow_outside
    )
    check_contract_links(spec.steps, contract, add)
    if problems:
        raise _plan_error(source, lines, problems)
    assert isinstance(spec, PlanSpec)
    # Each `plan:` step's sub-plan file, validated now (its problems under its own name).
    sub_found, sub_problems = resolve_subplans(spec, source, base_dir, load_plan)
    if sub_found or sub_problems:
        raise PlanError(_plan_error(source, lines, sub_found).problems + sub_problems)
    return spec.model_copy(
        update={"contract": contract, "state_refs": refs, "source": source, "base_dir": base_dir}
    )


#: The plans parsed last, by (path as given, resolved path, content): ``waymark run`` parses
#: the plan to check it, and the flow it starts in the same process takes that PlanSpec instead
#: of parsing the same bytes again (a 10,000-step plan costs seconds to validate).
_PARSED: OrderedDict[tuple[str, str, str], PlanSpec] = OrderedDict()
_PARSED_MAX = 4
_PARSED_LOCK = threading.Lock()


def load_plan(path: str | Path) -> PlanSpec:
    """Read and validate a plan file; raise :class:`PlanError` naming file, line and field.

    The same file with the same content gives the same (validated) PlanSpec again without
    parsing it twice; treat it as read-only."""
    p = Path(path)
    source = str(path)
    try:
        text = read_plan_text(p, source)
    except FileNotFoundError:
        raise PlanError([PlanProblem(source, "", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read the file: {clip(str(exc))}"
        raise PlanError([PlanProblem(source, "", msg)]) from None
    key = (source, str(p.resolve()), text)
    with _PARSED_LOCK:
        found = _PARSED.get(key)
        if found is not None:
            _PARSED.move_to_end(key)
            return found
    spec = _parse(p, source, text)
    if any(s.plan is not None for s in spec.steps):
        return spec  # its sub-plan files may change under the same text: parsed every time
    with _PARSED_LOCK:
        _PARSED[key] = spec
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    return spec


def _parse(p: Path, source: str, text: str) -> PlanSpec:
    data: Any
    lines = _LazyLines(text)
    if p.suffix.lower() == ".json":
        data = load_json(text, source, lines.lookup)
    else:
        data = load_yaml(text, source)
    return validate_plan_data(data, source=source, base_dir=p.resolve().parent, lines=lines)


class _LazyLines(Mapping[_Loc, int]):
    """The lines of a document's field paths, looked up only when a problem is reported (the
    text composed again: :func:`.reading.line_numbers`)."""

    def __init__(self, text: str) -> None:
        self._text = text

    def lookup(self, locs: list[_Loc]) -> dict[_Loc, int]:
        return line_numbers(self._text, locs)

    def __getitem__(self, loc: _Loc) -> int:
        return self.lookup([loc])[loc]

    def __iter__(self) -> Iterator[_Loc]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return True
