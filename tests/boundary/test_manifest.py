"""The boundary's parts without a flow run: manifests (hashing only what changed, the cap),
the ignore rules, comparisons, git's porcelain, and a boundary that never raises."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from prefect_waymark.boundary import RunBoundary
from prefect_waymark.boundary.compare import changed, narrower
from prefect_waymark.boundary.git import _porcelain_paths, git_state
from prefect_waymark.boundary.ignore import Ignore, ignore_for
from prefect_waymark.boundary.manifest import list_paths, take_manifest
from prefect_waymark.plan.loader import validate_plan_data


def _files(root: Path, names: dict[str, str]) -> None:
    for name, text in names.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_only_files_whose_size_or_mtime_changed_are_hashed_again(tmp_path: Path) -> None:
    _files(tmp_path, {"a.txt": "one", "b.txt": "two", "sub/c.txt": "three"})
    first = take_manifest(tmp_path, Ignore())
    assert first.hashed == 3 and sorted(first.files) == ["a.txt", "b.txt", "sub/c.txt"]
    again = take_manifest(tmp_path, Ignore(), first.files)
    assert again.hashed == 0 and again.files == first.files

    st = (tmp_path / "a.txt").stat()
    os.utime(tmp_path / "a.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # touched
    (tmp_path / "b.txt").write_text("TWO")  # same size, new content
    os.utime(tmp_path / "b.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))
    (tmp_path / "sub/c.txt").write_text("three!")  # new size
    later = take_manifest(tmp_path, Ignore(), again.files)
    assert later.hashed == 3
    diff = changed(again.files, later.files)
    assert diff.modified == ["b.txt", "sub/c.txt"]  # a.txt only touched: its content decides
    assert diff.created == [] and diff.deleted == []


def test_the_cap_truncates_and_comparisons_stay_within_what_both_cover(tmp_path: Path) -> None:
    _files(tmp_path, {f"f{i}.txt": str(i) for i in range(6)})
    small = take_manifest(tmp_path, Ignore(), limit=3)
    assert small.truncated and sorted(small.files) == ["f0.txt", "f1.txt", "f2.txt"]
    assert small.cut == ("f2.txt",)
    full = take_manifest(tmp_path, Ignore())
    assert not full.truncated and full.cut is None
    # f3..f5 are beyond the cut: not "created"; f1 deleted within it is seen
    (tmp_path / "f1.txt").unlink()
    after = take_manifest(tmp_path, Ignore(), full.files)
    diff = changed(small.files, after.files, cut=narrower(small.cut, after.cut))
    assert (diff.created, diff.deleted) == ([], ["f1.txt"])
    names = list_paths(tmp_path, Ignore(), limit=2)
    assert names.truncated and names.paths == {"f0.txt", "f2.txt"}


def test_ignore_rules(tmp_path: Path) -> None:
    ign = ignore_for(
        ["build/", "*.log", "node_modules", "docs/tmp*"], tmp_path, tmp_path, ("M.json",)
    )
    assert ign.path(".waymark/ledger.db") and ign.path(".git/HEAD") and ign.path("sub/.git")
    assert ign.path("build/x/y.o") and ign.path("a/b/c.log") and ign.path("web/node_modules/x")
    assert ign.path("docs/tmp1/z") and ign.path("M.json") and ign.path(".M.json.abc.tmp")
    assert not ign.path("docs/keep.md") and not ign.path("sub/M.json") and not ign.path("rebuild")
    # a markers folder below the workdir leaves out its own marker files only
    sub = ignore_for([], tmp_path, tmp_path / "marks", ("M.json",))
    assert sub.path("marks/M.json") and not sub.path("M.json") and not sub.path("marks/other")
    _files(tmp_path, {"build/o.o": "", "keep.txt": "", "x.log": "", "M.json": ""})
    assert sorted(take_manifest(tmp_path, ign).files) == ["keep.txt"]


def test_porcelain_paths_skip_a_renames_source() -> None:
    out = " M a.txt\0R  new.txt\0old.txt\0?? dir/\0"
    assert _porcelain_paths(out) == ["a.txt", "new.txt", "dir/"]


def test_without_git_the_boundary_records_the_problem_and_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = validate_plan_data(
        {"plan_id": "p", "steps": [{"id": "s", "run": "true", "outputs": ["out.txt"]}]},
        source="<test>",
        base_dir=tmp_path,
    )
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert git_state(tmp_path, Ignore()) == (None, "git is not installed (not on PATH)")

    class NoLedger:
        def last_event(self, plan_id: str, kinds: object) -> None:
            raise OSError("ledger gone")

    led = NoLedger()
    b = RunBoundary.begin(spec, led, tmp_path, tmp_path, logging.getLogger("t"))  # type: ignore[arg-type]
    _files(tmp_path, {"made.txt": "m", "out.txt": "declared", "gone.tmp": "t"})
    b.step_completed(None, None)  # type: ignore[arg-type]
    (tmp_path / "gone.tmp").unlink()
    data = b.end(led, "run-1")  # type: ignore[arg-type]
    assert data["git"] is None and data["seq_start"] is None and data["seq_end"] is None
    assert data["created"] == ["made.txt"] and data["temporary"] == ["gone.tmp"]
    assert any("git is not installed" in e for e in data["errors"])
    assert any("ledger gone" in e for e in data["errors"])
    assert (tmp_path / ".waymark" / "manifest-p.json").is_file()
    assert b.end(led, "run-1") is data  # computed once


def test_looks_after_steps_keep_to_their_share_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_waymark.boundary import tracker

    spec = validate_plan_data(
        {"plan_id": "p", "steps": [{"id": "s", "run": "true"}]}, source="<t>", base_dir=tmp_path
    )

    class Ledger:
        def last_event(self, plan_id: str, kinds: object) -> None:
            return None

    monkeypatch.setattr(tracker, "LOOK_SHARE", 0.0)  # any look's cost is over the share
    b = RunBoundary.begin(spec, Ledger(), tmp_path, tmp_path, logging.getLogger("t"))  # type: ignore[arg-type]
    for _ in range(3):
        b.step_completed(None, None)  # type: ignore[arg-type]
    data = b.end(Ledger(), "r")  # type: ignore[arg-type]
    assert (data["looks"], data["looks_skipped"]) == (1, 2)


def test_a_damaged_stored_manifest_or_a_failing_end_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect_waymark.boundary import tracker

    spec = validate_plan_data(
        {"plan_id": "p", "steps": [{"id": "s", "run": "true"}]}, source="<t>", base_dir=tmp_path
    )

    class Ledger:
        def last_event(self, plan_id: str, kinds: object) -> None:
            return None

    (tmp_path / ".waymark").mkdir()
    (tmp_path / ".waymark" / "manifest-p.json").write_text('{"version": 1, "files": [[1]]}')
    (tmp_path / "sub" / ".waymark").mkdir(parents=True)  # another copy's state: left out
    (tmp_path / "sub" / ".waymark" / "ledger.db").write_text("x")
    b = RunBoundary.begin(spec, Ledger(), tmp_path, tmp_path, logging.getLogger("t"))  # type: ignore[arg-type]
    assert b.start is not None and list(b.start.files) == []
    assert b.between is None and any("manifest not read" in e for e in b.errors)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(tracker, "take_manifest", broken)
    data = b.end(Ledger(), "r")  # type: ignore[arg-type]
    assert data["seq_start"] == 0 and data["created"] == []
    assert any("end manifest not taken: RuntimeError: disk on fire" in e for e in data["errors"])


def test_the_run_marker_page_says_what_changed() -> None:
    from prefect_waymark.markers.boundary_section import boundary_section

    assert boundary_section({"boundary": None}) == []
    b = {
        "seq_start": 4,
        "seq_end": 9,
        "git": {"before": "a" * 40, "after": "b" * 40, "dirty_before": False, "dirty_after": True},
        "created": [f"f{i}" for i in range(20)],
        "counts": {"created": 25, "modified": 0, "deleted": 0, "temporary": 1},
        "temporary": ["x.tmp"],
        "between_runs": {"created": [], "modified": ["notes.md"], "deleted": []},
        "manifest_files": 30,
    }
    text = "\n".join(boundary_section({"boundary": b}))
    assert f"`{'a' * 12}` (clean) → `{'b' * 12}` (dirty)" in text
    assert "- created: 25 — `f0`" in text and "`f19` and 5 more" in text
    assert "- temporary: 1 — `x.tmp`" in text and "- deleted: none" in text
    assert "by no run: modified 1 — `notes.md`" in text
