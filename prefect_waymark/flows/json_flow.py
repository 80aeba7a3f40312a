"""A :class:`prefect.Flow` that sends its JSON parameters as they are.

Prefect sends a flow run's parameters through :meth:`~prefect.Flow.serialize_parameters`, whose
``jsonable_encoder`` returns a path, a number or a flag unchanged but imports FastAPI on its first
call (~0.08 s of every ``waymark run`` here). :class:`JsonFlow` overrides that one public method:
values made of JSON's own types go as they are, a run's checked options as their record
(:meth:`~prefect_waymark.run.options.RunOptions.record`: never the plan again, never the
ledger URL), anything else through Prefect's; then secrets masked (``_masking``): Prefect keeps a
flow run's parameters and its API and UI show them, so a ``ledger_url`` with a password goes as
``scheme://user:***@host/db`` (the run itself uses the URL its checked options hold). It is
created, named, tagged and run as any ``@flow``; :func:`waymark_flow` names and tags
``run_plan``'s runs and makes it a :class:`PlanFlow`, whose call returns a stopped run's summary
(its state is Cancelled or Failed, which Prefect's call would raise: run/prefect_ui.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from prefect import Flow
from prefect.utilities.annotations import quote

from .._masking import mask_data
from ..run.options import RunOptions

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State
    from prefect.futures import PrefectFuture

__all__ = ["JsonFlow", "PlanFlow", "json_flow", "waymark_flow"]

_SCALARS = (str, int, float, bool, type(None))
_NOT_JSON = object()


def _json_copy(value: Any) -> Any:
    """A copy of ``value`` if it is made of JSON's own types only (exact types: an enum or
    another subclass of ``str`` is Prefect's to encode) with string keys, none starting with
    ``_sa`` (which Prefect's encoder drops); else ``_NOT_JSON``. What ``jsonable_encoder``
    returns for such a value."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list:
        items = [_json_copy(v) for v in value]
        return _NOT_JSON if any(v is _NOT_JSON for v in items) else items
    if kind is dict:
        if not all(type(k) is str and not k.startswith("_sa") for k in value):
            return _NOT_JSON
        done = {k: _json_copy(v) for k, v in value.items()}
        return _NOT_JSON if any(v is _NOT_JSON for v in done.values()) else done
    return _NOT_JSON


def _plain(value: Any) -> Any:
    inner = value.unwrap() if isinstance(value, quote) else value  # RunOptions.as_parameter
    if isinstance(inner, RunOptions):
        return inner.record()
    try:
        return _json_copy(value)
    except RecursionError:  # a list that holds itself, or nested deeper than Python goes
        return _NOT_JSON


P = ParamSpec("P")
R = TypeVar("R")


class JsonFlow(Flow[P, R]):
    """A flow whose JSON parameters are sent without Prefect's encoder (same result)."""

    def serialize_parameters(
        self, parameters: dict[str, Any | PrefectFuture[Any] | State]
    ) -> dict[str, Any]:
        """Prefect's :meth:`~prefect.Flow.serialize_parameters`, with the values made of
        JSON's own types passed as they are (copies); anything else goes through Prefect's.
        Secrets in either are masked."""
        copies = {k: _plain(v) for k, v in parameters.items()}
        plain = {k: v for k, v in copies.items() if v is not _NOT_JSON}
        if len(plain) == len(parameters):
            return dict(mask_data(plain))
        rest = super().serialize_parameters({k: parameters[k] for k in parameters.keys() - plain})
        # In the parameters' order; a key Prefect leaves out (a method's ``self``) stays out.
        both = {
            k: plain[k] if k in plain else rest[k] for k in parameters if k in plain or k in rest
        }
        return dict(mask_data(both))

    def with_options(self, *args: Any, **kwargs: Any) -> Any:
        """Prefect's :meth:`~prefect.Flow.with_options` (``run_plan.with_options(task_runner=
        ...)``), whose copy is built as a plain ``Flow``: made this flow's class again, so the
        copy keeps the masked parameters and :class:`PlanFlow`'s call (neither class holds
        state of its own)."""
        copy = super().with_options(*args, **kwargs)
        copy.__class__ = type(self)
        return copy


class PlanFlow(JsonFlow[P, R]):
    """``run_plan``'s flow: called as a function (no ``return_state``), a run that stopped
    before the plan was done returns its summary dict, as a completed one does. Its flow run
    still ends Cancelled (``Stopped``, ``Aborted``) or Failed (``NeedsReview``), whose data —
    a :class:`~prefect_waymark.errors.PlanRunStopped` — Prefect's own call would raise; a failed
    step still raises :class:`~prefect_waymark.errors.PlanRunFailed`. With
    ``return_state=True`` the state is returned as Prefect returns it. A deployment's run is
    started by Prefect's engine, not by this call: nothing changes there."""

    # One signature for Prefect's overloads (the result, or the state with return_state=True).
    def __call__(self, *args: Any, return_state: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        from prefect.client.schemas.objects import State

        from ..errors import PlanRunStopped
        from ..run.summary import RunSummary

        state = super().__call__(*args, return_state=True, **kwargs)
        if return_state or not isinstance(state, State):  # a visualisation's placeholder
            return state
        stopped = None if state.is_completed() else state.result(raise_on_failure=False)
        if isinstance(stopped, PlanRunStopped) and isinstance(stopped.summary, RunSummary):
            return stopped.summary.model_dump()
        return state.result()


def json_flow(**options: Any) -> Callable[[Callable[P, R]], JsonFlow[P, R]]:
    """``@flow(**options)``, made a :class:`JsonFlow`."""

    def wrap(fn: Callable[P, R]) -> JsonFlow[P, R]:
        return JsonFlow(fn=fn, **options)

    return wrap


def waymark_flow(**options: Any) -> Callable[[Callable[P, R]], PlanFlow[P, R]]:
    """``@flow(**options)`` as a :class:`PlanFlow` whose runs Prefect names and tags as they
    start (``flow_run_name``: :func:`~prefect_waymark.run.prefect_ui.run_name`)."""
    from ..run.prefect_ui import run_name

    def wrap(fn: Callable[P, R]) -> PlanFlow[P, R]:
        return PlanFlow(fn=fn, flow_run_name=run_name, **options)

    return wrap
