"""The fault suite: each nemesis (compat_tests/helpers/nemeses.py) held for several session timeouts
against etcd and three brokers in network namespaces, under idempotent acks=all producers, a
transactional producer and two consumers (read_uncommitted, read_committed), in both storage
layouts; then the checkers: nothing acknowledged lost, no duplicate within a producer epoch,
each writer's order kept, no read of a record the final log does not hold there, every
committed transaction visible whole, no aborted one visible, none half visible, no
read_committed read past the last stable offset, the replicas byte for byte alike, and no
partition without an acknowledgement for longer than the lag time plus the session timeout
(fault_scenario.py says why that bound).

`make test` runs three scenarios per layout; the rest carry the `faults_full` marker, which its
`-m` deselects, and run under `make test-faults`. The random schedule prints its seed;
TWINLOG_FAULT_SEED=<seed> replays it.
"""

from __future__ import annotations

import os
import random

import pytest

from compat_tests.helpers.fault_scenario import run_scenario
from compat_tests.helpers.nemeses import NEMESES, random_schedule

pytestmark = pytest.mark.timeout(600)

HOLD_S = 10.0  # five session timeouts: a lease expires, leadership moves, the ISR shrinks
# leader-etcd-stale-clients: clients write to a leader etcd deposed, kept in the short run as the
# guard of the ISR rule that keeps its acknowledgements safe
SHORT = ("isolate-leader", "bridge", "kill", "leader-etcd-stale-clients")
MODES = ("segment", "commitlog")
SCHEDULE_STEPS = 5


def _cases():
    for mode in MODES:
        for name in NEMESES:
            marks = [] if name in SHORT else [pytest.mark.faults_full]
            yield pytest.param(mode, name, marks=marks, id=f"{mode}-{name}")


@pytest.mark.parametrize("storage_mode,nemesis", list(_cases()))
def test_scenario(storage_mode, nemesis):
    outcome = run_scenario(storage_mode, [(NEMESES[nemesis](), HOLD_S)])
    print("\n" + outcome.report())
    assert outcome.clean(), outcome.report()


@pytest.mark.faults_full
@pytest.mark.parametrize("storage_mode", MODES)
def test_random_schedule(storage_mode):
    seed = int(os.environ.get("TWINLOG_FAULT_SEED") or random.randrange(1 << 32))
    print(f"\nTWINLOG_FAULT_SEED={seed}")
    outcome = run_scenario(storage_mode, random_schedule(seed, SCHEDULE_STEPS), label=f"random seed {seed}",
                           txn_seed=seed)
    print(outcome.report())
    assert outcome.clean(), outcome.report()
