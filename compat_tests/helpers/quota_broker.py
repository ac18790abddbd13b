"""What the client-quota tests share: a broker whose quota rates span SAMPLES one-second windows,
and setting a quota on it with AlterClientQuotas."""

from __future__ import annotations

from collections.abc import Iterator

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.raw_kafka import Client

SAMPLES = 3  # quota.window.num of the broker below; quota.window.size.seconds stays 1


def quota_broker(metrics: bool = False) -> Iterator[BrokerProcess]:
    """The body of a module-scoped fixture: one broker, stopped when the module is done."""
    proc = BrokerProcess(extra_args=["--quota-window-num", str(SAMPLES)], metrics=metrics)
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


def set_quota(broker, entity: dict, **values) -> None:
    """AlterClientQuotas v1 of `values` ({key: number}) on `entity` ({entity type: name or None})."""
    with Client.to(broker) as c:
        r = c.request(49, 1, validate_only=False, entries=[{
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
            "ops": [{"key": k, "value": float(v), "remove": False} for k, v in values.items()]}])
        assert [x.error_code for x in r.entries] == [0], r
