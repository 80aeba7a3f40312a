"""Resolver registry: the entry-point group loads users' kinds; plan files validate their fields."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan

PLUGIN = """
from pydantic import Field
from typing import ClassVar, Literal
from prefect_waymark.resolvers import RefConfig


class TicketConfig(RefConfig):
    locator_field: ClassVar[str] = "ticket"
    kind: Literal["ticket"] = "ticket"
    ticket: str = Field(pattern=r"^T-[0-9]+$", description="Ticket id.")


class TicketResolver:
    kind = "ticket"
    config_model = TicketConfig

    async def read_version(self, config, ctx):
        return (ctx.workdir / (config.ticket + ".state")).read_text().strip()
"""


def _install_plugin(site: Path) -> None:
    """A real installed distribution (dist-info with entry_points.txt) on sys.path."""
    (site / "waymark_ticket_plugin.py").write_text(PLUGIN)
    info = site / "waymark_ticket_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: waymark-ticket-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[prefect_waymark.resolvers]\nticket = waymark_ticket_plugin:TicketResolver\n"
    )


def test_entry_point_group_adds_a_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect_waymark.resolvers import parse_ref_config, registry, resolve_refs

    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_entry_points", None)
    monkeypatch.setattr(registry, "_resolvers", {})
    assert "ticket" in registry.known_kinds()
    cfg = parse_ref_config({"name": "t", "kind": "ticket", "ticket": "T-12"})
    (tmp_path / "T-12.state").write_text("approved\n")
    assert resolve_refs([cfg], tmp_path)["t"].version == "approved"
    with pytest.raises(ValueError, match="ticket"):
        parse_ref_config({"name": "t", "kind": "ticket", "ticket": "12"})


def test_plugin_kind_is_validated_by_waymark_validate(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    plan = write_plan(
        tmp_path / "p",
        {
            "plan_id": "plug",
            "state_refs": [{"name": "t", "kind": "ticket", "ticket": "bad"}],
            "steps": [{"id": "a", "run": "true", "reads": ["t"]}],
        },
    )
    proc = run_cli("validate", str(plan), env={"PYTHONPATH": str(site)})
    assert proc.returncode == 2
    assert "state_refs[0].ticket" in proc.stderr and "T-[0-9]+" in proc.stderr


def test_bad_ref_fields_exit_2_naming_file_line_and_field(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        textwrap.dedent(
            """\
            plan_id: bad-refs
            state_refs:
              - {name: api, kind: http, url: "ftp://x", version_from: etag}
              - {name: db, kind: sql, url: "sqlite:///x.db", table: t}
              - {name: repo, kind: gti, repo: .}
              - {name: cfg, kind: file, path: a.txt, secret: hunter2}
            steps:
              - {id: a, run: "true", reads: [api]}
            """
        )
    )
    proc = run_cli("validate", str(plan))
    assert proc.returncode == 2, proc.stdout
    err = proc.stderr
    assert f"{plan}:3: state_refs[0].url: expected an http:// or https:// URL" in err
    assert f"{plan}:4: state_refs[1]: expected query, or all of table" in err
    assert "state_refs[2].kind: unknown kind 'gti'; did you mean 'git'?" in err
    assert "state_refs[3].secret: a plan file must not hold a secret" in err
    assert "hunter2" not in err
    assert not (tmp_path / ".waymark").exists()


def test_importing_the_package_does_not_load_prefect_or_httpx() -> None:
    import subprocess

    code = (
        "import sys, prefect_waymark, prefect_waymark.resolvers;"
        "print(sorted(m for m in ('prefect', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
