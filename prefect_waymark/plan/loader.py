"""Load a plan file (YAML or JSON) and validate it, collecting every problem with its field path."""

from __future__ import annotations

import difflib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import PlanError, PlanProblem
from ..models import GoalContract
from ..resolvers.validation import ref_field_problems
from .spec import BlockRef, PlanSpec, StateRefSpec, StepSpec

__all__ = ["load_plan", "validate_plan_data"]

_Loc = tuple[int | str, ...]

# libyaml's loader when PyYAML has it: ten times faster on big plans (status reads the plan too).
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _fmt_path(loc: _Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _line_map(text: str) -> dict[_Loc, int]:
    """Map each field path of a YAML/JSON document to its 1-based line number."""
    lines: dict[_Loc, int] = {}
    try:
        root = yaml.compose(text, Loader=_SafeLoader)
    except yaml.YAMLError:
        return lines

    def walk(node: yaml.Node, loc: _Loc) -> None:
        lines[loc] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value
                lines[loc + (key,)] = key_node.start_mark.line + 1
                walk(value_node, loc + (key,))
                lines[loc + (key,)] = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, loc + (i,))

    if root is not None:
        walk(root, ())
    return lines


_NOT_IN_FILE = ("source", "base_dir")


def _plan_fields() -> str:
    return ", ".join(f for f in PlanSpec.model_fields if f not in _NOT_IN_FILE)


