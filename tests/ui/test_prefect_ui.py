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
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from tests._support.helpers import run_cli
from tests._support.resume_helpers import start_logged

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


# --- A deployment on a real worker: its runs show plan and date; the review form ----------
#
# One deployment (``waymark deploy`` to a process pool, ``--max-steps 1 --review-wait 900``) and
# one worker started as ``deploy`` prints it, shared by the two tests below (module fixture
# ``deployed``; the worker is stopped at the end, SIGINT then SIGTERM, whatever happened). The
# fixture's first run stops after one step (Stopped); the review test changes terms.md under the
# step that reads it, and that run suspends with waymark's review form.

DEPLOYED_PLAN = "ui-deploy"

#: The part of an element's text the browser shows: its characters that end left of the box's
#: right edge less 1 em (room for the ellipsis of a CSS-truncated line).
SHOWN_TEXT = """el => {
  const box = el.getBoundingClientRect();
  const room = box.right - parseFloat(getComputedStyle(el).fontSize);
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let shown = "";
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      if (range.getBoundingClientRect().right > room) return shown;
      shown += node.data[i];
    }
  }
  return shown;
}"""


def _settled(page: Any) -> None:
    """Wait until the page shows no loading placeholder (the UI's pulsing skeletons)."""
    from playwright.sync_api import expect

    expect(page.locator(".animate-pulse")).to_have_count(0)


@dataclass
class Deployed:
    """The deployment, its worker, and its first run (final)."""

    work: Path
    deployment_id: UUID
    #: the line ``waymark deploy`` printed: ``deployment page (...): <url>``
    page_link: str
    worker: subprocess.Popen[bytes]
    log: Path
    first: Any


def _trigger(deployment_id: UUID) -> UUID:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        run_id: UUID = client.create_flow_run_from_deployment(deployment_id).id
    return run_id


