"""The plan a hook answers for, and its ledger, opened without Prefect.

The plan file is read on every call (it is small, and the contract may have been edited), but
it is parsed and validated only when its content changed: what an allowed tool call needs of
it — the plan id, the contract's forbidden list, hash and label, the objective, the ledger's URL
as resolved — is kept as :class:`PlanFacts` in ``<workdir>/.waymark/hooks/plans/``, written
from :func:`~prefect_waymark.plan.loader.load_plan`'s result the first time and reused while
the file's bytes (sha256), ``--ledger``, ``--workdir``, the package version and every
environment variable the ledger's URL was read from are the same. It is a cache of the one
loader's result, not a second reader of plan files: a miss (or a plan with sub-plan steps,
whose files may change under the same text) loads the plan as every command does, and the whole
:class:`~prefect_waymark.plan.spec.PlanSpec` is loaded on first use (a deny's hint, a reminder,
``SessionStart``, ``Stop``). So an allowed ``PreToolUse`` imports neither pydantic nor
SQLAlchemy (``tests/hooks/test_hook_imports.py``).

The ledger is opened read-only (:func:`~prefect_waymark.ledger.open_reader`) only when a
decision needs it. What cannot be had — no plan configured, a plan file with problems
(:class:`InvalidPlan`), a ledger pinned in a Prefect Secret block (hooks read no Prefect), no
ledger yet — raises :class:`~prefect_waymark.errors.WaymarkError` with the one line the hook
writes on stderr.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..agents.identity import agent_run_id, item_ids
from ..errors import HookPlanInvalid, LedgerError, LedgerNotFound, PlanError, WaymarkError
from ..ledger import LEDGER_ENV, open_reader, resolve_ledger_url
from ..ledger.urls import shown_url
from .payload import HookInput
from .settings import HookSettings

if TYPE_CHECKING:
    from ..ledger import LedgerReader
    from ..models import GoalContract
    from ..plan.spec import PlanSpec

__all__ = ["InvalidPlan", "LoadedPlan", "PlanFacts", "agent_run_id", "item_ids", "load"]


#: The plan file has problems (one line, with the first problem).
InvalidPlan = HookPlanInvalid
#: The cache's layout; a file of another is a miss.
_FACTS_SCHEMA = 1


@dataclass(frozen=True)
class PlanFacts:
    """What an allowed tool call needs of a valid plan file (and of its ledger's URL)."""

    plan_id: str
    #: The plan file's contract: inline (``goal``), in a Prefect block (``block``), or none.
    contract: Literal["goal", "block"] | None
    #: ``goal_id vN``, ``block NAME`` or ``none`` (a deny's reason names it).
    label: str
    #: The inline contract's forbidden list, objective and hash (:func:`.contract_hash`).
    forbidden: list[str] = field(default_factory=list)
    objective: str | None = None
    contract_hash: str | None = None
    #: The contract block's name.
    block: str | None = None
    #: The ledger's URL as resolved, else why there is none.
    ledger_url: str | None = None
    ledger_error: str | None = None


def _facts(spec: PlanSpec, settings: HookSettings, workdir: Path) -> PlanFacts:
    """The facts of a loaded plan (the one loader's result), its ledger's URL resolved."""
    from ..models import GoalContract, contract_hash
    from ..plan.spec import BlockRef

    url: str | None = None
    error: str | None = None
    pin = spec.ledger
    if pin is not None and pin.secret is not None:
        error = (
            f"{spec.source}: the ledger is pinned in the Prefect Secret block "
            f"{pin.secret!r}, and hooks read no Prefect; the hook reads no ledger"
        )
    else:
        try:
            url = resolve_ledger_url(
                settings.ledger, workdir, source="--ledger", pin=pin, pin_source=spec.source
            )
        except (LedgerError, WaymarkError) as exc:
            error = str(exc)
    c = spec.contract
    if isinstance(c, GoalContract):
        return PlanFacts(
            spec.plan_id, "goal", f"{c.goal_id} v{c.version}", list(c.forbidden), c.objective,
            contract_hash(c), ledger_url=url, ledger_error=error,
        )  # fmt: skip
    if isinstance(c, BlockRef):
        return PlanFacts(
            spec.plan_id, "block", f"block {c.block}", block=c.block, ledger_url=url,
            ledger_error=error,
        )  # fmt: skip
    return PlanFacts(spec.plan_id, None, "none", ledger_url=url, ledger_error=error)


def _depends_on(spec: PlanSpec) -> list[str]:
    """The environment variables the ledger's URL was read from."""
    pin = spec.ledger
    return [LEDGER_ENV, *([pin.env] if pin is not None and pin.env else [])]


class LoadedPlan:
    """A plan file, its workdir, its :class:`PlanFacts` and, on first use, its spec."""

    def __init__(
        self,
        path: Path,
        workdir: Path,
        settings: HookSettings,
        facts: PlanFacts,
        spec: PlanSpec | None = None,
    ):
        self.path = path
        self.workdir = workdir
        self.settings = settings
        self.facts = facts
        self._spec = spec

    @property
    def plan_id(self) -> str:
        return self.facts.plan_id

    @property
    def spec(self) -> PlanSpec:
        """The validated plan (loaded on first use when the facts came from the cache)."""
        if self._spec is None:
            self._spec = _load_spec(self.path)
        return self._spec

    def contract(self) -> GoalContract:
        """The plan file's inline contract (only for a plan whose facts say ``goal``)."""
        from ..models import GoalContract

        c = self.spec.contract
        if not isinstance(c, GoalContract):  # the file changed since its facts were read
            raise WaymarkError(f"{self.path}: the plan file changed while the hook read it")
        return c

    @property
    def ledger_url(self) -> str:
        if self.facts.ledger_url is None:
            raise WaymarkError(self.facts.ledger_error or "no ledger URL")
        return self.facts.ledger_url

    def where(self) -> str:
        url = self.facts.ledger_url
        return shown_url(url) if url else "(none)"

    def reader(self) -> LedgerReader:
        """The ledger, read-only. Raises :class:`WaymarkError` (no ledger yet, or unreadable)."""
        try:
            return open_reader(self.ledger_url)
        except LedgerNotFound:
            raise WaymarkError(
                f"plan {self.plan_id!r}: no ledger yet at {self.where()} (nothing "
                f"recorded; `waymark next {self.path}` starts one)"
            ) from None
        except (LedgerError, WaymarkError) as exc:
            raise WaymarkError(f"plan {self.plan_id!r}: {exc}") from None

    def contract_label(self) -> str:
        return self.facts.label


def _load_spec(path: Path) -> PlanSpec:
    from ..plan.loader import load_plan

    try:
        return load_plan(path)
    except PlanError as exc:
        raise InvalidPlan(path, exc) from None


def facts_file(workdir: Path, path: Path) -> Path:
    """Where the facts of the plan file at ``path`` are kept."""
    name = hashlib.sha256(str(path).encode()).hexdigest()[:24]
    return workdir / ".waymark" / "hooks" / "plans" / f"{name}.json"


def _key(path: Path, content: bytes, settings: HookSettings) -> dict[str, Any]:
    from .. import __version__

    return {
        "schema": _FACTS_SCHEMA,
        "version": __version__,
        "path": str(path),
        "sha256": hashlib.sha256(content).hexdigest(),
        "ledger": settings.ledger,
        "workdir": str(settings.workdir) if settings.workdir is not None else None,
    }


def _cached(file: Path, key: dict[str, Any]) -> PlanFacts | None:
    """The kept facts for ``key``, if the environment they were read with is unchanged."""
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
        if doc["key"] != key:
            return None
        if any(os.environ.get(name) != value for name, value in doc["env"].items()):
            return None
        return PlanFacts(**doc["facts"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # none kept, or torn: the plan is loaded


def _store(file: Path, key: dict[str, Any], env: list[str], facts: PlanFacts) -> None:
    """Keep ``facts`` (written whole, then renamed: a reader never sees half of it). A folder
    that cannot be written keeps nothing: the next call loads the plan again."""
    doc = {"key": key, "env": {n: os.environ.get(n) for n in env}, "facts": asdict(facts)}
    tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, file)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def _content(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def load(settings: HookSettings, payload: HookInput) -> LoadedPlan:
    """The configured plan. Raises :class:`WaymarkError` (:class:`InvalidPlan` for a plan file
    with problems)."""
    path = settings.plan_path(payload.cwd)
    if path is None:
        raise WaymarkError("no plan configured: set $WAYMARK_PLAN (or --plan) to the plan file")
    workdir = settings.workdir or path.parent
    content = _content(path)  # None: the loader says why, in its words
    file = facts_file(workdir, path)
    key = _key(path, content, settings) if content is not None else None
    facts = _cached(file, key) if key is not None else None
    if facts is not None:
        return LoadedPlan(path, workdir, settings, facts)
    spec = _load_spec(path)
    workdir = settings.workdir or spec.base_dir or path.parent
    facts = _facts(spec, settings, workdir)
    if key is not None and content == _content(path) and all(s.plan is None for s in spec.steps):
        _store(file, key, _depends_on(spec), facts)  # sub-plan files may change: not kept
    return LoadedPlan(path, workdir, settings, facts, spec)
