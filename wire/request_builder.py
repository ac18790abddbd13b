"""Request entities from plain values, for clients of the codec (the `twinlog` CLI's admin client).

kio's request classes are frozen dataclasses, one per API version, with nested classes for
arrays of structs. Writing every nested class by hand for each request a tool sends would tie
the tool to one version of each API; instead a request is described once as keyword values,
nested structs as dicts, and built for whichever version the broker and we agree on:

    build_request(19, 7, topics=[{"name": "t", "num_partitions": 3, ...}], timeout=30_000)

Values for fields the version lacks are dropped (so one description serves versions whose
schemas differ in optional fields); lists become tuples; an int given for a duration field
(timeouts, max_wait) is taken as milliseconds.
"""

from __future__ import annotations

import dataclasses
import datetime

from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_schema_field_type

from .protocol import request_class


def build_request(api_key: int, version: int, **values):
    """The kio request entity of (api_key, version) holding `values`."""
    return _build(request_class(api_key, version), values)


def _build(cls, values: dict):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    return cls(**{name: _convert(fields[name], value) for name, value in values.items() if name in fields})


def _convert(field: dataclasses.Field, value):
    if value is None:
        return None
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return tuple(v if dataclasses.is_dataclass(v) else _build(kind.type_, v) for v in value)
    if isinstance(kind, EntityField):
        return value if dataclasses.is_dataclass(value) else _build(kind.type_, value)
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, int) and get_schema_field_type(field).startswith("timedelta"):
        return datetime.timedelta(milliseconds=value)
    return value
