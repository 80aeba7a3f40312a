"""The plan file's structure: a goal contract, state refs and steps (YAML or JSON)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ..ledger.pin import LedgerPin
from ..models import TITLE, GoalContract, Title
from .results_pin import ResultsPin

__all__ = ["ID_PATTERN", "BlockRef", "PlanSpec", "StateRefSpec", "StepSpec"]

ID_PATTERN = r"^[A-Za-z0-9._-]+$"
ID_MAX = 100
"""The longest id (plan, step, branch, action, state ref): ids become keys and file names."""

# Bounds on a step's numbers: a value past them validated once and then crashed the run.
MAX_RETRIES = 100
MAX_RETRY_DELAY_SECONDS = 86_400.0  # one day
MAX_TIMEOUT_SECONDS = 30 * 86_400.0  # thirty days

#: What each numeric field of a plan file accepts, for error messages (booleans are not numbers).
NUMBER_BOUNDS = {
    "retries": f"an integer from 0 to {MAX_RETRIES}",
    "retry_delay_seconds": f"a number of seconds from 0 to {MAX_RETRY_DELAY_SECONDS:,.0f} (a day)",
    "timeout_seconds": f"a number of seconds above 0, at most {MAX_TIMEOUT_SECONDS:,.0f} (30 days)",
    "version": "an integer from 1 to 1,000,000",
}
CALL_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$"


class BlockRef(BaseModel):
    """Names a saved Prefect block instead of inlining its fields."""

    model_config = ConfigDict(extra="forbid")

    block: str = Field(description="Name of the saved block.")


class StateRefSpec(BaseModel):
    """A reference to authoritative state; kind-specific fields are kept as given."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(
        pattern=ID_PATTERN, max_length=ID_MAX, description="Name steps use in reads/writes."
    )
    kind: str = Field(description="Resolver kind: http, sql, git, file, prefect-variable.")
    on_error: str = Field(default="review", pattern="^(review|fail)$")


#: Who does a step: code Prefect runs (``run`` / ``call``), or an agent or a person who checks
#: in from outside the flow (``waymark next / start / done``) following its ``instructions``.
#: A ``plan:`` step (``kind: plan``, inferred from the field) runs a sub-plan as a Prefect
#: subflow (:mod:`prefect_waymark.subplans`).
StepKind = Literal["code", "agent", "manual", "plan"]


