"""What a plan accepted, read again: the goal contract and state refs behind re-anchoring.

:class:`Anchor` keeps the versions the plan accepted (folded from ``accepted_versions`` events),
re-reads the contract (inline or its Prefect block) and the refs, compares, and records each
re-anchor as a ``reanchor`` ledger event and each first read or accepted change as an
``accepted_versions`` event. It decides nothing: :class:`~.reanchor.ReanchorGuard` turns its
conflicts into verdicts.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..ledger.event_writers import record_accepted_versions, record_reanchor
from ..models import GoalContract, utcnow
from .conflicts import AcceptedState, Conflict, compare_contract, contract_record, load_accepted

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..ledger.event_payloads import AcceptedVersionsData
    from ..plan.spec import PlanSpec
    from ..resolvers.base import RefConfig

__all__ = ["Anchor", "run_logger"]


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The flow run's logger, or a plain one outside a run (where Prefect is not imported
    for it: check-ins and hooks stay light)."""
    import sys

    if "prefect.context" not in sys.modules:  # no Prefect loaded: certainly not in a run
        return logging.getLogger("prefect_waymark")
    try:
        from prefect.logging import get_run_logger

        return get_run_logger()
    except Exception:  # noqa: BLE001 - outside a run: a plain logger
        return logging.getLogger("prefect_waymark")


