"""Collect data for the report (stands in for an API or a scraper)."""

import json
import pathlib
import sys

kind = sys.argv[1]
data = {
    "sources": [
        {"title": "Chip supply in Q4", "words": 1200},
        {"title": "Datacenter demand", "words": 900},
        {"title": "Edge devices", "words": 700},
    ],
    "market": [{"quarter": "Q3", "revenue": 118.0}, {"quarter": "Q4", "revenue": 131.5}],
}[kind]
out = pathlib.Path("data") / f"{kind}.json"
out.parent.mkdir(exist_ok=True)
out.write_text(json.dumps(data, indent=2))
print(f"collected {len(data)} {kind} records into {out}")