class StepSpec(BaseModel):
    """One step of a plan: code (exactly one of ``run`` or ``call``), or an agent's or a
    person's work (``kind: agent | manual`` with ``instructions``, checked in with the CLI)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        pattern=ID_PATTERN,
        max_length=ID_MAX,
        description="Step id; letters, digits, '.', '_', '-'.",
    )
    title: Title = Field(default="", description=f"Human title (at most {TITLE.chars} characters).")
    owner: str | None = Field(default=None, description="Who owns the step.")
    depends_on: list[str] = Field(default_factory=list, description="Step ids this step needs.")
    branch: str = Field(
        default="main", pattern=ID_PATTERN, max_length=ID_MAX, description="Branch of execution."
    )
    milestone: str | None = Field(default=None, description="Milestone the step belongs to.")
    acceptance: list[str] = Field(default_factory=list, description="Acceptance criteria.")
    serves: list[str] = Field(
        default_factory=list,
        description="Ids of the goal contract's acceptance items (A1, …) or exit conditions "
        "(E1, …) this step serves.",
    )
    verify: bool = Field(
        default=False,
        strict=True,
        description="A verification step: it checks the steps it depends on (in its milestone, "
        "or the whole plan for a step without one).",
    )
    kind: StepKind = Field(
        default="code",
        description="code (run / call), or agent / manual: done outside the flow and checked "
        "in; plan for a step with 'plan' (inferred).",
    )
    instructions: str = Field(
        default="", description="For an agent or manual step: what to do, in words."
    )
    run: str | None = Field(default=None, description="Shell command run in the workdir.")
    call: str | None = Field(
        default=None, pattern=CALL_PATTERN, description="package.module:function to call."
    )
    plan: str | None = Field(
        default=None,
        description="A sub-plan file (relative to this plan file's folder) run as a subflow.",
    )
    outputs: list[str] = Field(default_factory=list, description="Paths the step produces.")
    mutable_outputs: list[str] = Field(
        default_factory=list, description="Outputs people may edit after the step completed."
    )
    reads: list[str] = Field(default_factory=list, description="State refs the step reads.")
    writes: list[str] = Field(default_factory=list, description="State refs the step writes.")
    retries: int = Field(
        default=0, ge=0, le=MAX_RETRIES, strict=True, description="Prefect task retries."
    )
    retry_delay_seconds: float = Field(
        default=0,
        ge=0,
        le=MAX_RETRY_DELAY_SECONDS,
        allow_inf_nan=False,
        strict=True,
        description="Delay between retries, in seconds (at most one day).",
    )
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        allow_inf_nan=False,
        strict=True,
        description="Attempt time limit, in seconds (at most thirty days).",
    )
    action: str | None = Field(
        default=None,
        pattern=ID_PATTERN,
        max_length=ID_MAX,
        description="Names an irreversible action.",
    )
    probe: str | None = Field(
        default=None,
        description="For a run: step with an action: a command that asks the business system "
        "whether $WAYMARK_IDEMPOTENCY_KEY was applied (exit 0 applied, 1 not applied, else "
        "unknown).",
    )

    #: A ``plan:`` step's sub-plan, set by the loader: (resolved path, its plan hash).
    _subplan: tuple[Path, str] | None = PrivateAttr(default=None)
    _subspec: Any = PrivateAttr(default=None)  # the sub-plan's PlanSpec

    @model_validator(mode="after")
    def _plan_kind(self) -> StepSpec:
        if self.plan is not None and self.kind == "code":
            self.kind = "plan"
        return self

    @property
    def checked_in(self) -> bool:
        """Done outside the flow (an agent's or a person's step), checked in with the CLI."""
        return self.kind in ("agent", "manual")

    @property
    def subplan_path(self) -> Path | None:
        """A ``plan:`` step's sub-plan file, resolved by the loader."""
        return self._subplan[0] if self._subplan is not None else None

    @property
    def subplan_spec(self) -> PlanSpec | None:
        """A ``plan:`` step's validated sub-plan (set by the loader)."""
        if self.plan is None:  # most steps: a field read; the private attribute costs ~2 us
            return None
        sub: PlanSpec | None = self._subspec
        return sub

    def definition(self) -> dict[str, Any]:
        """The fields whose change makes a completed step's result stale (a code step's are
        those it always had, so its hash does not change with the fields added since)."""
        body: dict[str, Any] = {
            "run": self.run,
            "call": self.call,
            "depends_on": sorted(self.depends_on),
            "outputs": list(self.outputs),
            "action": self.action,
        }
        if self.checked_in:
            body.update(kind=self.kind, instructions=self.instructions)
        if self.plan is not None:  # a changed sub-plan makes this step's result stale
            body.update(plan=self.plan, plan_hash=self._subplan[1] if self._subplan else None)
        return body

    def definition_hash(self, depends_on: Sequence[str] | None = None) -> str:
        """The digest of :meth:`definition`; with ``depends_on``, of the definition with those
        dependencies instead (what it was before a dependency was renamed or changed)."""
        body = self.definition()
        if depends_on is not None:
            body["depends_on"] = sorted(depends_on)
        raw = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(raw.encode()).hexdigest()


