"""Publish the draft (stands in for an irreversible call to a publishing system)."""

import os
import pathlib
import shutil

target = pathlib.Path("published/report.md")
target.parent.mkdir(exist_ok=True)
shutil.copy("report/draft.md", target)
key = os.environ.get("WAYMARK_IDEMPOTENCY_KEY", "-")
with open("published/publish-log.txt", "a") as log:
    log.write(f"published run={os.environ['WAYMARK_RUN_ID']} key={key}\n")
print(f"published {target} (idempotency key {key})")
