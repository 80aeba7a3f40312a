"""The Prefect UI, opened in a real browser as a new user would, tells where a plan stands.

One session server (``prefect_server``), the example plan (examples/research_report: its
check-figures step fails once on purpose) run by the real ``waymark`` command three times — a
failed run, a run stopped by ``--max-steps``, a resume that completes it — and the pages those
runs print links to, rendered by Debian's Chromium (``/usr/bin/chromium``, driven by Playwright;
never ``playwright install``: no browser download works here). Screenshots go to
``$WAYMARK_SCREENSHOTS_DIR`` (``make screenshots`` writes the docs' pictures, docs/screenshots/),
else to the test's temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.helpers import run_cli

pytestmark = [pytest.mark.ui, pytest.mark.prefect]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 120_000  # a busy 2-core machine renders the UI slowly


def _links(stdout: str) -> dict[str, str]:
    return dict(re.findall(r"^  (flow run|plan page|plan page history): (\S+)$", stdout, re.M))


def _waymark(work: Path, *args: str, expect: int) -> dict[str, str]:
    proc = run_cli(*args, "plan.yaml", cwd=work, timeout=600)
    assert proc.returncode == expect, (proc.stdout[-3000:], proc.stderr[-3000:])
    links = _links(proc.stdout)
    assert {"flow run", "plan page"} <= set(links), proc.stdout[-2000:]
    return links


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.set_default_timeout(TIMEOUT_MS)
            yield tab
        finally:
            browser.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("WAYMARK_SCREENSHOTS_DIR") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _run_card(page: Any, plan_id: str, executor: str) -> Any:
    """The runs list's card of the flow run of ``plan_id`` by ``executor`` (its name:
    ``<plan> · <date and time> · <executor>``)."""
    name = rf"^{re.escape(plan_id)} · [-\d]+ [:\d]+ · {re.escape(executor)}$"
    link = page.get_by_role("link", name=re.compile(name))
    return page.locator('[data-slot="card"]').filter(has=link)


def _state_badge(scope: Any, name: str) -> Any:
    return scope.locator('[data-slot="badge"]').filter(has_text=re.compile(f"^{name}$"))


def test_the_ui_shows_where_the_plan_stands(
    prefect_server: str, tmp_path: Path, page: Any, shots: Path
) -> None:
    from playwright.sync_api import expect

    work = tmp_path / "research-report"
    src = ROOT / "examples" / "research_report"
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("run_demo.py", "__pycache__"))
    ui = prefect_server.removesuffix("/api")

    # 1. A failed run: check-figures fails once on purpose.
    failed = _waymark(work, "run", "--executor", "ui-agent-1", expect=1)
    assert failed["flow run"].startswith(f"{ui}/v2/runs/flow-run/")

    page.goto(failed["flow run"] + "?tab=TaskRuns")  # task runs named after the steps
    expect(_state_badge(page, "Failed").first).to_be_visible()
    for step in ("collect-sources", "collect-market", "analyse", "check-figures"):
        expect(page.get_by_text(step, exact=True).first).to_be_visible()
    page.screenshot(path=str(shots / "flow-run.png"))

    # 2. A run stopped by its budget does not read "Completed".
    stopped = _waymark(work, "run", "--executor", "ui-agent-2", "--max-steps", "1", expect=3)
    page.goto(stopped["flow run"])
    expect(_state_badge(page, "Stopped").first).to_be_visible()
    expect(
        page.get_by_text(re.compile(r"^research-report · [-\d]+ [:\d]+ · ui-agent-2$")).first
    ).to_be_visible()
    badges = page.locator('[data-slot="badge"]').all_inner_texts()
    assert "Completed" not in badges, badges

    # 3. The resume completes the plan.
    done = _waymark(work, "resume", "--executor", "ui-agent-3", expect=0)

    # The runs list shows the runs by plan name, each in its state.
    page.goto(f"{ui}/v2/runs")
    for executor, state in (("ui-agent-1", "Failed"), ("ui-agent-2", "Stopped")):
        card = _run_card(page, "research-report", executor)
        expect(card).to_have_count(1)
        expect(_state_badge(card, state)).to_be_visible()
    finished = _run_card(page, "research-report", "ui-agent-3")
    expect(_state_badge(finished, "Completed")).to_be_visible()
    expect(finished.get_by_text("plan:research-report")).to_be_visible()
    page.screenshot(path=str(shots / "runs-list.png"))

    # The blocks catalog lists both waymark blocks.
    page.goto(f"{ui}/v2/blocks/catalog")
    for block in ("Waymark Goal Contract", "Waymark State Refs"):
        expect(page.get_by_text(block, exact=True)).to_be_visible()

    # The plan page as the failed run left it: the failing step's error line and the next start.
    page.goto(failed["plan page"])
    expect(page.get_by_text("figure check failed: Q4 growth is stale").first).to_be_visible()
    expect(page.get_by_text(re.compile(r"Next start: check-figures")).first).to_be_visible()
    # (plan-page.png: test_the_flow_run_leads_to_the_plan_page_and_its_graph, below)
    # ... and as the resume left it: complete.
    page.goto(done["plan page"])
    expect(page.get_by_text(re.compile(r"complete · 6/6 done")).first).to_be_visible()


# --- States at a glance: a run that stopped for a person is never a green "Completed" ----------


def test_stopped_runs_are_not_green_in_the_runs_list(
    prefect_server: str, tmp_path: Path, page: Any, shots: Path
) -> None:
    """A review stop and a budget stop, run by ``waymark run``: in the runs list the first wears
    Prefect's failed badge (red: a person must act), the second the cancelled one (grey: neither
    failed nor done), neither the completed one (a green check); the flow run's page shows the
    state message, the plan's line (Prefect 3.9's run cards show none)."""
    from playwright.sync_api import expect

    from tests._support.helpers import write_plan

    ui = prefect_server.removesuffix("/api")
    (tmp_path / "terms.md").write_text("v1")
    write_plan(
        tmp_path,
        {
            "plan_id": "ui-states",
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [
                {"id": "collect", "run": "true"},
                {"id": "draft", "depends_on": ["collect"], "reads": ["terms"], "run": "true"},
            ],
        },
    )
    stopped = _waymark(tmp_path, "run", "--executor", "ui-budget", "--max-steps", "1", expect=3)
    (tmp_path / "terms.md").write_text("v2")  # a ref changed: draft stops for review
    review = _waymark(tmp_path, "run", "--executor", "ui-review", expect=4)

    page.goto(f"{ui}/v2/runs")
    for executor, name, kind in (
        ("ui-review", "NeedsReview", "failed"),
        ("ui-budget", "Stopped", "cancelled"),
    ):
        badge = _state_badge(_run_card(page, "ui-states", executor), name)
        expect(badge).to_be_visible()
        expect(badge).to_have_class(re.compile(rf"\bbg-state-{kind}-100\b"))
        assert "state-completed" not in (badge.get_attribute("class") or "")
    page.screenshot(path=str(shots / "runs-list-stops.png"))

    for links, line in (
        (review, "needs review at draft · 1/2 done · next: draft"),
        (stopped, "stopped after 1 step · 1/2 done · next: draft"),
    ):
        page.goto(links["flow run"])
        page.get_by_role("tab", name="Details").click()
        expect(page.get_by_text("State Message")).to_be_visible()
        expect(page.get_by_text(line, exact=True)).to_be_visible()


# --- The plan page: one click from the flow run, with the plan's graph ---------------------


#: The Mermaid graph as the UI draws it: an svg inside the artifact's Markdown.
GRAPH = '[data-testid="markdown-display"] svg[aria-roledescription^="flowchart"]'


def test_the_flow_run_leads_to_the_plan_page_and_its_graph(
    prefect_server: str, tmp_path: Path, page: Any, shots: Path
) -> None:
    """The flow run's page opens on its logs; an early line links this run's version of the
    plan page (the UI makes the address a link, opened in a new tab): one click. The page opens
    with the plan's graph — drawn, not only written — and its card says "plan page"."""
    from playwright.sync_api import expect

    work = tmp_path / "research-report"
    src = ROOT / "examples" / "research_report"
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("run_demo.py", "__pycache__"))
    failed = _waymark(work, "run", "--executor", "ui-page-1", expect=1)
    plan_page = failed["plan page"]
    assert re.fullmatch(r".*/v2/artifacts/artifact/[0-9a-f-]{36}", plan_page), plan_page

    page.goto(failed["flow run"])  # the Logs tab: what the flow run's page shows first
    link = page.get_by_role("link", name=plan_page, exact=True)
    expect(link).to_be_visible()
    with page.context.expect_page() as opened:
        link.click()
    tab = opened.value
    try:
        tab.set_default_timeout(TIMEOUT_MS)
        tab.wait_for_load_state()
        assert tab.url == plan_page
        expect(tab.get_by_role("heading", name="Quarterly research report")).to_be_visible()
        graph = tab.locator(GRAPH)
        expect(graph).to_have_count(1)
        expect(graph).to_be_visible()
        # the failed step's box, in red, marked failed and as the next start
        box = graph.locator("g.node.next")
        expect(box).to_have_count(1)
        expect(box).to_contain_text("check-figures")
        expect(box).to_contain_text("failed · next start")
        expect(graph.locator("g.node.completed")).to_have_count(3)
        expect(graph.locator("g.node.blocked")).to_have_count(2)
        for milestone in ("collect", "analyse", "write", "publish"):
            expect(graph.locator(".cluster").filter(has_text=milestone).first).to_be_visible()
        # a metric of a feature the example does not use reads "not used", not 0 %
        expect(tab.get_by_text("not used").first).to_be_visible()
        tab.screenshot(path=str(shots / "plan-page.png"))
    finally:
        tab.close()

    # Among the run's artifacts, the plan page's card says what it is.
    page.goto(failed["flow run"] + "?tab=Artifacts")
    card = page.locator('a[href*="/artifacts/artifact/"]').filter(has_text="-plan-page")
    expect(card).to_have_count(1)
    assert plan_page.endswith(str(card.get_attribute("href")))
    expect(card).to_contain_text("Plan page · failed at check-figures")
