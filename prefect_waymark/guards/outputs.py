"""Outputs people edited after their step completed stop the plan at needs_review: a re-run
would overwrite the edit. Outputs the plan declares in ``mutable_outputs`` may change freely."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OutputRefused
from ._anchor import run_logger
from .base import GuardBase, GuardContext, Verdict
from .output_hashes import ABSENT, hash_output

if TYPE_CHECKING:
    from ..results.outputs import OutputStore

__all__ = ["OutputsGuard"]


class OutputsGuard(GuardBase):
    """Compares each completed step's declared outputs with the hashes recorded at completion.

    With an :class:`~prefect_waymark.results.outputs.OutputStore` (result storage was given),
    an output that is *missing* here, or an *older stored version* of it (the step was made
    again in another folder since), is restored from it first (hash checked): a fresh clone,
    another machine or an outdated copy is not a person's edit."""

    def __init__(self, store: OutputStore | None = None) -> None:
        self.store = store
        #: Paths restored at run start, for the log and the tests.
        self.restored: list[str] = []

    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        verdicts: list[tuple[str, Verdict]] = []
        states = ctx.states
        for step in ctx.plan.steps:
            st = states.get(step.id)
            if st is None or st.status != "completed" or not st.outputs or st.skipped:
                continue
            watched = [p for p in st.outputs if p not in step.mutable_outputs]
            current, refused = self._hashes(ctx, watched)
            changed = {p: h for p, h in current.items() if h != st.outputs[p]}
            if self.store is not None:
                # Missing here, or an older version that was stored too (another folder made the
                # step again since: this copy is outdated, nobody edited it): restored.
                for rel in [p for p, h in changed.items() if h == ABSENT or self.store.holds(h)]:
                    if self.store.restore(ctx.workdir, rel, st.outputs[rel]):
                        del changed[rel]
                        self.restored.append(rel)
                        run_logger().info(
                            "output %s of step %s restored from the result storage (sha256 %s)",
                            rel,
                            step.id,
                            st.outputs[rel][:12],
                        )
            changed.update({p: f"refused: {why}" for p, why in refused.items()})
            if changed:
                names = ", ".join(
                    f"{p} ({refused[p]})" if p in refused else p for p in sorted(changed)
                )
                missing = sorted(p for p, h in changed.items() if h == ABSENT)
                if self.store is not None and missing:
                    why = self.store.unreachable or "not there, or another content"
                    names += f" (missing: {', '.join(missing)}; not restored from the result "
                    names += f"storage: {why})"
                verdicts.append(
                    (
                        step.id,
                        Verdict(
                            "review",
                            f"output changed since the step completed: {names} "
                            "(a re-run would overwrite it; accept the edit or re-run explicitly)",
                            {
                                "recorded_outputs": {p: st.outputs[p] for p in changed},
                                "current_outputs": changed,
                            },
                        ),
                    )
                )
        return verdicts

    @staticmethod
    def _hashes(ctx: GuardContext, paths: list[str]) -> tuple[dict[str, str], dict[str, str]]:
        """The outputs' hashes now, and those refused (path -> why): a link leaving the workdir,
        a FIFO or a folder put where an output was is a change, never read."""
        hashed: dict[str, str] = {}
        refused: dict[str, str] = {}
        for rel in paths:
            try:
                hashed[rel] = hash_output(
                    ctx.workdir, rel, allow_outside=ctx.plan.allow_outside_workdir
                )
            except OutputRefused as exc:
                refused[rel] = str(exc)
        return hashed, refused
