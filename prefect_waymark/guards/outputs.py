"""Outputs people edited after their step completed stop the plan at needs_review: a re-run
would overwrite the edit. Outputs the plan declares in ``mutable_outputs`` may change freely."""

from __future__ import annotations

from .base import GuardBase, GuardContext, Verdict
from .output_hashes import hash_outputs

__all__ = ["OutputsGuard"]


class OutputsGuard(GuardBase):
    """Compares each completed step's declared outputs with the hashes recorded at completion."""

    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        verdicts: list[tuple[str, Verdict]] = []
        states = ctx.states
        for step in ctx.plan.steps:
            st = states.get(step.id)
            if st is None or st.status != "completed" or not st.outputs:
                continue
            watched = [p for p in st.outputs if p not in step.mutable_outputs]
            current = hash_outputs(ctx.workdir, watched)
            changed = {p: h for p, h in current.items() if h != st.outputs[p]}
            if changed:
                names = ", ".join(sorted(changed))
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
