"""Sub-plans: a step ``plan: sub.yaml`` runs another plan file as a Prefect subflow.

The parent keeps its milestones and acceptance; the sub-plan keeps its own steps, ledger scope
(its own plan id, in the parent's ledger), markers and contract, and hands a structured summary
up as the parent step's result. The plan file's ``plan:`` field is checked with the parent by
the plan loader (:mod:`prefect_waymark.plan.subplan_field`). Modules: :mod:`.run_step` (the
step body: the subflow and its outcome), :mod:`.summary` (what the parent sees),
:mod:`.forbidden` (the parent's forbidden actions hold inside), :mod:`.answers` (a review
answered on either plan reaches the other) and :mod:`.status`
(the parent's status row).

Nothing is imported here.
"""
