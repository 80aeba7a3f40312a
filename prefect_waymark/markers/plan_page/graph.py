"""The picture at the top of the plan page: a Mermaid graph (Prefect 3.9's UI draws a
```` ```mermaid ```` block of a Markdown artifact as a picture), built from the view the page
already has — no ledger read.

- A plan of at most :data:`GRAPH_STEPS_MAX` steps: one box per step (its id, title and status),
  coloured by status (one ``classDef`` per status), its dependencies as arrows, the steps of a
  milestone in a group (``subgraph``); the failed steps say so and the next start has a thick
  yellow border.
- A larger plan: one box per milestone — per milestone and branch when the plan has branches
  and at most :data:`_GROUPS_MAX` such pairs, each branch a group — with how many of its steps
  are in each status, coloured by the most urgent of them, and arrows where steps of one box
  depend on steps of another; at most :data:`_GROUPS_MAX` boxes (the last counts the rest).

At most :data:`_EDGES_MAX` arrows are drawn (Mermaid refuses more than 500).

Every piece of user text (ids, titles, milestone and branch names) goes through
:func:`prefect_waymark.text.mermaid.label`; the graph's own node names are ``s<n>``, ``g<n>``
and ``m<n>``, never user text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...ledger.progress_view import PlanView, StepView
from ...text.markdown import code_block
from ...text.mermaid import label

__all__ = ["GRAPH_STEPS_MAX", "Tallies", "Tally", "graph_section", "plan_graph", "tally"]

#: Plans of more steps than this get one box per milestone (and branch), with counts.
GRAPH_STEPS_MAX = 40
#: At most this many boxes in a large plan's graph (the rest are counted in one more box).
_GROUPS_MAX = 60
#: At most this many arrows.
_EDGES_MAX = 300

#: Fill, text and border colour per status, readable on the UI's dark code-block background.
_COLOURS = {
    "completed": ("#2e7d32", "#ffffff", "#1b5e20"),
    "in_progress": ("#1565c0", "#ffffff", "#0d47a1"),
    "needs_review": ("#ef6c00", "#ffffff", "#e65100"),
    "failed": ("#c62828", "#ffffff", "#7f0000"),
    "blocked": ("#6d4c41", "#ffffff", "#3e2723"),
    "pending": ("#eceff1", "#263238", "#90a4ae"),
}
_WORDS = {
    "completed": "done",
    "in_progress": "running",
    "needs_review": "needs review",
    "failed": "failed",
    "blocked": "blocked",
    "pending": "pending",
}
#: A box of many steps takes the colour of the first status here that one of its steps has.
_URGENT = ("failed", "needs_review", "blocked", "in_progress")
_LEGEND = (
    "Green: done · blue: running · orange: needs review · red: failed · brown: blocked · "
    "grey: pending; thick yellow border: the next start."
)


def graph_section(view: PlanView, counted: Tallies | None = None) -> list[str]:
    """The page's picture: the Mermaid block and one line that reads its colours (``counted``:
    the view's :func:`tally`, if the caller has it)."""
    if not view.steps:
        return []
    large = len(view.steps) > GRAPH_STEPS_MAX
    counted = counted or (tally(view) if large else None)
    text = plan_graph(view, counted)
    out = ["", code_block(text, "mermaid"), "", _LEGEND]
    if counted is not None and large:
        per = "milestone and branch" if _by_branch(counted.pairs) else "milestone"
        out[-1] += (
            f" {len(view.steps)} steps: one box per {per}, with its counts; every step is in "
            "the tables below."
        )
    return out


def plan_graph(view: PlanView, counted: Tallies | None = None) -> str:
    """The Mermaid text of the plan's graph (``flowchart``), without the fence."""
    if len(view.steps) <= GRAPH_STEPS_MAX:
        return "\n".join(_steps_graph(view))
    return "\n".join(_groups_graph(view, counted))


