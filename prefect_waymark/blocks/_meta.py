"""Links shown with the blocks in Prefect's block catalog (one place to change them)."""

from __future__ import annotations

PROJECT_URL = "https://github.com/prefect-waymark/prefect-waymark"
LOGO_URL = f"{PROJECT_URL}/raw/main/prefect_waymark/blocks/waymark-logo.png"
DOCS_URL = f"{PROJECT_URL}#goal-contracts-and-state-refs"