def _wait_run(deployed: Deployed, run_id: UUID, done: Any, what: str) -> Any:
    """Poll the flow run until ``done(run)`` (300 s at most), the worker still running."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + 300
    while True:
        tail = deployed.log.read_text(errors="replace")[-4000:]
        assert deployed.worker.poll() is None, f"the worker exited:\n{tail}"
        with get_client(sync_client=True) as client:
            run = client.read_flow_run(run_id)
        if run.state is not None and done(run):
            return run
        assert time.monotonic() < deadline, f"run {run_id} not {what}: {run.state}\n{tail}"
        time.sleep(1)


def _final(deployed: Deployed, run_id: UUID) -> Any:
    return _wait_run(deployed, run_id, lambda r: r.state.is_final(), "final")


@pytest.fixture(scope="module")
def deployed(prefect_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    from tests._support.helpers import write_plan
    from tests._support.team_server import stop_group

    work = tmp_path_factory.mktemp("ui-deploy")
    (work / "terms.md").write_text("v1")
    write_plan(
        work,
        {
            "plan_id": DEPLOYED_PLAN,
            "title": "Terms review",
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [
                {"id": "collect", "run": "true"},
                {"id": "draft", "depends_on": ["collect"], "reads": ["terms"], "run": "true"},
            ],
        },
    )
    pool = f"ui-pool-{uuid4().hex[:6]}"
    proc = run_cli(
        "deploy", "plan.yaml", "--pool", pool, "--max-steps", "1", "--review-wait", "900",
        cwd=work,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dep_id = re.search(
        rf"^deployed waymark-run-plan/{DEPLOYED_PLAN} \(([-0-9a-f]{{36}})\)", proc.stdout, re.M
    )
    page_link = re.search(r"^  deployment page \(.+\): (\S+)$", proc.stdout, re.M)
    worker_line = re.search(r"^    (waymark worker --pool \S+)$", proc.stdout, re.M)
    assert dep_id and page_link and worker_line, proc.stdout
    log = work / "worker.log"
    shell = dict(os.environ, PREFECT_WORKER_QUERY_SECONDS="2")  # a test's patience
    shell["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    # the printed line, with --limit 1 (one run at a time)
    worker = start_logged(
        ["bash", "-c", f"{worker_line.group(1)} --limit 1"], cwd=work, log=log, env=shell
    )
    try:
        deployed = Deployed(work, UUID(dep_id.group(1)), page_link.group(1), worker, log, None)
        deployed.first = _final(deployed, _trigger(deployed.deployment_id))
        yield deployed
    finally:
        stop_group(worker, grace=3)  # SIGINT, then SIGTERM (DESIGN: workers)


@pytest.mark.slow  # a worker
def test_the_deployments_runs_show_plan_and_date(
    deployed: Deployed, prefect_server: str, page: Any, shots: Path
) -> None:
    """The deployment's page opens on its Runs list: the run's name shows the plan and the whole
    date (the browser cuts the worker's long name, not the date). "Where it stands" is in the
    Description tab — Prefect 3.9 shows no description on the page's first screen — and the
    deployment page link ``waymark deploy`` prints opens that tab."""
    from playwright.sync_api import expect

    first = deployed.first
    assert (first.state.type.value, first.state.name) == ("CANCELLED", "Stopped"), first.state
    ui = prefect_server.removesuffix("/api")

    page.goto(f"{ui}/v2/deployments/deployment/{deployed.deployment_id}")  # as a person finds it
    expect(page.get_by_role("tab", name="Runs")).to_have_attribute("aria-selected", "true")
    link = page.get_by_role("link", name=first.name, exact=True)
    expect(link).to_be_visible()
    shown = link.evaluate(SHOWN_TEXT)
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    assert re.match(rf"{DEPLOYED_PLAN} · {stamp}(?= |$)", shown), (shown, first.name)
    card = page.locator('[data-slot="card"]').filter(has=link)
    expect(_state_badge(card, "Stopped")).to_be_visible()
    expect(card).to_contain_text("1 Task run")  # collect; --max-steps 1
    _settled(page)
    page.screenshot(path=str(shots / "deployment.png"))

    # The printed link opens the Description tab: where the plan stands, after which run.
    assert deployed.page_link == (
        f"{ui}/v2/deployments/deployment/{deployed.deployment_id}?tab=Description"
    )
    page.goto(deployed.page_link)
    expect(page.get_by_role("tab", name="Description")).to_have_attribute("aria-selected", "true")
    expect(
        page.get_by_text(f"Advance plan '{DEPLOYED_PLAN}' (Terms review): up to 1 step per")
    ).to_be_visible()
    stands = "Where it stands: stopped after 1 step · 1/2 done · next: draft"
    expect(page.get_by_text(f"{stands} (after run {first.name}, ")).to_be_visible()
    _settled(page)
    page.screenshot(path=str(shots / "deployment-description.png"))


@pytest.mark.slow  # a worker
def test_the_review_form_answers_a_suspended_deployment_run(
    deployed: Deployed, prefect_server: str, page: Any, shots: Path
) -> None:
    """A review stop in a deployment's run with ``--review-wait`` suspends it; its page's menu
    has Resume, which opens waymark's review form (``ReviewInput``: its description above, each
    field with its own); answered in the browser with "accept", the run is taken up again by the
    worker and completes, and the ledger records the answer as given."""
    from typing import get_args

    from playwright.sync_api import expect

    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.review.signal import ReviewInput

    ui = prefect_server.removesuffix("/api")
    (deployed.work / "terms.md").write_text("v2")  # a ref changed under draft: a review stop
    run_id = _trigger(deployed.deployment_id)
    run = _wait_run(
        deployed, run_id, lambda r: r.state.is_paused() or r.state.is_final(), "suspended"
    )
    assert (run.state.type.value, run.state.name) == ("PAUSED", "Suspended"), run.state

    page.goto(f"{ui}/v2/runs/flow-run/{run_id}")
    expect(_state_badge(page, "Suspended").first).to_be_visible()
    page.get_by_role("button", name="Open menu").first.click()  # the run header's menu
    page.get_by_role("menuitem", name="Resume", exact=True).click()
    form = page.get_by_role("dialog")
    expect(form.get_by_role("heading", name="Resume Flow Run")).to_be_visible()
    # waymark's description: why it stopped, what each answer does, where the plan page is
    expect(
        form.get_by_text(f"Plan {DEPLOYED_PLAN} stopped at step draft for review.")
    ).to_be_visible()
    expect(form.get_by_text(re.compile(r"^state ref terms was version sha256:"))).to_be_visible()
    plan_page = form.get_by_role("link", name="the plan page", exact=True)
    expect(plan_page).to_have_attribute(
        "href", re.compile(rf"^{re.escape(ui)}/v2/artifacts/key/waymark-{DEPLOYED_PLAN}-")
    )
    # the form's fields, as ReviewInput defines them, each with its description
    for name, field in ReviewInput.model_fields.items():
        label = name.capitalize() + ("" if field.is_required() else " (Optional)")
        expect(
            form.locator("label").filter(has_text=re.compile(f"^{re.escape(label)}$"))
        ).to_be_visible()
        expect(form.get_by_text(str(field.description), exact=True)).to_be_visible()
    decision = form.get_by_role("button", name="Select Decision")
    decision.click()
    choices = get_args(ReviewInput.model_fields["decision"].annotation)
    expect(page.get_by_role("option")).to_have_text(list(choices))  # accept, rerun, abort
    page.get_by_role("option", name="accept", exact=True).click()
    expect(decision).to_have_text("accept")
    form.get_by_label("Reason (Optional)").fill("terms v2 read in the browser")
    form.get_by_label("By (Optional)").fill("ui-browser")
    page.set_viewport_size({"width": 1400, "height": 1600})  # the whole form in the picture
    try:
        expect(form.get_by_role("button", name="Resume", exact=True)).to_be_in_viewport()
        _settled(page)
        page.screenshot(path=str(shots / "review-form.png"))
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})

    form.get_by_role("button", name="Resume", exact=True).click()
    expect(page.get_by_text("Flow run resumed")).to_be_visible()
    done = _final(deployed, run_id)  # the worker takes it up again: draft runs, the plan is done
    assert (done.state.type.value, done.state.name) == ("COMPLETED", "Completed"), done.state
    assert done.state.message == "complete · 2/2 done", done.state.message
    page.reload()
    expect(_state_badge(page, "Completed").first).to_be_visible()

    with open_ledger(f"sqlite:///{deployed.work / '.waymark' / 'ledger.db'}") as led:
        accepted = list(led.events(DEPLOYED_PLAN, kinds=["step_review_accepted"]))
        resumed = list(led.events(DEPLOYED_PLAN, kinds=["review_resumed"]))
    assert [(e.step_id, e.data["by"], e.data["reason"]) for e in accepted] == [
        ("draft", "ui-browser", "terms v2 read in the browser")
    ]
    assert [e.data["applied"] for e in resumed] == [True]  # the form's answer, applied first
