"""The plan page: one Markdown artifact per plan copy, the page a person opens first.

- :mod:`.render` — the page's Markdown, a pure function of the plan, the step states and a few
  ledger events: the plan in one line, then each section in the order the page shows it.
- :mod:`.graph` — the picture the page opens with: a Mermaid graph of the plan's view.
- :mod:`.publish` — the page in Prefect while a run goes on: one version per run, created as it
  starts, updated in place as steps end and when it pauses for review, and a last time at its end.

Which copy of a plan a page belongs to, its key and its address in the UI are
:mod:`prefect_waymark.markers.plan_copy`'s: every artifact of a run carries them.
"""
