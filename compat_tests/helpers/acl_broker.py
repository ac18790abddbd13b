"""One broker with --authorizer for the ACL tests: SASL_PLAINTEXT with PLAIN users on
`proc.sasl_port` and, unless `sasl_only`, a PLAINTEXT listener on `proc.port` whose
User:ANONYMOUS is a super user, for the test to set things up and check them without ACLs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from compat_tests.helpers.broker_process import BrokerProcess, free_port


@contextmanager
def running_acl_broker(users: Path, *extra_args: str, super_users: str = "User:ANONYMOUS",
                       sasl_only: bool = False) -> Iterator[BrokerProcess]:
    """`users`: a PLAIN users file (`user_<name>="<password>";`); started, and stopped on leaving."""
    port = free_port()
    sasl_port = port if sasl_only else free_port()
    listeners = [f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}"] + ([] if sasl_only else [f"PLAINTEXT://127.0.0.1:{port}"])
    proc = BrokerProcess(port=port, extra_args=[
        "--listeners", ",".join(reversed(listeners)), "--sasl-plain-users", str(users),
        "--authorizer", "--super-users", super_users, *extra_args])
    proc.sasl_port = sasl_port
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()
