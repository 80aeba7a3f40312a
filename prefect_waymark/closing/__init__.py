"""Skipping a step and closing a plan: ``waymark skip`` and ``waymark close``.

- :mod:`.closed` — whether a plan was closed (its ``plan_closed`` event), and the refusal runs,
  resumes, skips and check-ins give a closed plan;
- :mod:`.skip` — leave a pending, blocked or failed step out on purpose, with a reason;
- :mod:`.checks` — what a plan must have before it closes: every step done or skipped, no open
  review, no action intent without a receipt, evidence for every contract item;
- :mod:`.close` — record ``plan_closed`` (through the ledger's ``close_plan``, which re-checks
  the steps in its transaction and makes the close final: ledger/plan_close.py) and archive the
  active view.

Importing this package is cheap: its modules are imported where they are used.
"""
