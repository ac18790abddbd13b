"""Delegation token requests over raw sockets: CreateDelegationToken and the calls on a token."""

from __future__ import annotations

import base64
import dataclasses
import functools

from kio.serial import entity_reader
from kio.static.primitive import i64

from compat_tests.helpers.raw_kafka import Client, build_request, response_class, response_header_version


@functools.cache
def _with_ms_times(cls):
    """The response class with its timestamps read as the int64 milliseconds they are on the
    wire: kio's datetime fields cannot hold the -1 of Kafka's refusals."""
    fields = []
    for f in dataclasses.fields(cls):
        metadata, kind = dict(f.metadata), f.type
        if metadata.get("kafka_type") == "datetime_i64":
            metadata["kafka_type"], kind = "int64", i64
        fields.append((f.name, kind, dataclasses.field(metadata=metadata)))
    out = dataclasses.make_dataclass(cls.__name__, fields, frozen=True, slots=True, kw_only=True)
    for name in ("__type__", "__version__", "__flexible__", "__api_key__", "__header_schema__"):
        setattr(out, name, getattr(cls, name))
    return out


def call(c: Client, api_key: int, version: int, **values):
    """One request of 38-41, its response decoded whole, times in milliseconds."""
    c.send(build_request(api_key, version, **values))
    payload = c.recv_payload()
    pos = 4 + (response_header_version(api_key, version) == 1)
    body, size = entity_reader(_with_ms_times(response_class(api_key, version)))(payload, pos)
    assert pos + size == len(payload)
    return body


def create(c: Client, version: int = 3, renewers=(), max_lifetime_ms: int = -1, owner=None):
    fields = dict(renewers=[{"principal_type": t, "principal_name": n} for t, n in renewers],
                  max_lifetime=max_lifetime_ms)
    if version >= 3:
        fields.update(owner_principal_type=owner[0] if owner else None, owner_principal_name=owner[1] if owner else None)
    return call(c, 38, version, **fields)


def _password(hmac: bytes) -> str:
    return base64.b64encode(hmac).decode()