def _line_of(lines: Mapping[_Loc, int], loc: _Loc) -> int | None:
    """The line of ``loc``, else of its nearest parent (a missing field has no line of its own)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _near(name: str, choices: list[str]) -> str:
    match = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else ""


def _model_problems(
    model: type[BaseModel], data: Any, prefix: _Loc, file: str, lines: Mapping[_Loc, int]
) -> tuple[Any, list[PlanProblem]]:
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        problems = []
        fields = list(model.model_fields)
        for err in exc.errors():
            loc: _Loc = prefix + tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                name = str(err["loc"][-1])
                owner = model
                if len(err["loc"]) > 1 and model is PlanSpec and err["loc"][0] == "steps":
                    owner = StepSpec
                names = [f for f in owner.model_fields if f not in _NOT_IN_FILE]
                msg = f"unknown field {name!r}{_near(name, names)} (expected one of: "
                msg += ", ".join(names) + ")"
            elif err["type"] == "missing":
                msg = "required field is missing"
            elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
                msg = f"expected a mapping of fields, got {err.get('input')!r}"
            elif err["type"] == "string_pattern_mismatch":
                pattern = (err.get("ctx") or {}).get("pattern", "")
                msg = f"{err['input']!r} does not match {pattern}"
                if pattern.startswith("^[A-Za-z0-9._-]"):
                    msg += " (ids may hold only letters, digits, '.', '_' and '-')"
                elif ":" in str(pattern):
                    msg += " (expected 'package.module:function')"
            else:
                msg = f"{err['msg']} (got {err.get('input')!r})"
            problems.append(PlanProblem(file, _fmt_path(loc), msg, _line_of(lines, loc)))
        del fields
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
    problems: list[PlanProblem] = []

    def add(loc: _Loc, msg: str) -> None:
        problems.append(PlanProblem(source, _fmt_path(loc), msg, _line_of(lines, loc)))

    if not isinstance(data, dict):
        got = "an empty document" if data is None else type(data).__name__
        add((), f"expected a mapping with plan_id and steps at the top level, got {got}")
        raise PlanError(problems)
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
        raise PlanError(problems)

    # The contract and state_refs take one of two shapes; validate the chosen one by itself.
    contract_raw = data.pop("contract", None)
    refs_raw = data.pop("state_refs", [])
    contract: GoalContract | BlockRef | None = None
    if contract_raw is not None:
        cmodel: type[BaseModel] = (
            BlockRef if isinstance(contract_raw, dict) and "block" in contract_raw else GoalContract
        )
        contract, more = _model_problems(cmodel, contract_raw, ("contract",), source, lines)
        problems += more
    refs: list[StateRefSpec] | BlockRef = []
    if isinstance(refs_raw, dict):
        refs_model, more = _model_problems(BlockRef, refs_raw, ("state_refs",), source, lines)
        problems += more
        refs = refs_model or []
    elif isinstance(refs_raw, list):
        ref_list: list[StateRefSpec] = []
        for i, raw in enumerate(refs_raw):
            ref, more = _model_problems(StateRefSpec, raw, ("state_refs", i), source, lines)
            problems += more
            if ref is not None:
                ref_list.append(ref)
                for loc, msg in ref_field_problems(raw):  # the kind's own fields (resolvers/)
                    add(("state_refs", i, *loc), msg)
        refs = ref_list
    else:
        add(("state_refs",), "expected a list of refs or {block: NAME}")

    spec, more = _model_problems(PlanSpec, data, (), source, lines)
    problems += more
    if isinstance(data.get("steps"), list):
        for i, raw in enumerate(data["steps"]):
            if isinstance(raw, dict) and (raw.get("run") is None) == (raw.get("call") is None):
                which = "both" if raw.get("run") is not None else "neither"
                add(("steps", i), f"has {which} of 'run' and 'call'; expected exactly one")
    if spec is None:
        raw_steps = data.get("steps")
        if isinstance(raw_steps, list):
            # Still report cross-step problems for the steps that did parse; a step that did not
            # parse still names an id that others may depend on.
            steps: list[StepSpec | None] = []
            for raw in raw_steps:
                try:
                    steps.append(StepSpec.model_validate(raw))
                except ValidationError:
                    steps.append(None)
            raw_ids = [
                r["id"] if isinstance(r, dict) and isinstance(r.get("id"), str) else None
                for r in raw_steps
            ]
            _check_steps(steps, refs, add, raw_ids)
        raise PlanError(problems)

    _check_steps(list[StepSpec | None](spec.steps), refs, add)
    if problems:
        raise PlanError(problems)
    assert isinstance(spec, PlanSpec)
    return spec.model_copy(
        update={"contract": contract, "state_refs": refs, "source": source, "base_dir": base_dir}
    )


def _check_steps(
    steps: list[StepSpec | None],
    refs: Any,
    add: Any,
    raw_ids: list[str | None] | None = None,
) -> None:
    """Cross-step checks. ``raw_ids`` (aligned with ``steps``) also holds the ids of steps that
    did not parse, so they count for duplicates and dependencies."""
    aligned = raw_ids if raw_ids is not None else [s.id if s else None for s in steps]
    ids = [sid for sid in aligned if sid is not None]
    seen: dict[str, int] = {}
    for i, sid in enumerate(aligned):
        if sid is None:
            continue
        if sid in seen:
            add(("steps", i, "id"), f"duplicate step id {sid!r} (first used by steps[{seen[sid]}])")
        else:
            seen[sid] = i
    for i, s in enumerate(steps):
        if s is None:
            continue
        if s.probe is not None and (s.action is None or s.run is None):
            add(
                ("steps", i, "probe"),
                "a probe asks whether the step's action was applied: it needs 'action' and "
                "'run' (a call: step passes probe= to ctx.action)",
            )
        for j, dep in enumerate(s.depends_on):
            if dep not in ids:
                add(("steps", i, "depends_on", j), f"unknown step {dep!r}{_near(dep, ids)}")
            elif dep == s.id:
                add(("steps", i, "depends_on", j), "a step cannot depend on itself")
        ref_names = [r.name for r in refs] if isinstance(refs, list) else None
        if ref_names is not None:
            for field in ("reads", "writes"):
                for j, name in enumerate(getattr(s, field)):
                    if name not in ref_names:
                        known = ", ".join(ref_names) or "none declared"
                        add(
                            ("steps", i, field, j),
                            f"unknown state ref {name!r}{_near(name, ref_names)}"
                            f" (declared refs: {known})",
                        )
    graph = {s.id: [d for d in s.depends_on if d in seen and d != s.id] for s in steps if s}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        cycle = list(exc.args[1])
        first = seen.get(cycle[0], 0)
        add(("steps", first, "depends_on"), "dependency cycle: " + " -> ".join(cycle))


def _yaml_problem(source: str, exc: yaml.YAMLError) -> PlanProblem:
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
    return PlanProblem(source, "", msg, line)


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
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError([PlanProblem(source, "", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError([PlanProblem(source, "", f"cannot read the file: {exc}")]) from None
    key = (source, str(p.resolve()), text)
    with _PARSED_LOCK:
        found = _PARSED.get(key)
        if found is not None:
            _PARSED.move_to_end(key)
            return found
    spec = _parse(p, source, text)
    with _PARSED_LOCK:
        _PARSED[key] = spec
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    return spec


def _parse(p: Path, source: str, text: str) -> PlanSpec:
    data: Any
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problem = PlanProblem(source, "", f"JSON syntax error: {exc.msg}", exc.lineno)
            raise PlanError([problem]) from None
    else:
        try:
            data = yaml.load(text, Loader=_SafeLoader)
        except yaml.YAMLError as exc:
            raise PlanError([_yaml_problem(source, exc)]) from None
    return validate_plan_data(
        data, source=source, base_dir=p.resolve().parent, lines=_LazyLines(text)
    )


class _LazyLines(Mapping[_Loc, int]):
    """The line map, built only when a problem needs a line number: composing the document a
    second time costs ~0.15 s for a 1,000-step plan, paid by every run otherwise."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._map: dict[_Loc, int] | None = None

    def _lines(self) -> dict[_Loc, int]:
        if self._map is None:
            self._map = _line_map(self._text)
        return self._map

    def __getitem__(self, loc: _Loc) -> int:
        return self._lines()[loc]

    def __contains__(self, loc: object) -> bool:
        return loc in self._lines()

    def __iter__(self) -> Iterator[_Loc]:
        return iter(self._lines())

    def __len__(self) -> int:
        return len(self._lines())

    def __bool__(self) -> bool:
        return True
