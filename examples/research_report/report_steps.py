"""``call:`` steps of the research-report example: each receives a StepContext."""

from __future__ import annotations

import json
from typing import Any

from prefect_waymark import StepContext


def analyse(ctx: StepContext) -> dict[str, Any]:
    sources = json.loads(ctx.path("data/sources.json").read_text())
    market = json.loads(ctx.path("data/market.json").read_text())
    growth = round(100 * (market[1]["revenue"] / market[0]["revenue"] - 1), 1)
    result = {
        "sources": len(sources),
        "words": sum(s["words"] for s in sources),
        "growth_pct": growth,
    }
    ctx.path("data/analysis.json").write_text(json.dumps(result, indent=2))
    ctx.logger.info("analysis: %s", result)
    return result


def draft(ctx: StepContext) -> str:
    # The upstream value comes from analyse's persisted result, even in a later run.
    analysis = ctx.upstream["analyse"]
    text = (
        f"# Q4 research report\n\n"
        f"Revenue grew {analysis['growth_pct']}% quarter on quarter.\n"
        f"Based on {analysis['sources']} sources ({analysis['words']} words).\n"
    )
    out = ctx.path("report/draft.md")
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    return str(out)
