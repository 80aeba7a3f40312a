"""Recompute the report's figures. Fails once on purpose, to show that a later run resumes here."""

import json
import pathlib
import sys

analysis = json.loads(pathlib.Path("data/analysis.json").read_text())
flag = pathlib.Path(".demo-failed-once")
if not flag.exists():
    flag.write_text("the first check fails on purpose\n")
    print("figure check failed: Q4 growth is stale (demo: this fails once on purpose)")
    sys.exit(1)
market = json.loads(pathlib.Path("data/market.json").read_text())
growth = round(100 * (market[1]["revenue"] / market[0]["revenue"] - 1), 1)
assert growth == analysis["growth_pct"], (growth, analysis["growth_pct"])
print(f"figures check out: growth {growth}%")