class Anchor:
    """The contract and refs a plan depends on, as accepted and as read now."""

    def __init__(self, plan: PlanSpec, ledger: Ledger, workdir: Path, run_id: str) -> None:
        self.plan = plan
        self.ledger = ledger
        self.workdir = workdir
        self.run_id = run_id
        self.contract: GoalContract | None = None
        self.contract_rec: dict[str, Any] | None = None
        self.configs: dict[str, RefConfig] = {}
        self.refs_error: str | None = None
        self.accepted = AcceptedState()
        self.lock = threading.RLock()

    @property
    def forbidden(self) -> list[str]:
        """The forbidden list of the contract as last read (the plan's own before the first)."""
        if self.contract is not None:
            return list(self.contract.forbidden)
        return self.plan.inline_forbidden()

    def reload_accepted(self) -> None:
        """Fold the accepted versions again (after a person's answer recorded new ones)."""
        with self.lock:
            self.accepted = load_accepted(self.ledger, self.plan.plan_id)

    def load_refs(self) -> None:
        from .sources import load_ref_configs

        try:
            configs = load_ref_configs(self.plan)
        except Exception as exc:  # noqa: BLE001 - an unreadable refs block is a conflict
            self.refs_error = f"{type(exc).__name__}: {exc}"
            return
        self.refs_error = None
        self.configs = {c.name: c for c in configs}

    def _read_contract(self, at: str) -> tuple[list[Conflict], dict[str, Any] | None]:
        from .sources import load_contract

        try:
            loaded = load_contract(self.plan)
        except Exception as exc:  # noqa: BLE001 - an unreadable contract is a conflict
            msg = f"cannot re-read the goal contract: {type(exc).__name__}: {exc}"
            return [Conflict("contract", "contract", "unreadable", msg, at, error=msg)], None
        if loaded is None:
            return [], None
        contract, source = loaded
        self.contract = contract
        rec = contract_record(contract, source)
        self.contract_rec = rec
        found, accept = compare_contract(rec, self.accepted.contract, at)
        if accept and self.accepted.contract is not None:
            run_logger().warning(
                "goal contract %r moved from v%s to v%s (status accepted): the plan follows it",
                rec["goal_id"],
                self.accepted.contract["version"],
                rec["version"],
            )
        return found, (rec if accept else None)

    def reanchor(
        self, point: str, names: list[str], check_contract: bool, step_id: str | None
    ) -> list[Conflict]:
        from ..resolvers.resolve import resolve_refs

        at = utcnow().isoformat()
        conflicts: list[Conflict] = []
        accept_contract: dict[str, Any] | None = None
        contract_entry: dict[str, Any] | None = None
        if check_contract and self.plan.contract is not None:
            accepted_before = self.accepted.contract
            found, accept_contract = self._read_contract(at)
            conflicts += found
            contract_entry = {
                "current": self.contract_rec
                if not found or found[0].problem != "unreadable"
                else None,
                "accepted": accepted_before,
                "result": "conflict" if found else ("accepted" if accept_contract else "same"),
            }
        if self.refs_error is not None:
            conflicts.append(
                Conflict(
                    "state_refs",
                    "refs",
                    "unreadable",
                    f"cannot load the state refs: {self.refs_error}",
                    at,
                    error=self.refs_error,
                )
            )
        configs = [self.configs[n] for n in names if n in self.configs]
        if self.refs_error is None:
            for n in names:
                if n not in self.configs:
                    conflicts.append(
                        Conflict(
                            n,
                            "unknown",
                            "unknown_ref",
                            f"state ref {n!r} is not declared (declared: "
                            f"{', '.join(self.configs) or 'none'})",
                            at,
                        )
                    )
        readings = resolve_refs(configs, self.workdir) if configs else {}
        new: dict[str, str] = {}
        entries: list[dict[str, Any]] = []
        for cfg in configs:
            r = readings[cfg.name]
            accepted = self.accepted.refs.get(cfg.name)
            result = "same"
            if r.error is not None:
                result = "unreadable"
                conflicts.append(
                    Conflict(
                        cfg.name,
                        cfg.kind,
                        "unreadable",
                        f"state ref {cfg.name!r} ({cfg.describe()}) cannot be read: {r.error}",
                        r.at,
                        accepted,
                        None,
                        r.error,
                        cfg.on_error,
                    )
                )
            elif accepted is None:
                result = "accepted"
                assert r.version is not None
                new[cfg.name] = r.version
            elif accepted != r.version:
                result = "changed"
                conflicts.append(
                    Conflict(
                        cfg.name,
                        cfg.kind,
                        "changed",
                        f"state ref {cfg.name!r} ({cfg.describe()}) changed: accepted "
                        f"{accepted!r}, current {r.version!r} (read {r.at})",
                        r.at,
                        accepted,
                        r.version,
                    )
                )
            entries.append(
                {
                    "name": cfg.name,
                    "kind": cfg.kind,
                    "where": cfg.describe(),
                    "accepted": accepted,
                    "current": r.version,
                    "error": r.error,
                    "result": result,
                    "seconds": round(r.seconds, 4),
                }
            )
        free_text = [
            f
            for f in (self.contract.forbidden if self.contract else [])
            if not f.startswith("action:")
        ]
        record_reanchor(
            self.ledger,
            self.plan.plan_id,
            step_id=step_id,
            run_id=self.run_id,
            point=point,
            contract=contract_entry,
            refs=entries,
            conflicts=[c.as_dict() for c in conflicts],
            forbidden=free_text,
        )
        if new or accept_contract:
            self.accept(new, accept_contract, "first read" if new else "contract version", step_id)
        log = run_logger()  # the contract itself is logged by the guard, once per version
        log.info(
            "re-anchor (%s%s): %d ref(s) read, %d conflict(s)",
            point,
            f", step {step_id}" if step_id else "",
            len(configs),
            len(conflicts),
        )
        return conflicts

    def accept(
        self,
        refs: dict[str, str],
        contract: dict[str, Any] | None,
        reason: str,
        step_id: str | None,
    ) -> None:
        data: AcceptedVersionsData = {"refs": refs, "reason": reason}
        if contract is not None:
            data["contract"] = contract
        record_accepted_versions(
            self.ledger,
            self.plan.plan_id,
            step_id=step_id,
            run_id=self.run_id,
            **data,
        )
        self.accepted.refs.update(refs)
        if contract is not None:
            self.accepted.contract = contract

    def accept_written(self, step_id: str, names: list[str]) -> list[tuple[str, str]]:
        """After ``step_id`` completed: read the refs it writes and accept their new versions
        (the plan's own change is no conflict). Returns the refs that cannot be read back, with
        the error."""
        from ..resolvers.resolve import resolve_refs

        with self.lock:
            configs = [self.configs[n] for n in names if n in self.configs]
            readings = resolve_refs(configs, self.workdir)
            new: dict[str, str] = {}
            entries = []
            for cfg in configs:
                r = readings[cfg.name]
                entries.append(
                    {
                        "name": cfg.name,
                        "kind": cfg.kind,
                        "accepted": self.accepted.refs.get(cfg.name),
                        "current": r.version,
                        "error": r.error,
                        "result": "accepted" if r.ok else "unreadable",
                    }
                )
                if r.version is not None:
                    new[cfg.name] = r.version
            record_reanchor(
                self.ledger,
                self.plan.plan_id,
                step_id=step_id,
                run_id=self.run_id,
                point="after_step",
                refs=entries,
                conflicts=[],
            )
            if new:
                self.accept(new, None, f"written by step {step_id}", step_id)
        return [(str(e["name"]), str(e["error"])) for e in entries if e["error"]]
