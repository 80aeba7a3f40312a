"""Build a plan document from a source read (:class:`~.source.SourceDoc`), the same way for
every format.

* A parent (a Task Master task with subtasks, a beads epic, a Markdown item with nested items)
  is a step that depends on its children: it is done when they are, and its own acceptance is
  checked then. The parent and its children share the milestone named by the parent's step id
  (a Markdown heading, when there is one, is the milestone instead).
* Children that wait for none of their siblings also wait for what their parent waits for
  (Task Master and beads do not start a task's subtasks before the task could start).
* A dependency on something that is not in the plan (unknown, cancelled, tombstoned), on the
  step itself or on one of its own parents is reported as a warning and dropped.
* A parent's wait for a child is this importer's reading, not the source's: neither Task Master
  nor beads holds a task back for its subtasks (beads: an epic is ready while its children are
  open; only ``blocks`` blocks). Where that reading makes a cycle with the source's own
  dependencies (a child waits, through others, for its own parent), the parent does not wait
  for that child: a change, listed in :attr:`BuiltPlan.changes`.
* A cycle of the source's own dependencies is broken at a dependency on a task the source has
  done (a done task holds nothing back, in either tracker): a change too. A cycle of pending
  tasks alone is refused, naming where it is written: the tracker never makes them ready.
* Steps are listed in dependency order, in the source's order (beads: its priorities) where
  the graph allows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, NoReturn

from ..models import TITLE
from ..plan.spec import ID_MAX
from .graph import find_cycle, priority_order
from .source import SourceDep, SourceDoc, SourceItem, source_error, where

__all__ = ["BuiltPlan", "build_plan_data"]


@dataclass
class BuiltPlan:
    """The plan document (validated later, with the file it goes to) and what to record."""

    data: dict[str, Any]
    done: list[str]  # step ids the source records as done, in plan order
    warnings: list[str]
    changes: list[str]  # what the import changed to read the source as a plan (the report)


class _Graph:
    """The items by id, their parents and children, and their resolved dependencies."""

    def __init__(self, doc: SourceDoc, warn: list[str], changes: list[str]) -> None:
        self.doc = doc
        self.warn = warn
        self.changes = changes
        self.items = doc.items
        self.by_id = {it.step_id: it for it in doc.items}
        self.parent: dict[str, str] = {}
        self.children: dict[str, list[str]] = {}
        self.deps: dict[str, list[str]] = {}
        self.dep_at: dict[tuple[str, str], SourceDep | SourceItem] = {}
        self.inherited: dict[str, list[str]] = {}
        self.unlinked: dict[str, set[str]] = {}  # parent -> children it does not wait for

    def gone(self, target: str) -> str:
        why = self.doc.skipped.get(target)
        return f"which is {why}, not imported" if why else "which is not in the source"

    def at(self, obj: SourceItem | SourceDep) -> str:
        return where(self.doc.file, obj.loc, obj.line)

    def link_parents(self) -> None:
        for it in self.items:
            p = it.parent
            if p is None:
                continue
            if p in self.by_id and p != it.step_id:
                self.parent[it.step_id] = p
                self.children.setdefault(p, []).append(it.step_id)
            else:
                self.warn.append(f"{self.at(it)}: {it.step_id} belongs to {p}, {self.gone(p)}")
        loop = find_cycle(list(self.children), self.children)
        if loop is not None:
            child = self.by_id[loop[1]]
            raise source_error(
                self.doc.file,
                child.loc,
                f"parent loop: {' contains '.join(loop)}; expected a tree of parents",
                child.line,
            )

    def is_below(self, node: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is a parent (or a parent's parent...) of ``node``."""
        p = self.parent.get(node)
        while p is not None:
            if p == ancestor:
                return True
            p = self.parent.get(p)
        return False

    def resolve_deps(self) -> None:
        for it in self.items:
            sid = it.step_id
            out: list[str] = []
            for dep in it.deps:
                t = dep.target
                if t == sid:
                    self.warn.append(f"{self.at(dep)}: {sid} depends on itself: dropped")
                elif t not in self.by_id:
                    shown_t = t if len(t) <= ID_MAX else f"{t[:ID_MAX]}… ({len(t):,} characters)"
                    self.warn.append(
                        f"{self.at(dep)}: {sid} depends on {shown_t}, {self.gone(t)}: dropped"
                    )
                elif self.is_below(sid, t):
                    self.warn.append(
                        f"{self.at(dep)}: {sid} depends on {t}, which contains it (a parent "
                        "waits for its children): dropped"
                    )
                elif t not in out:
                    out.append(t)
                    self.dep_at[(sid, t)] = dep
            self.deps[sid] = out

    def edges(self, *, inherited: bool) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for it in self.items:
            sid = it.step_id
            off = self.unlinked.get(sid, ())
            kids = [c for c in self.children.get(sid, ()) if c not in off]
            e = self.deps[sid] + [c for c in kids if c not in self.deps[sid]]
            if inherited:
                e += [d for d in self.inherited.get(sid, ()) if d not in e]
            out[sid] = e
        return out

    def resolve_cycles(self) -> None:
        """Break each cycle where the tracker's own readiness is not held by it, else refuse it
        (module docstring): first a parent's wait for a child, then a dependency on a done
        task. Each change is listed, with the way round the cycle."""
        ids = [it.step_id for it in self.items]
        while (cycle := find_cycle(ids, self.edges(inherited=False))) is not None:
            pairs = list(zip(cycle, cycle[1:], strict=False))
            parent_links = (
                (a, b) for a, b in pairs if b in self.children.get(a, ()) and b not in self.deps[a]
            )
            done_links = ((a, b) for a, b in pairs if b in self.deps[a] and self.by_id[b].done)
            link = next(parent_links, None)
            if link is not None:
                a, b = link
                self.unlinked.setdefault(a, set()).add(b)
                at, why = self.at(self.by_id[b]), self.doc.parent_rule
                what = f"{a} does not wait for its child {b}"
            elif (link := next(done_links, None)) is not None:
                a, b = link
                self.deps[a].remove(b)
                at, why = self.at(self.dep_at[link]), "a done task holds nothing back"
                what = f"{a} does not wait for {b} ({self.by_id[b].status})"
            else:
                self.refuse(cycle)
            k = pairs.index(link)
            path = [*cycle[k + 1 :], *cycle[1 : k + 1]]  # b -> ... -> a
            self.changes.append(f"{at}: {what}, which waits for it ({' -> '.join(path)}): {why}")

    def refuse(self, cycle: list[str]) -> NoReturn:
        a, b = cycle[0], cycle[1]
        at = self.dep_at.get((a, b)) or self.by_id[b]
        hint = f" ({self.doc.cycle_hint})" if self.doc.cycle_hint else ""
        raise source_error(
            self.doc.file,
            at.loc,
            f"dependency cycle: {' -> '.join(cycle)}; expected tasks that do not wait for "
            f"themselves{hint}",
            at.line,
        )

    def inherit(self) -> None:
        """Children that wait for no sibling wait for what their parents wait for."""
        roots = deque(it.step_id for it in self.items if it.step_id not in self.parent)
        while roots:
            p = roots.popleft()
            kids = self.children.get(p)
            if not kids:
                continue
            roots.extend(kids)
            wanted = self.deps[p] + [d for d in self.inherited.get(p, ()) if d not in self.deps[p]]
            siblings = set(kids)
            for c in kids:
                if any(d in siblings for d in self.deps[c]):
                    continue
                extra = [
                    d
                    for d in wanted
                    if d != c and d not in self.deps[c] and not self.is_below(d, p)
                ]
                if extra:
                    self.inherited[c] = extra
        ids = [it.step_id for it in self.items]
        while (cycle := find_cycle(ids, self.edges(inherited=True))) is not None:
            for a, b in zip(cycle, cycle[1:], strict=False):
                if b in self.inherited.get(a, ()):
                    self.inherited[a].remove(b)
                    self.warn.append(
                        f"{a} would wait for {b} as its parent {self.parent[a]} does, but {b} "
                        f"needs {a} first: {a} does not wait for it"
                    )
                    break
            else:  # pragma: no cover - the source's own edges were checked acyclic
                raise AssertionError(f"unexpected cycle {cycle}")


