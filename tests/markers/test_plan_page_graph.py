"""The plan page's picture: the Mermaid text built from the view (no Prefect, no browser —
tests/ui/test_prefect_ui.py checks that the UI draws it), and the label escaping that keeps a
hostile step title inside its box."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from prefect_waymark.ledger.progress_view import PlanView, build_view
from prefect_waymark.ledger.step_state import StepState
from prefect_waymark.markers.plan_page.graph import GRAPH_STEPS_MAX, graph_section, plan_graph
from prefect_waymark.plan.loader import validate_plan_data
from prefect_waymark.text.mermaid import label

EXAMPLES = int(os.environ.get("WAYMARK_PROPERTY_EXAMPLES", "200"))

#: Every line of the graph is one of these statements; user text only inside ``["..."]``.
_LABEL = r'\["[A-Za-z0-9 \-_.,:/!?\'+*=@~$#;]*(?:<br>[A-Za-z0-9 \-_.,:/!?\'+*=@~$#;]*)*"\]'
_STATEMENT = re.compile(
    r"^(flowchart LR"
    rf"|  subgraph m\d+{_LABEL}"
    r"|  end"
    rf"|(  |    )[sg]\d+{_LABEL}"
    r"|  [sg]\d+ --> [sg]\d+"
    r"|  classDef (completed|in_progress|needs_review|failed|blocked|pending|next) [a-z0-9:#,-]+"
    r"|  class [sg]\d+(,[sg]\d+)* (completed|in_progress|needs_review|failed|blocked|pending|next)"
    r")$"
)


def _view(steps: list[dict[str, Any]], states: dict[str, StepState]) -> PlanView:
    for s in steps:
        s.setdefault("run", "true")
    doc = {"plan_id": "graph", "steps": steps}
    plan = validate_plan_data(doc, source="/nonexistent/plan.yaml", base_dir=Path("/nonexistent"))
    return build_view(plan, states)


def _report() -> PlanView:
    """The example plan as its failed first run leaves it: check-figures failed."""
    steps: list[dict[str, Any]] = [
        {"id": "collect-sources", "title": "Collect the source articles", "milestone": "collect",
         "branch": "research"},
        {"id": "collect-market", "title": "Collect the market figures", "milestone": "collect",
         "branch": "market"},
        {"id": "analyse", "title": "Analyse sources and figures", "milestone": "analyse",
         "depends_on": ["collect-sources", "collect-market"]},
        {"id": "check-figures", "title": "Recompute every figure", "milestone": "analyse",
         "depends_on": ["analyse"]},
        {"id": "draft", "title": "Draft the report", "milestone": "write",
         "depends_on": ["analyse", "check-figures"]},
        {"id": "publish", "title": "Publish the report", "milestone": "publish",
         "depends_on": ["draft"]},
    ]  # fmt: skip
    done = {s: StepState(step_id=s, status="completed") for s in ("collect-sources",
            "collect-market", "analyse")}  # fmt: skip
    failed = StepState(step_id="check-figures", status="failed", error="stale")
    return _view(steps, {**done, "check-figures": failed})


def _statements(text: str) -> None:
    for line in text.splitlines():
        assert _STATEMENT.match(line), line


def test_a_small_plan_is_drawn_step_by_step_by_status_in_its_milestones() -> None:
    text = plan_graph(_report())
    _statements(text)
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    # the milestones are groups, in plan order, each with its steps
    groups = [line for line in lines if "subgraph" in line]
    assert groups == [
        '  subgraph m0["collect"]',
        '  subgraph m1["analyse"]',
        '  subgraph m2["write"]',
        '  subgraph m3["publish"]',
    ]
    at = lines.index('  subgraph m1["analyse"]')
    assert lines[at + 1].startswith('    s2["analyse<br>Analyse sources and figures<br>done"]')
    # the failed step is marked in words and, being the next start, drawn as "next"
    failed = '    s3["check-figures<br>Recompute every figure<br>#10006; failed #183; next start"]'
    assert failed in lines
    assert "  class s3 next" in lines
    assert "  classDef next fill:#c62828,color:#ffffff,stroke:#fdd835,stroke-width:5px" in lines
    assert "  class s0,s1,s2 completed" in lines
    assert "  class s4,s5 blocked" in lines  # behind the failed step
    # one arrow per dependency
    assert [line for line in lines if "-->" in line] == [
        "  s0 --> s2", "  s1 --> s2", "  s2 --> s3", "  s2 --> s4", "  s3 --> s4", "  s4 --> s5",
    ]  # fmt: skip


def test_the_section_is_a_mermaid_block_and_a_line_that_reads_its_colours() -> None:
    out = graph_section(_report())
    assert out[1].startswith("```mermaid\nflowchart LR\n") and out[1].endswith("\n```")
    assert out[3].startswith("Green: done · blue: running")


def test_the_next_start_of_a_pending_plan_has_the_pending_colours() -> None:
    view = _view([{"id": "a"}, {"id": "b", "depends_on": ["a"]}], {})
    lines = plan_graph(view).splitlines()
    assert '  s0["a<br>pending #183; next start"]' in lines
    assert "  classDef next fill:#eceff1,color:#263238,stroke:#fdd835,stroke-width:5px" in lines
    assert "  class s1 pending" in lines and "  class s0 next" in lines
    assert not any("subgraph" in line for line in lines)  # no milestone: no group


def _big(n: int, milestones: int, branches: int) -> PlanView:
    steps: list[dict[str, Any]] = []
    for i in range(n):
        step: dict[str, Any] = {"id": f"s{i}", "milestone": f"week {i * milestones // n + 1}"}
        step["branch"] = f"b{i % branches}"
        if i >= branches:
            step["depends_on"] = [f"s{i - branches}"]
        steps.append(step)
    states = {f"s{i}": StepState(step_id=f"s{i}", status="completed") for i in range(n // 2)}
    states[f"s{n // 2}"] = StepState(step_id=f"s{n // 2}", status="failed", error="boom")
    states[f"s{n // 2 + 1}"] = StepState(step_id=f"s{n // 2 + 1}", status="in_progress")
    return _view(steps, states)


def test_a_large_plan_is_drawn_by_milestone_and_branch_with_counts() -> None:
    view = _big(120, milestones=6, branches=2)
    assert len(view.steps) > GRAPH_STEPS_MAX
    text = plan_graph(view)
    _statements(text)
    lines = text.splitlines()
    assert not any(re.match(r"^\s+s\d+\[", line) for line in lines)  # no box per step
    assert [line for line in lines if "subgraph" in line] == [
        '  subgraph m0["b0"]',
        '  subgraph m1["b1"]',
    ]
    boxes = [line for line in lines if re.match(r"^    g\d+\[", line)]
    assert len(boxes) == 12  # 6 milestones x 2 branches
    # week 4 of b0 holds the failed step s60 (the next start) and 9 steps blocked behind it
    assert (
        '    g6["week 4<br>0/10 done<br>1 failed #183; 9 blocked<br>#10006; failed: s60<br>'
        'next start: s60"]'
    ) in lines
    assert '    g7["week 4<br>0/10 done<br>1 running #183; 9 pending"]' in lines
    assert "  class g6 next" in lines and "  class g7 in_progress" in lines
    assert "  class g0,g1,g2,g3,g4,g5 completed" in lines
    assert "  g4 --> g6" in lines and "  g6 --> g8" in lines
    section = graph_section(view)
    assert section[-1].endswith(
        "120 steps: one box per milestone and branch, with its counts; every step is in "
        "the tables below."
    )


def test_a_plan_of_many_milestones_is_cut_to_sixty_boxes_the_last_counting_the_rest() -> None:
    view = _big(700, milestones=70, branches=3)  # 210 pairs: milestones only, then capped
    lines = plan_graph(view).splitlines()
    _statements("\n".join(lines))
    boxes = [line for line in lines if re.match(r"^  g\d+\[", line)]
    assert len(boxes) == 60 and not any("subgraph" in line for line in lines)
    assert boxes[-1].startswith('  g59["#8230; 11 more milestones<br>0/110 done<br>')  # 70 - 59
    assert boxes[0] == '  g0["week 1<br>10/10 done"]'


def test_a_ten_thousand_step_plan_is_drawn_in_one_box_per_milestone() -> None:
    text = plan_graph(_big(10_000, milestones=100, branches=4))
    assert len(text) < 20_000  # far below Mermaid's 50,000-character limit
    assert text.count("-->") <= 300


HOSTILE = [
    'Say "hi" [x] (y) {z} | pipe <b>bold</b> <script>alert(1)</script>',
    '%%{init: {"securityLevel": "loose"}}%%',
    "two\nlines\n```\n# a heading",
    "日本語 ✓ émoji 🎉 `tick` #quot; &amp; ; --> s0 ]) click s0 call alert()",
    "\u202eright-to-left\u200b\x00\x1b[31m",
    "x" * 200,
]


def test_hostile_titles_stay_inside_their_boxes() -> None:
    steps = [{"id": f"h{i}", "title": t, "milestone": 'm "q" <i>'} for i, t in enumerate(HOSTILE)]
    text = plan_graph(_view(steps, {}))
    _statements(text)
    assert "%%" not in text and "<b>" not in text and "<script" not in text and "`" not in text
    assert "\u202e" not in text and "\x1b" not in text
    # one line per statement: flowchart, subgraph, the boxes, end, 7 classDefs, 2 class lines
    assert len(text.splitlines()) == 1 + 1 + len(HOSTILE) + 1 + 7 + 2
    assert (
        "#26085;#26412;#35486; #10003; #233;moji #127881; #96;tick#96; #35;quot#59; #38;amp#59;"
    ) in text
    assert "x" * 47 + "#8230;" in text and "x" * 48 not in text  # a title is cut to 48


def test_label_examples() -> None:
    assert label('a "b" <c>') == "a #34;b#34; #60;c#62;"
    assert label("pipe | [bracket] (paren)") == "pipe #124; #91;bracket#93; #40;paren#41;"
    assert label("  two\n\nlines\t") == "two lines"
    assert label("a\x00b\u200bc") == "abc"
    assert label(None) == ""
    assert label("abcdef", limit=4) == "abc#8230;"


def _decoded(text: str) -> str:
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), text)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=220), st.integers(min_value=1, max_value=200))
def test_label_is_one_safe_line_that_reads_as_the_title(text: str, limit: int) -> None:
    out = label(text, limit)
    # only characters without a meaning to Mermaid, HTML or Markdown; the rest as #<n>;
    assert re.fullmatch(r"[A-Za-z0-9 \-_.,:/!?'+*=@~$#;]*", out), out
    assert re.fullmatch(r"([^#;]|#\d+;)*", out), out  # every # starts a whole entity
    decoded = _decoded(out)
    # what the box shows: the title on one line, without control or format characters
    assert "\n" not in decoded and "\r" not in decoded
    assert len(decoded) <= limit
    shown = "".join(c for c in " ".join(text.split()) if unicodedata.category(c)[0] != "C")
    shown = " ".join(shown.split())
    if len(shown) <= limit:
        assert decoded == shown
    else:
        assert decoded == shown[: limit - 1].rstrip() + "…"


@settings(max_examples=max(20, EXAMPLES // 4), deadline=None)
@given(st.lists(st.text(max_size=200), min_size=1, max_size=8), st.text(max_size=80))
def test_any_titles_give_a_graph_of_known_statements(titles: list[str], milestone: str) -> None:
    steps = [
        {"id": f"t{i}", "title": t, "milestone": milestone or None} for i, t in enumerate(titles)
    ]
    _statements(plan_graph(_view(steps, {})))


def test_the_page_opens_with_the_picture_and_a_check_in_version_says_so() -> None:
    from datetime import datetime, timezone

    from prefect_waymark.markers.plan_copy import PlanCopy
    from prefect_waymark.markers.plan_page.render import PageInput, render_plan_page

    view = _report()
    copy = PlanCopy("graph", "3f9a2c1d", "/srv/graph", "sqlite:////srv/graph/ledger.db")
    now = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    plan = validate_plan_data(
        {"plan_id": "graph", "steps": [{"id": s.id, "run": "true"} for s in view.steps]},
        source="/nonexistent/plan.yaml",
        base_dir=Path("/nonexistent"),
    )
    page = PageInput(
        plan=plan, states={}, events=[], copy=copy, now=now, known_view=view,
        checkin="draft done by writer",
    )  # fmt: skip
    md = render_plan_page(page)
    # the header's lines, then the picture, then the sections
    assert md.index("**Updated:**") < md.index("```mermaid") < md.index("## Failed (1)")
    assert "**This version:** published by the check-in “draft done by writer”" in md
    assert md.count("```mermaid") == 1
