"""Delegation tokens in a real 3-broker cluster: kept in etcd, so a token created through
broker 1 logs in on broker 3, a renew through broker 2 shows in broker 3's describe, and an
expire through broker 3 ends logins on broker 1.

One cluster for the module (etcd + three brokers, segment layout), each broker with the
fixture's PLAINTEXT listener and a SASL_PLAINTEXT one where alice (a SCRAM user every broker's
--sasl-scram-user puts in etcd) asks for tokens, all with the same delegation.token.secret.key.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers.broker_process import free_port
from compat_tests.helpers.cluster import running_cluster
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.token_requests import _password, call, create
from compat_tests.helpers.waiting import wait_until
from wire.scram import ScramClient

NONE = 0


@pytest.fixture(scope="module")
def token_cluster():
    sasl_ports: dict[int, int] = {}

    def listeners(node: int, port: int) -> list[str]:
        sasl_ports[node] = sasl = free_port()
        return ["--listeners", f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
                "--sasl-scram-user", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
                "--delegation-token-secret-key", "one-key-for-the-cluster"]

    with running_cluster("segment", broker_args=listeners) as cluster:
        cluster.sasl_ports = sasl_ports
        yield cluster


def _login(cluster, node: int, user: str, password: str, token: bool = False) -> Client | None:
    """A logged-in SASL connection to `node`, or None when the broker refuses the login."""
    c = Client("127.0.0.1", cluster.sasl_ports[node])
    c.request(17, 1, mechanism="SCRAM-SHA-256")
    scram = ScramClient("SCRAM-SHA-256", user, password, "cluster-nonce",
                        extensions={"tokenauth": "true"} if token else None)
    first = c.request(36, 2, auth_bytes=scram.first())
    if first.error_code != NONE:
        c.close()
        return None
    final = c.request(36, 2, auth_bytes=scram.final(first.auth_bytes))
    assert final.error_code == NONE, final.error_message
    return c


def _token_login_works(cluster, node: int, token) -> bool:
    c = _login(cluster, node, token.token_id, _password(token.hmac), token=True)
    if c is None:
        return False
    c.close()
    return True


def test_a_token_made_on_one_broker_holds_on_every_broker(token_cluster):
    cluster = token_cluster
    alice_1 = wait_until(lambda: _login(cluster, 1, "alice", "alice-secret"), "alice's SCRAM user in etcd")
    with alice_1:
        token = create(alice_1)
    assert token.error_code == NONE
    wait_until(lambda: _token_login_works(cluster, 3, token), "broker 3 taking the token made on broker 1",
               timeout=10)

    with _login(cluster, 2, "alice", "alice-secret") as alice_2:
        renewed = call(alice_2, 39, 2, hmac=token.hmac, renew_period=120_000)
    assert renewed.error_code == NONE and renewed.expiry_timestamp != token.expiry_timestamp
    with _login(cluster, 3, "alice", "alice-secret") as alice_3:
        wait_until(lambda: {t.token_id: t.expiry_timestamp for t in call(alice_3, 41, 3, owners=None).tokens}
                   .get(token.token_id) == renewed.expiry_timestamp, "broker 3 showing broker 2's renew", timeout=10)
        assert call(alice_3, 40, 2, hmac=token.hmac, expiry_time_period=-1).error_code == NONE
    wait_until(lambda: not _token_login_works(cluster, 1, token), "broker 1 refusing the token broker 3 expired",
               timeout=10)
    with _login(cluster, 1, "alice", "alice-secret") as alice_1:
        assert token.token_id not in [t.token_id for t in call(alice_1, 41, 3, owners=None).tokens]
