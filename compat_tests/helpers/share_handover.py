"""A share-group member that dies hands its records to another member at once."""

from __future__ import annotations

import time

from compat_tests.helpers.java_share_members import accepted, assert_no_failures, produce, wait_until
from compat_tests.helpers.raw_kafka import Client

LOCK_MS = 60_000
BOUND_S = LOCK_MS / 1000 / 2  # far sooner than a lock or a session runs out
INCREMENTAL_ALTER_CONFIGS, GROUP_RESOURCE, SET, SHARE_FETCH = 44, 32, 0, 78


def set_group_config(host: str, port: int, group: str, name: str, value: str) -> None:
    """IncrementalAlterConfigs SET of one of a group's configs, through the broker at host:port."""
    with Client(host, port) as c:
        r = c.request(INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
            {"resource_type": GROUP_RESOURCE, "resource_name": group,
             "configs": [{"name": name, "config_operation": SET, "value": value}]}])
    assert [x.error_code for x in r.responses] == [0], r


def assert_a_member_s_records_go_to_another(bootstrap: str, topic: str, group: str, members, goes: str) -> None:
    """A Java member holds records (never acknowledging) and is SIGKILLed ("killed") or closes
    ("closed"); a member already consuming gets them, at their second delivery, well before
    their lock (the group's, 60 s) runs out."""
    values = [f"k-{i}" for i in range(10)]
    produce(bootstrap, topic, values)
    holder = members(bootstrap, "holder", topic, group, hold=True)
    held = {r[2] for r in holder.wait_for("held")["records"]}
    assert held, holder.describe()
    taker = members(bootstrap, "taker", topic, group)
    wait_until(lambda: set(accepted([taker])) >= set(values) - held, "the taker accepted what was not held",
               [holder, taker])
    assert not held & set(accepted([taker])), taker.records()  # still locked to the living holder
    if goes == "killed":
        holder.proc.kill()  # SIGKILL: the client says nothing, its kernel closes its sockets
    else:
        holder.close()  # the client closes its share sessions (epoch -1) and leaves the group
    gone_at = time.monotonic()
    wait_until(lambda: set(accepted([taker])) == set(values), f"the {goes} member's records accepted",
               [holder, taker], timeout=BOUND_S)
    waited = time.monotonic() - gone_at
    print(f"records of a {goes} member back after {waited:.2f} s (lock {LOCK_MS / 1000:.0f} s)")
    again = [r for r in taker.records() if r[2] in held]
    assert sorted(r[2] for r in again) == sorted(held) and all(r[3] == 2 for r in again), again
    assert_no_failures([taker])
