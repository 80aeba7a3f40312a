"""A plan's YAML values built from the event stream the loader scans anyway, instead of parsing
the text a second time with ``yaml.load`` (on a 10,000-step plan that second pass, nodes and
Python constructors, was ~2 s of ``waymark validate`` and ``waymark status``).

Only plain documents are built here: mappings, lists and scalars without anchors, aliases,
explicit tags or merge keys, one document. Anything else (and any error) gives up, and the
loader calls ``yaml.load`` as before, so values and error messages stay the safe loader's.
Scalars resolve exactly as the loader's resolver resolves them; a non-string one is made by the
loader's own constructor."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["ValueBuilder"]

_STR = "tag:yaml.org,2002:str"


def _give_up() -> ValueError:
    """The document is not a plain one: ``yaml.load`` builds it (:meth:`ValueBuilder.feed`
    catches this, and every other error, and stops building)."""
    return ValueError("not a plain YAML document")


class ValueBuilder:
    """Fed every event of one stream (:meth:`feed`); :attr:`value` is the document's data."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._firsts = loader.yaml_implicit_resolvers
        if None in self._firsts:  # a resolver for every first character: resolve each scalar
            self._firsts = _Everything()
        self._stack: list[tuple[Any, list[Any]]] = []  # (dict or list, pending key as [k])
        self._docs = 0
        self._constructor: Any = None
        self.value: Any = None
        self.done = False  # the whole stream was built
        self._gave_up = False

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        value = event.value
        if not event.implicit[0]:  # quoted or block scalar: a string
            return value
        if value and value[0] not in self._firsts:
            return value
        if self._constructor is None:  # the loader's own resolver and constructors
            self._constructor = self._loader("")
        tag = self._constructor.resolve(yaml.ScalarNode, value, event.implicit)
        if tag == _STR:
            return value
        start: Any = event.start_mark  # libyaml's marks: what its composer puts on nodes
        end: Any = event.end_mark
        node = yaml.ScalarNode(tag, value, start, end, event.style)
        return self._constructor.construct_object(node, deep=True)

    def _add(self, value: Any) -> None:
        if not self._stack:
            self.value = value
            return
        top, key = self._stack[-1]
        if isinstance(top, list):
            top.append(value)
        elif not key:
            if isinstance(value, dict | list) or value == "<<":
                raise _give_up()  # a complex key or a merge key: the safe loader's rules
            key.append(value)
        else:
            top[key.pop()] = value  # a duplicate key was refused already (or is the last)

    def feed(self, event: Any) -> None:
        """Take the stream's next event; after one it cannot build, ignore the rest."""
        if self._gave_up:
            return
        try:
            self._feed(event)
        except Exception:  # noqa: BLE001 - not a plain document (or a bad value): yaml.load
            self._gave_up = True
            self.done = False

    def _feed(self, event: Any) -> None:
        cls = type(event)
        if cls is yaml.ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _give_up()
            self._add(self._scalar(event))
        elif cls is yaml.MappingStartEvent or cls is yaml.SequenceStartEvent:
            if event.anchor is not None or event.tag is not None:
                raise _give_up()
            self._stack.append(({} if cls is yaml.MappingStartEvent else [], []))
        elif cls is yaml.MappingEndEvent or cls is yaml.SequenceEndEvent:
            done, _ = self._stack.pop()
            self._add(done)
        elif cls is yaml.AliasEvent:
            raise _give_up()
        elif cls is yaml.DocumentStartEvent:
            self._docs += 1
            if self._docs > 1:
                raise _give_up()  # yaml.load refuses it, with its own message
        elif cls is yaml.StreamEndEvent:
            self.done = True

    def close(self) -> None:
        if self._constructor is not None:
            self._constructor.dispose()


class _Everything:
    def __contains__(self, item: object) -> bool:
        return True
