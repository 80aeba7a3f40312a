"""One run's execution boundary: taken at run start, watched after each step, computed at run
end (:class:`RunBoundary`). Nothing here fails a run: a problem (git missing, an unreadable file
or folder, a manifest that cannot be written) is logged and recorded in ``errors``, and the
boundary holds what could be taken.

What a run can see: the workdir at its start, after each step of the run ends (names only), and
at its end. A file created and deleted between two of those looks — within one step, or by
another runner between two looks — is not seen at all.
"""

from __future__ import annotations

import posixpath
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..guards.observers import RunObserver
from ..ledger.event_payloads import RunBoundaryData
from ..ledger.events import EventKind
from ..markers.run_markers import VIEW_FILES
from ..models import utcnow
from .compare import changed, covered, narrower, under_any
from .git import GitState, git_state
from .ignore import Ignore, ignore_for
from .manifest import Manifest, list_paths, take_manifest
from .store import read_manifest, write_manifest

if TYPE_CHECKING:
    from ..guards.base import GuardContext
    from ..ledger.base import Ledger
    from ..plan.spec import PlanSpec, StepSpec

__all__ = ["LIST_MAX", "RunBoundary"]

#: Each list of paths in a boundary keeps at most this many (``counts`` has the totals).
LIST_MAX = 1000
#: Looks after steps take at most this share of the run's time so far; a look beyond it is
#: skipped (and counted): a 10,000-file workdir costs ~30 ms a look here.
LOOK_SHARE = 0.1
_KINDS = list(EventKind)


def _outputs(spec: PlanSpec, workdir: Path) -> set[str]:
    """The plan's declared outputs as normalised workdir-relative posix paths (outside ones
    dropped), as the manifest names the files."""
    found: set[str] = set()
    for step in spec.steps:
        for out in step.outputs:
            path = Path(out)
            if path.is_absolute():
                try:
                    path = path.resolve().relative_to(workdir.resolve())
                except ValueError:
                    continue
            rel = posixpath.normpath(path.as_posix())  # sub/../b.txt is b.txt, ./c.txt c.txt
            if rel not in (".", "..") and not rel.startswith(("../", "/")):
                found.add(rel)
    return found


