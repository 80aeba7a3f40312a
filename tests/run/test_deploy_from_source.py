"""``waymark init`` + ``waymark deploy --source``: a deployment whose every flow run starts from a
fresh ``git clone`` of the user's repository. A local bare repository is
the source; real ``waymark`` and ``prefect worker --run-once`` processes against the session's
Prefect server. The steps count their runs in a folder outside the clone (Prefect deletes each
clone after its run); the ledger is pinned outside it, the results and declared outputs are kept
in a shared folder."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from prefect_waymark.flows.deployment import ENTRY_FILE_TEXT
from tests._support.git_repo import git
from tests._support.helpers import run_cli, write_plan
from tests.run.test_waymark_deploy import _deployment, _trigger_and_work

NOWHERE = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # refusals never reach Prefect


def _plan(plan_id: str, effects: Path, ledger: Path | None) -> dict[str, object]:
    """collect -> analyse (reads collect's declared output) -> publish (an action). Each step
    appends ``<step> <its working folder>`` to ``effects/<step>.count``."""

    def count(step: str) -> str:
        return f'echo "{step} $PWD" >> {effects / step}.count'

    doc: dict[str, object] = {
        "plan_id": plan_id,
        "steps": [
            {
                "id": "collect",
                "run": f"{count('collect')}; echo '{{\"rows\": 3}}' > data.json",
                "outputs": ["data.json"],
            },
            {
                "id": "analyse",
                "depends_on": ["collect"],
                "run": f"{count('analyse')}; grep -q rows data.json && cp data.json out.md",
                "outputs": ["out.md"],
            },
            {
                "id": "publish",
                "depends_on": ["analyse"],
                "run": f"{count('publish')}; test -f out.md",
                "action": "publish-report",
            },
        ],
    }
    if ledger is not None:
        doc["ledger"] = {"url": f"sqlite:///{ledger}"}  # ledger is absolute: four slashes
    return doc


def _checkout(tmp_path: Path, plan: dict[str, object], *, init: bool = True) -> Path:
    """A working checkout (branch main) with ``plans/plan.yaml`` and, with ``init``, the
    entrypoint file from ``waymark init``; everything committed."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_plan(repo / "plans", plan)
    if init:
        proc = run_cli("init", str(repo))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the plan")
    return repo


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_each_run_clones_afresh_and_the_plan_advances(prefect_server: str, tmp_path: Path) -> None:
    plan_id = f"src-{uuid.uuid4().hex[:6]}"
    pool = f"pool-{uuid.uuid4().hex[:6]}"
    team, effects = tmp_path / "team", tmp_path / "effects"
    team.mkdir()
    effects.mkdir()
    checkout = _checkout(tmp_path, _plan(plan_id, effects, team / "ledger.db"))
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(checkout, "remote", "add", "origin", str(bare))
    git(checkout, "push", "-q", "origin", "main")
    url = f"file://{bare}"
    plan = checkout / "plans" / "plan.yaml"
    deploy = ["deploy", str(plan), "--pool", pool, "--source", url, "--branch", "main"]
    deploy += ["--max-steps", "1"]

    # Without --results (and with a local edit not committed): deployed, with two warnings.
    original = plan.read_text()
    plan.write_text(original + "# a local note\n")
    first = run_cli(*deploy)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "warning: no --results" in first.stderr and "cannot go on" in first.stderr
    assert "warning: not committed" in first.stderr and "plans/plan.yaml" in first.stderr
    plan.write_text(original)

    results = team / "results"
    proc = run_cli(*deploy, "--results", str(results))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    assert f"each run clones {url} (branch main)" in proc.stdout
    assert "runs plans/plan.yaml from the clone" in proc.stdout

    dep = _deployment(plan_id)
    assert dep.entrypoint == "waymark_flow.py:run_plan"
    assert dep.work_pool_name == pool
    assert dep.parameters == {
        "plan": "plans/plan.yaml",
        "max_steps": 1,
        "result_storage": str(results),
    }
    assert dep.pull_steps == [
        {"prefect.deployments.steps.git_clone": {"repository": url, "branch": "main"}}
    ]
    assert {"waymark", f"plan:{plan_id}"} <= set(dep.tags)
    assert dep.global_concurrency_limit is not None and dep.global_concurrency_limit.limit == 1
    assert dep.concurrency_options is not None
    assert dep.concurrency_options.collision_strategy == "ENQUEUE"

    logs = [tmp_path / f"worker-{i}.log" for i in (1, 2, 3)]
    states = []
    for log in logs:
        run = _trigger_and_work(dep.id, pool, log)
        states.append(run.state.name)
    texts = [log.read_text() for log in logs]
    assert states == ["Stopped", "Stopped", "Completed"], (states, texts[-1][-3000:])

    # Each step ran exactly once overall, each in a different clone that is gone now.
    ran = {s: _lines(effects / f"{s}.count") for s in ("collect", "analyse", "publish")}
    assert [len(v) for v in ran.values()] == [1, 1, 1], ran
    folders = [Path(v[0].split(" ", 1)[1]) for v in ran.values()]
    assert len(set(folders)) == 3, folders
    for folder in folders:
        assert folder.name == "plans" and not folder.exists(), folder
        assert checkout not in folder.parents
    assert not (checkout / "plans" / "data.json").exists()  # nothing ran in the checkout

    # Run 2's clone lacked collect's data.json: restored from the result storage, not a review
    # stop; run 3's clone got analyse's out.md the same way.
    assert "output data.json of step collect restored from the result storage" in texts[1]
    assert "output out.md of step analyse restored from the result storage" in texts[2]
    for text in texts:
        assert "Executing deployment step: git_clone" in text, text[-3000:]


def test_deploy_source_refusals(tmp_path: Path) -> None:
    ledger = ["--ledger", f"sqlite:///{tmp_path / 'ledger.db'}"]
    src = ["--pool", "nowhere", "--source", "file:///nowhere/x.git"]

    # Not in a git checkout.
    loose = write_plan(tmp_path / "loose", _plan("loose", tmp_path, None))
    proc = run_cli("deploy", str(loose), *src, *ledger, env=NOWHERE)
    assert proc.returncode == 2 and "not inside a git checkout" in proc.stderr, proc.stderr

    # In a checkout without waymark_flow.py at its root: the message names `waymark init`.
    repo = _checkout(tmp_path, _plan("bare-repo", tmp_path, None), init=False)
    plan = str(repo / "plans" / "plan.yaml")
    proc = run_cli("deploy", plan, *src, *ledger, env=NOWHERE)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "has no waymark_flow.py" in proc.stderr and f"waymark init {repo}" in proc.stderr

    assert run_cli("init", str(repo)).returncode == 0
    cases = [
        ([], "the ledger must live outside"),  # no pin, no --ledger
        (["--ledger", "sqlite:///ledger.db"], "relative SQLite path"),
        ([*ledger, "--workdir", str(repo)], "--workdir does not go with --source"),
        ([*ledger, "--branch", "-x"], "--branch"),
    ]
    for extra, needle in cases:
        proc = run_cli("deploy", plan, *src, *extra, env=NOWHERE)
        assert proc.returncode == 2 and needle in proc.stderr, (extra, proc.stderr)
        assert "Traceback" not in proc.stderr
    proc = run_cli("deploy", plan, "--pool", "p", "--branch", "main", *ledger, env=NOWHERE)
    assert proc.returncode == 2 and "--branch goes with --source" in proc.stderr
    secret = "https://ann:hunter2@git.example.com/team/plans.git"
    proc = run_cli("deploy", plan, "--pool", "p", "--source", secret, *ledger, env=NOWHERE)
    assert proc.returncode == 2 and "credentials" in proc.stderr
    assert "hunter2" not in proc.stderr


def test_deploy_source_that_cannot_be_cloned_is_one_line(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, _plan("no-clone", tmp_path, tmp_path / "ledger.db"))
    proc = run_cli(
        "deploy",
        str(repo / "plans" / "plan.yaml"),
        "--pool",
        "p",
        "--source",
        f"file://{tmp_path / 'missing.git'}",
        "--results",
        str(tmp_path / "results"),
        env=NOWHERE,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot load waymark_flow.py:run_plan from a clone" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("where", ["argument", "current folder"])
def test_init_writes_the_entrypoint_once(tmp_path: Path, where: str) -> None:
    args, cwd = (["init", str(tmp_path)], None) if where == "argument" else (["init"], tmp_path)
    proc = run_cli(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    target = tmp_path / "waymark_flow.py"
    assert target.read_text() == ENTRY_FILE_TEXT
    assert "from prefect_waymark.flows.run_plan import run_plan" in ENTRY_FILE_TEXT
    before = target.stat().st_mtime_ns
    again = run_cli(*args, cwd=cwd)  # a second init: says so, changes nothing
    assert again.returncode == 0 and "already exists" in again.stdout, again.stdout + again.stderr
    assert target.stat().st_mtime_ns == before and target.read_text() == ENTRY_FILE_TEXT


def test_init_never_overwrites_a_foreign_file(tmp_path: Path) -> None:
    target = tmp_path / "waymark_flow.py"
    target.write_text("print('mine')\n")
    proc = run_cli("init", str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is not waymark's entrypoint file" in proc.stderr and "Traceback" not in proc.stderr
    assert target.read_text() == "print('mine')\n"
    missing = run_cli("init", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_deploy_source_refuses_a_ledger_pin_that_may_fall_back(tmp_path: Path) -> None:
    """`required: false` would let a run without the variable start afresh in its clone."""
    doc = _plan("soft-pin", tmp_path, None)
    doc["ledger"] = {"env": "TEAM_LEDGER_URL", "required": False}
    repo = _checkout(tmp_path, doc, init=True)
    proc = run_cli(
        "deploy",
        str(repo / "plans" / "plan.yaml"),
        "--pool",
        "nowhere",
        "--source",
        "file:///nowhere/x.git",
        env=NOWHERE,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "required: false" in proc.stderr and "required: true" in proc.stderr
