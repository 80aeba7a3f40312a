"""The plan's cross-step checks: duplicate ids, dependencies, refs, probes, output paths."""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Callable
from graphlib import CycleError, TopologicalSorter
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from ..models import ContractItem, GoalContract
from .ordering import ready_rounds
from .reading import shown
from .spec import StepSpec

__all__ = ["check_contract_links", "check_steps", "near", "repeated_item_ids"]


def near(name: str, choices: list[str]) -> str:
    if len(name) > 100:  # no id or field name is that long; do not compare megabytes
        return ""
    match = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else ""


def check_steps(
    steps: list[StepSpec | None],
    refs: Any,
    add: Any,
    raw_ids: list[str | None] | None = None,
    *,
    full: Callable[[], bool] = lambda: False,
    allow_outside: bool = False,
) -> None:
    """Cross-step checks. ``raw_ids`` (aligned with ``steps``) also holds the ids of steps that
    did not parse, so they count for duplicates and dependencies. Once ``full()`` (enough
    problems to list) the rest are counted without wording them."""
    aligned = raw_ids if raw_ids is not None else [s.id if s else None for s in steps]
    ids = [sid for sid in aligned if sid is not None]
    id_set = set(ids)
    seen: dict[str, int] = {}
    for i, sid in enumerate(aligned):
        if sid is None:
            continue
        if sid in seen:
            used = f"first used by steps[{seen[sid]}]"
            add(("steps", i, "id"), f"duplicate step id {shown(sid)} ({used})")
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
            if dep not in id_set:
                hint = "" if full() else near(dep, ids)
                add(("steps", i, "depends_on", j), f"unknown step {shown(dep)}{hint}")
            elif dep == s.id:
                add(("steps", i, "depends_on", j), "a step cannot depend on itself")
        for field in ("outputs", "mutable_outputs"):
            for j, path in enumerate(getattr(s, field)):
                wrong = _output_problem(path, allow_outside)
                if wrong:
                    add(("steps", i, field, j), wrong)
        ref_names = [r.name for r in refs] if isinstance(refs, list) else None
        if ref_names is not None:
            for field in ("reads", "writes"):
                for j, name in enumerate(getattr(s, field)):
                    if name not in ref_names and full():
                        add(("steps", i, field, j), "")
                    elif name not in ref_names:
                        known = ", ".join(ref_names) or "none declared"
                        add(
                            ("steps", i, field, j),
                            f"unknown state ref {shown(name)}{near(name, ref_names)}"
                            f" (declared refs: {known})",
                        )
    graph = {s.id: [d for d in s.depends_on if d in seen and d != s.id] for s in steps if s}
    if ready_rounds(graph) is not None:
        return  # no cycle: graphlib's search (slow on big plans) is only run to name one
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        cycle = list(exc.args[1])
        first = seen.get(cycle[0], 0)
        add(("steps", first, "depends_on"), "dependency cycle: " + " -> ".join(cycle))


def _output_problem(path: str, allow_outside: bool) -> str | None:
    """What is wrong with a declared output path, if anything."""
    if not path.strip() or "\x00" in path:
        return f"{shown(path)} is not a file path (empty, or holds a NUL character)"
    if allow_outside:
        return None
    posix = path.replace("\\", "/")
    climbs = posixpath.normpath(posix).split("/")[0] == ".."
    if climbs or PurePosixPath(posix).is_absolute() or PureWindowsPath(path).drive:
        return (
            f"{shown(path)} is outside the workdir (an absolute path, or one that climbs out with "
            "'..'); outputs are paths inside the workdir. To hash a file outside it on purpose, "
            "set allow_outside_workdir: true at the top of the plan"
        )
    return None


def repeated_item_ids(contract: GoalContract) -> list[tuple[str, int, str, str]]:
    """Every contract item whose id an earlier item already has, across ``acceptance`` and
    ``exit_conditions`` (``A1``… for a plain acceptance string, ``E1``… for an exit condition):
    (field, index, id, where it was first used)."""
    seen: dict[str, str] = {}
    out: list[tuple[str, int, str, str]] = []
    for field, prefix in (("acceptance", "A"), ("exit_conditions", "E")):
        for j, entry in enumerate(getattr(contract, field)):
            item_id = entry.id if isinstance(entry, ContractItem) else f"{prefix}{j + 1}"
            if item_id in seen:
                out.append((field, j, item_id, seen[item_id]))
            else:
                seen[item_id] = f"{field}[{j}]"
    return out


def check_contract_links(steps: list[StepSpec], contract: Any, add: Any) -> None:
    """An inline contract's item ids are unique, and each step's ``serves`` names one of its
    acceptance items or exit conditions (a contract block is read at run time: its ids are not
    known here)."""
    if not isinstance(contract, GoalContract):
        if contract is None:
            for i, s in enumerate(steps):
                if s.serves:
                    add(("steps", i, "serves"), "the plan has no goal contract: nothing to serve")
        return
    for field, j, item_id, first in repeated_item_ids(contract):
        add(
            ("contract", field, j),
            f"duplicate id {shown(item_id)} (first used by {first}; ids are unique across "
            "acceptance and exit_conditions; a plain string's id is A or E and its position)",
        )
    known = [*contract.acceptance_items(), *contract.exit_items()]
    for i, s in enumerate(steps):
        for j, item in enumerate(s.serves):
            if item not in known:
                listed = ", ".join(known) or "the contract has none"
                add(
                    ("steps", i, "serves", j),
                    f"unknown contract item {shown(item)}{near(item, known)} "
                    f"(the contract's acceptance items and exit conditions: {listed})",
                )