class RunBoundary(RunObserver):
    """Where a run started and ended (ledger range, git) and what it changed in the workdir
    beyond the plan's declared outputs. :meth:`begin` before ``run_started``; an observer of
    the run's steps; :meth:`end` before ``run_finished``."""

    def __init__(self, spec: PlanSpec, workdir: Path, markers_folder: Path, logger: Any) -> None:
        self.spec = spec
        self.workdir = workdir
        self.logger = logger
        self.ignore: Ignore = ignore_for(spec.ignore, workdir, markers_folder, VIEW_FILES)
        self.errors: list[str] = []
        self.seconds = 0.0
        self.looks = 0
        self.looks_skipped = 0
        self._look_seconds = 0.0
        self._began = time.perf_counter()
        self.seq_start: int | None = None
        self.git_before: GitState | None = None
        self.start: Manifest | None = None
        self.between: dict[str, list[str]] | None = None
        self.previous_run: str | None = None
        self.seen: set[str] = set()  # paths seen after a step that the start manifest lacks
        self._data: RunBoundaryData | None = None

    @classmethod
    def begin(
        cls, spec: PlanSpec, ledger: Ledger, workdir: Path, markers_folder: Path, logger: Any
    ) -> RunBoundary:
        """Take the run's start: the plan's last ledger seq, git, the workdir's manifest, and
        what changed since the last run's end."""
        self = cls(spec, workdir, markers_folder, logger)
        began = time.perf_counter()
        try:
            self._begin(ledger)
        except Exception as exc:  # noqa: BLE001 - a boundary problem never fails the run
            self.start = None
            self._problem(f"run start not taken: {type(exc).__name__}: {exc}")
        self.seconds += time.perf_counter() - began
        return self

    def _begin(self, ledger: Ledger) -> None:
        workdir = self.workdir
        self.seq_start = self._last_seq(ledger)
        self.git_before = self._git()
        stored = None
        try:
            stored = read_manifest(workdir, self.spec.plan_id)
        except Exception as exc:  # noqa: BLE001 - a damaged file: no between-runs changes
            self._problem(f"last run's manifest not read: {type(exc).__name__}: {exc}")
        try:
            self.start = take_manifest(workdir, self.ignore, stored.files if stored else None)
            self.errors += self.start.errors
        except Exception as exc:  # noqa: BLE001 - a boundary problem never fails the run
            self._problem(f"start manifest not taken: {type(exc).__name__}: {exc}")
        if stored is not None and self.start is not None:
            both = (self.ignore, stored.ignore)
            self.between = changed(
                stored.files,
                self.start.files,
                cut=narrower(stored.cut, self.start.cut),
                keep=lambda p: not any(i.path(p) for i in both),
            ).as_dict()
            self.previous_run = stored.run_id

    # -- observing the run's steps ------------------------------------------------------------

    def step_completed(self, ctx: GuardContext, step: StepSpec) -> None:
        self._look()

    def step_failed(self, ctx: GuardContext, step: StepSpec, error: str) -> None:
        self._look()

    def _look(self) -> None:
        """Note the files that exist now and did not at the start (names only: no stat)."""
        if self.start is None:
            return
        began = time.perf_counter()
        if self.looks and self._look_seconds > LOOK_SHARE * (began - self._began):
            self.looks_skipped += 1
            return
        try:
            now = list_paths(self.workdir, self.ignore)
            cut = self.start.cut
            self.seen |= {p for p in now.paths - self.start.files.keys() if covered(p, cut)}
            self.looks += 1
        except Exception as exc:  # noqa: BLE001
            self._problem(f"look after a step failed: {type(exc).__name__}: {exc}")
        took = time.perf_counter() - began
        self._look_seconds += took
        self.seconds += took

    # -- the end ------------------------------------------------------------------------------

    def end(self, ledger: Ledger, run_id: str) -> RunBoundaryData:
        """The run's boundary (computed once); stores the end manifest for the next run."""
        if self._data is not None:
            return self._data
        began = time.perf_counter()
        try:
            data = self._end(ledger, run_id)
        except Exception as exc:  # noqa: BLE001 - the run's end is recorded all the same
            self._problem(f"run end not taken: {type(exc).__name__}: {exc}")
            data = {"seq_start": self.seq_start, "errors": self.errors[:50]}
        self.seconds += time.perf_counter() - began
        data["seconds"] = round(self.seconds, 3)
        if self.errors:
            self.logger.warning(
                "execution boundary: %s problem(s), recorded what could be taken: %s",
                len(self.errors),
                "; ".join(self.errors[:5]),
            )
        self._data = data
        return data

    def _end(self, ledger: Ledger, run_id: str) -> RunBoundaryData:
        git_after = self._git()
        seq_end = self._last_seq(ledger)
        end: Manifest | None = None
        lists: dict[str, list[str]] = {"created": [], "modified": [], "deleted": []}
        temporary: list[str] = []
        if self.start is not None:
            try:
                end = take_manifest(self.workdir, self.ignore, self.start.files)
                self.errors += end.errors
            except Exception as exc:  # noqa: BLE001
                self._problem(f"end manifest not taken: {type(exc).__name__}: {exc}")
        if self.start is not None and end is not None:
            outputs = _outputs(self.spec, self.workdir)
            cut = narrower(self.start.cut, end.cut)
            lists = changed(
                self.start.files, end.files, cut=cut, keep=lambda p: not under_any(p, outputs)
            ).as_dict()
            temporary = sorted(
                p
                for p in self.seen - end.files.keys()
                if covered(p, cut) and not under_any(p, outputs)
            )
            try:
                write_manifest(
                    self.workdir,
                    end,
                    plan_id=self.spec.plan_id,
                    run_id=run_id,
                    at=utcnow().isoformat(),
                    ignore=self.ignore,
                )
            except Exception as exc:  # noqa: BLE001
                self._problem(f"end manifest not kept for the next run: {exc}")
        lists["temporary"] = temporary
        return {
            "seq_start": self.seq_start,
            "seq_end": seq_end,
            "git": self._git_dict(git_after),
            "created": lists["created"][:LIST_MAX],
            "modified": lists["modified"][:LIST_MAX],
            "deleted": lists["deleted"][:LIST_MAX],
            "temporary": temporary[:LIST_MAX],
            "between_runs": {k: v[:LIST_MAX] for k, v in self.between.items()}
            if self.between is not None
            else None,
            "previous_run": self.previous_run,
            "counts": {k: len(v) for k, v in lists.items()},
            "manifest_files": len(end.files) if end is not None else 0,
            "truncated": bool(
                (self.start is not None and self.start.truncated)
                or (end is not None and end.truncated)
            ),
            "looks": self.looks,
            "looks_skipped": self.looks_skipped,
            "seconds": 0.0,  # set by end()
            "errors": self.errors[:50],
        }

    # -- helpers ------------------------------------------------------------------------------

    def _problem(self, text: str) -> None:
        self.errors.append(text)

    def _last_seq(self, ledger: Ledger) -> int | None:
        try:
            last = ledger.last_event(self.spec.plan_id, _KINDS)
        except Exception as exc:  # noqa: BLE001
            self._problem(f"ledger seq not read: {type(exc).__name__}: {exc}")
            return None
        return last.seq if last is not None else 0

    def _git(self) -> GitState | None:
        try:
            state, problem = git_state(self.workdir, self.ignore)
        except Exception as exc:  # noqa: BLE001
            state, problem = None, f"{type(exc).__name__}: {exc}"
        if problem:
            self._problem(f"git: {problem}")
        return state

    def _git_dict(self, after: GitState | None) -> dict[str, Any] | None:
        before = self.git_before
        either = after or before
        if either is None:
            return None
        return {
            "root": either.root,
            "before": before.commit if before else None,
            "after": after.commit if after else None,
            "dirty_before": before.dirty if before else None,
            "dirty_after": after.dirty if after else None,
        }