def _title(title: str, where: str, warn: list[str]) -> str:
    """A source's title on one line, shortened (with a warning) to the plan file's limit."""
    text = " ".join(title.split())
    if TITLE.problem(text) is None:
        return text
    warn.append(
        f"{where}: its title has {len(text):,} characters: shortened to {TITLE.chars} "
        "(a plan's titles are one line)"
    )
    return text[: TITLE.chars - 1] + "…"


def _instructions(it: SourceItem) -> str:
    text = it.instructions.strip() or it.title.strip()
    return text or f"Complete {it.step_id}."


def _check_done(g: _Graph) -> None:
    """Warn about a done item that waits for something that is not done (recorded anyway)."""
    for it in g.items:
        if not it.done:
            continue
        off = g.unlinked.get(it.step_id, ())
        needed = g.deps[it.step_id] + [c for c in g.children.get(it.step_id, []) if c not in off]
        open_ = [d for d in needed if not g.by_id[d].done]
        if open_:
            named = ", ".join(f"{d} ({g.by_id[d].status})" for d in open_[:5])
            more = f" and {len(open_) - 5} more" if len(open_) > 5 else ""
            g.warn.append(
                f"{g.doc.file}: {it.step_id} is {it.status} but waits for {named}{more}, "
                "which is not done: recorded as completed anyway"
            )


def build_plan_data(doc: SourceDoc, *, plan_id: str, kind: str) -> BuiltPlan:
    """The plan document of ``doc`` (``kind`` agent or manual steps) and the steps it records
    as done. Raises :class:`~prefect_waymark.errors.PlanError` for a source that cannot be a
    plan (nothing to import, a cycle); everything else it can drop is a warning."""
    if not doc.items:
        left = f" ({len(doc.skipped)} left out: cancelled or deleted)" if doc.skipped else ""
        raise source_error(doc.file, "", f"nothing to import: no tasks{left}")
    warn = list(doc.warnings)
    changes = list(doc.changes)
    g = _Graph(doc, warn, changes)
    g.link_parents()
    g.resolve_deps()
    g.resolve_cycles()
    g.inherit()
    _check_done(g)
    edges = g.edges(inherited=True)
    position = {it.step_id: i for i, it in enumerate(doc.items)}
    order = priority_order(
        [it.step_id for it in doc.items],
        edges,
        key=lambda sid: (g.by_id[sid].priority, position[sid]),
    )
    steps: list[dict[str, Any]] = []
    for sid in order:
        it = g.by_id[sid]
        title = _title(it.title, f"{doc.file}: {sid}", warn)
        step: dict[str, Any] = {"id": sid, "title": title, "kind": kind}
        milestone = it.milestone or (sid if sid in g.children else g.parent.get(sid))
        if milestone:
            step["milestone"] = milestone
        if it.owner:
            step["owner"] = it.owner
        if edges[sid]:
            step["depends_on"] = edges[sid]
        step["instructions"] = _instructions(it)
        if it.acceptance:
            step["acceptance"] = it.acceptance
        steps.append(step)
    data = {"plan_id": plan_id, "title": _title(doc.title, doc.file, warn), "steps": steps}
    done = [sid for sid in order if g.by_id[sid].done]
    return BuiltPlan(data=data, done=done, warnings=warn, changes=changes)