class PlanSpec(BaseModel):
    """A validated plan. Build it with :func:`prefect_waymark.load_plan` or :class:`Plan`."""

    model_config = ConfigDict(extra="forbid")

    plan_id: str = Field(
        pattern=ID_PATTERN, max_length=ID_MAX, description="Plan id; becomes keys and file names."
    )
    title: Title = Field(default="", description=f"Human title (at most {TITLE.chars} characters).")
    contract: GoalContract | BlockRef | None = Field(default=None, description="Goal contract.")
    state_refs: list[StateRefSpec] | BlockRef = Field(
        default_factory=list, description="Authoritative state the plan depends on."
    )
    steps: list[StepSpec] = Field(min_length=1, description="The plan's steps.")
    ledger: LedgerPin | None = Field(
        default=None,
        description="The plan's ledger, pinned: a URL, or where to find it (env, secret).",
    )
    results: ResultsPin | None = Field(
        default=None,
        description="The plan's result storage, pinned beside its ledger: an absolute folder "
        "path or a saved file-system block's slug, or where to find it (env); every command "
        "in every folder uses it (--results overrides).",
    )
    ignore: list[str] = Field(
        default_factory=list,
        description="Workdir paths (globs, relative to the workdir) the run's change manifest "
        "leaves out, beside .waymark/.",
    )
    allow_outside_workdir: bool = Field(
        default=False,
        strict=True,
        description="Allow step outputs outside the workdir (absolute paths, '..', symbolic "
        "links that lead out); refused otherwise. Such an output is hashed where it is, never "
        "copied into the result storage.",
    )

    # Where the plan came from; not part of the file.
    source: str = Field(default="<memory>", exclude=True)
    base_dir: Path | None = Field(default=None, exclude=True)

    def inline_forbidden(self) -> list[str]:
        """The forbidden list of an inline contract (a contract block's is read at run time)."""
        return list(self.contract.forbidden) if isinstance(self.contract, GoalContract) else []

    def step(self, step_id: str) -> StepSpec:
        """The step ``step_id`` (``KeyError`` if the plan has none): by an index of the steps,
        made on first use (a run asks for every step of a 10,000-step plan)."""
        if self._by_id is None:
            self._by_id = {s.id: s for s in self.steps}
        return self._by_id[step_id]

    # Computed once per PlanSpec (a run asks for them in several places); a PlanSpec is not
    # changed after validation.
    _hashes: dict[str, str] | None = PrivateAttr(default=None)
    _by_id: dict[str, StepSpec] | None = PrivateAttr(default=None)
    _order: list[str] | None = PrivateAttr(default=None)
    _plan_hash: str | None = PrivateAttr(default=None)

    def step_hashes(self) -> dict[str, str]:
        """Each step's definition hash, by step id."""
        if self._hashes is None:
            self._hashes = {s.id: s.definition_hash() for s in self.steps}
        return dict(self._hashes)

    def plan_hash(self) -> str:
        """A digest of the plan id and every step's definition hash (computed once)."""
        if self._plan_hash is None:
            body = {"plan_id": self.plan_id, "steps": self.step_hashes()}
            raw = json.dumps(body, sort_keys=True, separators=(",", ":"))
            self._plan_hash = hashlib.sha256(raw.encode()).hexdigest()
        return self._plan_hash

    def topological_order(self) -> list[str]:
        """Step ids in dependency order; ties keep file order."""
        if self._order is None:
            self._order = self._sorted()
        return list(self._order)

    def _sorted(self) -> list[str]:
        from graphlib import TopologicalSorter

        from .ordering import ready_rounds

        position = {s.id: i for i, s in enumerate(self.steps)}
        fast = ready_rounds({s.id: s.depends_on for s in self.steps}, position.__getitem__)
        if fast is not None:
            return fast
        sorter: TopologicalSorter[str] = TopologicalSorter({s.id: s.depends_on for s in self.steps})
        sorter.prepare()
        order: list[str] = []
        while sorter.is_active():
            ready = sorted(sorter.get_ready(), key=position.__getitem__)
            order.extend(ready)
            sorter.done(*ready)
        return order
