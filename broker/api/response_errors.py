"""The error codes a response carries, as Kafka's AbstractResponse.errorCounts() finds them.

A kio response is a tree of frozen dataclasses: error codes sit in `ErrorCode` fields at any
depth (a Produce answer has one per partition, a Metadata answer one per topic and partition).
Which fields of a class can hold one, directly or below, follows from its type hints alone, so
that is worked out once per class; a walk then visits only those fields. The metrics count the
errors per API (kafka_network_requestmetrics_errors_total), Kafka's ErrorsPerSec.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode

from wire.protocol import EncodedBody

NONE = ErrorCode.none


def _entity(hint: Any) -> type | None:
    """The dataclass a field holds (alone, optional, or as a tuple of them), else None."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    if typing.get_origin(hint) in (tuple, typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if arg is not Ellipsis and (inner := _entity(arg)) is not None:
                return inner
    return None


@cache
def _plan(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names of the ErrorCode fields, names of the fields whose entities may hold one)."""
    codes, nested = [], []
    for f in dataclasses.fields(cls):
        if f.type is ErrorCode:
            codes.append(f.name)
        elif (inner := _entity(f.type)) is not None and _holds_errors(inner):
            nested.append(f.name)
    return tuple(codes), tuple(nested)


@cache
def _holds_errors(cls: type) -> bool:
    codes, nested = _plan(cls)
    return bool(codes or nested)


def errors_in(response: Any) -> list[ErrorCode]:
    """Every error code other than NONE in `response`, as often as it occurs."""
    if isinstance(response, EncodedBody):
        return list(response.errors)
    found: list[ErrorCode] = []
    _walk(response, found)
    return found


def _walk(entity: Any, found: list[ErrorCode]) -> None:
    codes, nested = _plan(entity.__class__)
    for name in codes:
        code = getattr(entity, name)
        if code is not NONE:
            found.append(code)
    for name in nested:
        value = getattr(entity, name)
        if value is None:
            continue
        if isinstance(value, tuple):
            for item in value:
                _walk(item, found)
        else:
            _walk(value, found)
