"""A completed step whose definition changed, or whose persisted result is gone, stops the plan
at needs_review: running it again or going on without its value would both be a guess."""

from __future__ import annotations

from ..results.storage import ResultAccess
from .base import GuardBase, GuardContext, Verdict

__all__ = ["CompletedStepsGuard"]


class CompletedStepsGuard(GuardBase):
    """Checks at run start each completed step's definition hash and persisted result."""

    def __init__(self, results: ResultAccess) -> None:
        self.results = results

    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        hashes = ctx.plan.step_hashes()
        verdicts: list[tuple[str, Verdict]] = []
        for step in ctx.plan.steps:
            st = ctx.states.get(step.id)
            if st is None or st.status != "completed" or st.skipped is not None:
                continue  # a skipped step has no result and ran no definition
            if st.def_hash and st.def_hash != hashes[step.id]:
                verdict = Verdict(
                    "review",
                    "definition changed since the step completed",
                    {"recorded_hash": st.def_hash, "current_hash": hashes[step.id]},
                )
            elif (
                st.result_key
                and not st.result_lost  # accepted as lost: asked once, the key kept
                and (missing := self.results.known_missing(st.result_key))
            ):
                verdict = Verdict(
                    "review",
                    f"persisted result is missing: {missing}",
                    {"result_key": st.result_key},
                )
            else:
                continue
            verdicts.append((step.id, verdict))
        return verdicts