def _style(status: str, *, next_start: bool = False) -> str:
    fill, colour, border = _COLOURS[status]
    if next_start:  # the next start: its status's colours with a thick yellow border
        return f"fill:{fill},color:{colour},stroke:#fdd835,stroke-width:5px"
    return f"fill:{fill},color:{colour},stroke:{border}"


def _class_defs(nxt_status: str | None) -> list[str]:
    out = [f"  classDef {status} {_style(status)}" for status in _COLOURS]
    if nxt_status is not None:
        out.append(f"  classDef next {_style(nxt_status, next_start=True)}")
    return out


def _edges(pairs: Iterable[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    for a, b in pairs:
        if len(out) == _EDGES_MAX:
            break
        out.append(f"  {a} --> {b}")
    return out


def _step_box(node: str, s: StepView, nxt: str | None) -> str:
    lines = [label(s.id, 40)]
    if s.title:
        lines.append(label(s.title, 48))
    words = _WORDS[s.status] + (" · next start" if s.id == nxt else "")
    lines.append(label(("✖ " if s.status == "failed" else "") + words))
    return f'{node}["{"<br>".join(lines)}"]'


def _steps_graph(view: PlanView) -> list[str]:
    nxt = view.next_start
    nodes = {s.id: f"s{i}" for i, s in enumerate(view.steps)}
    milestones: dict[str, list[StepView]] = {}
    loose: list[StepView] = []
    for s in view.steps:
        if s.milestone:
            milestones.setdefault(s.milestone, []).append(s)
        else:
            loose.append(s)
    out = ["flowchart LR"]
    for m, (name, steps) in enumerate(milestones.items()):
        out.append(f'  subgraph m{m}["{label(name)}"]')
        out += [f"    {_step_box(nodes[s.id], s, nxt)}" for s in steps]
        out.append("  end")
    out += [f"  {_step_box(nodes[s.id], s, nxt)}" for s in loose]
    out += _edges((nodes[d], nodes[s.id]) for s in view.steps for d in s.depends_on if d in nodes)
    nxt_status = view.step(nxt).status if nxt in nodes else None
    out += _class_defs(nxt_status)
    by_status: dict[str, list[str]] = {}
    for s in view.steps:
        if s.id != nxt:
            by_status.setdefault(s.status, []).append(nodes[s.id])
    out += [f"  class {','.join(ids)} {status}" for status, ids in by_status.items()]
    if nxt_status is not None and nxt is not None:
        out.append(f"  class {nodes[nxt]} next")
    return out


class Tally:
    """How many steps of one milestone in one branch are in each status (a box of a large
    plan's graph: the steps of one milestone, in one branch or all, or of every milestone past
    the first :data:`_GROUPS_MAX` - 1, ``merged`` of them)."""

    def __init__(self, branch: str | None, milestone: str | None) -> None:
        self.branch = branch
        self.milestone = milestone
        self.counts = dict.fromkeys(_COLOURS, 0)
        self.first_failed: str | None = None
        self.merged = 0

    def take(self, other: Tally) -> None:
        for status, n in other.counts.items():
            self.counts[status] += n
        self.first_failed = self.first_failed or other.first_failed

    @property
    def status(self) -> str:
        urgent = next((st for st in _URGENT if self.counts[st]), None)
        if urgent is not None:
            return urgent
        done = self.counts["completed"] == sum(self.counts.values())
        return "completed" if done else "pending"

    def box(self, node: str, nxt: str | None) -> str:
        total = sum(self.counts.values())
        name = self.milestone or ("(no milestone)" if self.branch is None else self.branch)
        if self.merged:
            name = f"… {self.merged} more milestones"
        lines = [label(name), label(f"{self.counts['completed']}/{total} done")]
        rest = [f"{n} {_WORDS[st]}" for st, n in self.counts.items() if n and st != "completed"]
        if rest:
            lines.append(label(" · ".join(rest)))
        if self.first_failed is not None:
            lines.append(label(f"✖ failed: {self.first_failed}", 48))
        if nxt is not None:
            lines.append(label(f"next start: {nxt}", 48))
        return f'{node}["{"<br>".join(lines)}"]'


@dataclass(frozen=True)
class Tallies:
    """One pass over a view's steps, which the page's picture and its Progress section both
    count from: each (branch, milestone) pair in plan order with its counts (``pairs``) and
    the index of each step's pair (``pair_of``)."""

    pairs: list[Tally]
    pair_of: dict[str, int]


def tally(view: PlanView) -> Tallies:
    """The view's steps counted per branch and milestone, in one pass."""
    index: dict[tuple[str, str | None], tuple[int, dict[str, int]]] = {}
    pairs: list[Tally] = []
    pair_of: dict[str, int] = {}
    for s in view.steps:
        key = (s.branch, s.milestone)
        found = index.get(key)
        if found is None:
            pairs.append(Tally(*key))
            found = index[key] = (len(pairs) - 1, pairs[-1].counts)
        found[1][s.status] += 1
        pair_of[s.id] = found[0]
        if s.status == "failed" and pairs[found[0]].first_failed is None:
            pairs[found[0]].first_failed = s.id
    return Tallies(pairs, pair_of)


def _by_branch(pairs: list[Tally]) -> bool:
    """Whether a large plan's boxes are per branch and milestone: several branches and at
    most :data:`_GROUPS_MAX` pairs (else per milestone)."""
    return len(pairs) <= _GROUPS_MAX and len({g.branch for g in pairs}) > 1


def _boxes(pairs: list[Tally]) -> tuple[list[Tally], list[int], bool]:
    """The boxes (plan order, at most :data:`_GROUPS_MAX`: the last counts the rest), the box
    of each pair, and whether the boxes are per branch (else per milestone)."""
    by_branch = _by_branch(pairs)
    keys = [(g.branch if by_branch else None, g.milestone) for g in pairs]
    index: dict[tuple[str | None, str | None], int] = {}
    for key in keys:
        index.setdefault(key, len(index))
    boxes = [Tally(*key) for key in list(index)[:_GROUPS_MAX]]
    if len(index) > _GROUPS_MAX:  # the last box counts every milestone from there on
        boxes[-1] = Tally(None, None)
        boxes[-1].merged = len(index) - (_GROUPS_MAX - 1)
    box_of = [min(index[key], _GROUPS_MAX - 1) for key in keys]
    for g, i in zip(pairs, box_of, strict=True):
        boxes[i].take(g)
    return boxes, box_of, by_branch


def _groups_graph(view: PlanView, counted: Tallies | None) -> list[str]:
    counted = counted or tally(view)
    pair_of = counted.pair_of
    boxes, box_of, by_branch = _boxes(counted.pairs)
    nxt = view.next_start
    nxt_box = box_of[pair_of[nxt]] if nxt in pair_of else None
    out = ["flowchart LR"]
    branches: dict[str | None, list[int]] = {}
    for i, g in enumerate(boxes):
        branches.setdefault(g.branch if by_branch and not g.merged else None, []).append(i)
    for b, (branch, members) in enumerate(branches.items()):
        indent = "    " if branch is not None else "  "
        if branch is not None:
            out.append(f'  subgraph m{b}["{label(branch)}"]')
        out += [indent + boxes[i].box(f"g{i}", nxt if i == nxt_box else None) for i in members]
        if branch is not None:
            out.append("  end")
    arrows: dict[tuple[int, int], None] = {}
    for s in view.steps:
        if s.depends_on:
            to = box_of[pair_of[s.id]]
            for d in s.depends_on:
                frm = box_of[pair_of[d]] if d in pair_of else to
                if frm != to:
                    arrows[(frm, to)] = None
    out += _edges((f"g{a}", f"g{b}") for a, b in arrows)
    out += _class_defs(boxes[nxt_box].status if nxt_box is not None else None)
    by_status: dict[str, list[str]] = {}
    for i, g in enumerate(boxes):
        if i != nxt_box:
            by_status.setdefault(g.status, []).append(f"g{i}")
    out += [f"  class {','.join(ids)} {status}" for status, ids in by_status.items()]
    if nxt_box is not None:
        out.append(f"  class g{nxt_box} next")
    return out
