"""A flow whose top-level calls create their flow run already named and tagged.

Prefect names a flow run with a ``flow_run_name`` only after creating it: a PATCH of the name,
and before it a lookup of the server's default result storage (``GET /admin/storage``) for the
naming context; the plan's tags cost one more PATCH. A ``prefect.tags(...)`` context around the
call would tag every step's task run too, and Prefect spends a concurrency call per tagged task.

So a top-level call of a :class:`NamedFlow` (``waymark run``, ``run_plan(...)`` from Python)
creates the flow run itself with its name and tags in the one ``POST /flow_runs/`` and hands it
to Prefect's engine, which runs a copy of the flow without ``flow_run_name`` (the engine's own
calls otherwise: the flow, the run, its states). A run that exists already (a deployment's, a
sub-plan's subflow inside a step's task run) still names and tags itself through
``flow_run_name`` (:func:`~.prefect_ui.run_name`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from prefect import Flow

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State
    from prefect.futures import PrefectFuture

__all__ = ["NamedFlow", "named_flow", "waymark_flow"]

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
    try:
        return _json_copy(value)
    except RecursionError:  # a list that holds itself, or nested deeper than Python goes
        return _NOT_JSON


P = ParamSpec("P")
R = TypeVar("R")


class NamedFlow(Flow[P, R], Generic[P, R]):
    """A :class:`prefect.Flow` whose top-level calls create their flow run with the name and
    tags ``names(parameters)`` returns."""

    names: Callable[[Mapping[str, Any]], tuple[str, list[str]]] | None = None

    def __call__(  # type: ignore[override]  # Flow's overloads: same arguments, any result
        self,
        *args: Any,
        return_state: bool = False,
        wait_for: Iterable[Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        from prefect.context import FlowRunContext, TaskRunContext
        from prefect.utilities.visualization import get_task_viz_tracker

        nested = FlowRunContext.get() is not None or TaskRunContext.get() is not None
        if nested or self.names is None or get_task_viz_tracker() or self.isasync:
            call: Callable[..., Any] = super().__call__  # Prefect's own naming
            return call(*args, return_state=return_state, wait_for=wait_for, **kwargs)
        return self._run_named(args, kwargs, return_state, wait_for)

    def _run_named(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        return_state: bool,
        wait_for: Iterable[Any] | None,
    ) -> Any:
        from prefect.context import SyncClientContext, TagsContext
        from prefect.flow_engine import run_flow
        from prefect.states import Pending
        from prefect.utilities.callables import get_call_parameters

        assert self.names is not None
        parameters = get_call_parameters(self.fn, args, kwargs)
        name, own_tags = self.names(parameters)
        tags = sorted(TagsContext.get().current_tags or ())  # a `prefect.tags(...)` around it
        tags += [t for t in own_tags if t not in tags]
        # One client for the creation and the run: the engine takes this context's client.
        with SyncClientContext.get_or_create() as ctx:
            flow_run = ctx.client.create_flow_run(
                flow=self,
                name=name,
                parameters=self.serialize_parameters(parameters),
                tags=tags,
                state=Pending(),
            )
            return run_flow(
                flow=self._unnamed(),
                flow_run=flow_run,
                parameters=parameters,
                wait_for=wait_for,
                return_type="state" if return_state else "result",
            )

    def serialize_parameters(
        self, parameters: dict[str, Any | PrefectFuture[Any] | State]
    ) -> dict[str, Any]:
        """Prefect's :meth:`~prefect.Flow.serialize_parameters`, with the JSON values a run of
        a plan is called with (a path, numbers, flags) passed as they are: Prefect's
        ``jsonable_encoder`` would return them unchanged, but its first call imports FastAPI
        (~0.08 s of every ``waymark run`` here). Anything else goes through Prefect's."""
        copies = {k: _plain(v) for k, v in parameters.items()}
        plain = {k: v for k, v in copies.items() if v is not _NOT_JSON}
        if len(plain) == len(parameters):
            return plain
        rest = super().serialize_parameters({k: parameters[k] for k in parameters.keys() - plain})
        # In the parameters' order; a key Prefect leaves out (a method's ``self``) stays out.
        return {
            k: plain[k] if k in plain else rest[k] for k in parameters if k in plain or k in rest
        }

    def _unnamed(self) -> Flow[P, R]:
        """This flow without ``flow_run_name`` (its run is named already) and, unless it says,
        without persisting its return value: Prefect's default asks the server whether it has
        a default result storage (one more ``GET /admin/storage`` per run; the answer is no
        unless one was set). A waymark run's return value is its summary, recorded in the
        ledger (``run_finished``) and handed to the caller in memory; nothing reads it back
        from result storage."""
        found: Flow[P, R] | None = self.__dict__.get("_waymark_unnamed")
        if found is None:
            found = copy.copy(self)
            found.flow_run_name = None
            if found.persist_result is None:
                found.persist_result = False
            self.__dict__["_waymark_unnamed"] = found
        return found


def named_flow(
    names: Callable[[Mapping[str, Any]], tuple[str, list[str]]], **options: Any
) -> Callable[[Callable[P, R]], NamedFlow[P, R]]:
    """``@flow(**options)`` whose top-level runs are created named and tagged by ``names``."""

    def wrap(fn: Callable[P, R]) -> NamedFlow[P, R]:
        made: NamedFlow[P, R] = NamedFlow(fn=fn, **options)
        made.names = names
        return made

    return wrap


def waymark_flow(**options: Any) -> Callable[[Callable[P, R]], NamedFlow[P, R]]:
    """``@flow(**options)`` named and tagged as :mod:`.prefect_ui` says (``run_plan``)."""
    from .prefect_ui import run_name, run_name_and_tags

    return named_flow(run_name_and_tags, flow_run_name=run_name, **options)
