"""Client quotas' pure logic against Kafka's numbers: the sampled rate and its throttle time,
the token bucket, the precedence of entities, AlterClientQuotas' per-entity outcome, a fetch's
cap to one quota window, and the handler time a request used so far."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace as NS

import pytest

from wire.error_codes import ErrorCode
from broker.quotas.enforcement import BusyTime
from broker.quotas.entities import plan_alteration
from broker.quotas.manager import ClientQuotaManager
from broker.quotas.rate import SampledRate, TokenBucket


def test_a_new_rate_counts_its_first_sample_as_the_whole_window_but_one():
    rate = SampledRate(samples=11, window_s=1.0)
    rate.record(1000, now=0.0)
    assert rate.measure(0.5) == (1000 / 10.5, 10.5)  # 0.5 s elapsed + 10 missing whole windows
    assert rate.throttle_ms(100.0, 0.0) == 0  # 1000 bytes over 10 s is exactly 100/s
    rate.record(100, now=0.0)
    # Kafka's throttle: (rate - quota) / quota * window = (110 - 100) / 100 * 10 s
    assert rate.throttle_ms(100.0, 0.0) == 1000


def test_samples_expire_after_the_whole_window():
    rate = SampledRate(samples=3, window_s=1.0)
    rate.record(300, now=0.0)
    rate.record(30, now=1.5)  # a new sample: the first is 1 s old
    assert rate.measure(2.0)[0] == pytest.approx(330 / 2.0)
    assert rate.measure(3.0)[0] == pytest.approx(30 / 2.5)  # the first is 3 s old: gone; 1.5 s + 1 window


def test_the_token_bucket_starts_full_and_refills_at_the_quota():
    bucket = TokenBucket(burst=6, now=0.0)
    assert not bucket.exceeded(2.0, 6, 0.0)
    bucket.take(10, 2.0, 6, 0.0)
    assert bucket.exceeded(2.0, 6, 0.0) and bucket.throttle_ms(2.0, 6, 0.0) == 2000
    assert bucket.throttle_ms(2.0, 6, 1.5) == 500
    assert not bucket.exceeded(2.0, 6, 2.0)


@pytest.mark.parametrize("set_on,tags", [
    ((("client-id", "c"), ("user", "u")), ("u", "c")),
    ((("client-id", None), ("user", "u")), ("u", "c")),
    ((("user", "u"),), ("u", "")),
    ((("client-id", "c"), ("user", None)), ("u", "c")),
    ((("client-id", None), ("user", None)), ("u", "c")),
    ((("user", None),), ("u", "")),
    ((("client-id", "c"),), ("", "c")),
    ((("client-id", None),), ("", "c")),
])
def test_each_level_of_kafkas_precedence_and_who_shares_its_rate(set_on, tags):
    quotas = {set_on: {"producer_byte_rate": 10.0}}
    manager = ClientQuotaManager(11, 1.0, lambda: quotas)
    assert manager.quota_for("producer_byte_rate", "u", "c") == (10.0, tags)
    assert manager.quota_for("consumer_byte_rate", "u", "c") is None


def test_the_first_match_wins_and_a_change_is_seen():
    quotas = {(("user", "u"),): {"producer_byte_rate": 5.0}, (("client-id", "c"),): {"producer_byte_rate": 7.0}}
    manager = ClientQuotaManager(11, 1.0, lambda: quotas)
    assert manager.quota_for("producer_byte_rate", "u", "c") == (5.0, ("u", ""))
    assert manager.quota_for("producer_byte_rate", "v", "c") == (7.0, ("", "c"))
    quotas = {(("client-id", "c"),): {"producer_byte_rate": 9.0}}  # a new object, as the stores make
    assert manager.quota_for("producer_byte_rate", "u", "c") == (9.0, ("", "c"))


def _entry(pairs, **ops):
    return NS(entity=[NS(entity_type=t, entity_name=n) for t, n in pairs],
              ops=[NS(key=k, value=v, remove=v is None) for k, v in ops.items()])


def test_an_entity_named_twice_gets_one_refusal_and_its_first_change_stands():
    results, after = plan_alteration({}, [_entry([("user", "a")], producer_byte_rate=10.0),
                                          _entry([("user", "a")], consumer_byte_rate=20.0)], set())
    assert list(results.values()) == [(ErrorCode.invalid_request,
                                       "Ignoring duplicate entity ClientQuotaEntity(entries={user=a})")]
    assert after == {(("user", "a"),): {"producer_byte_rate": 10.0}}


def test_an_invalid_key_leaves_the_entity_unchanged():
    current = {(("user", "a"),): {"producer_byte_rate": 10.0}}
    results, after = plan_alteration(current, [_entry([("user", "a")], producer_byte_rate=None, bogus=1.0)], set())
    assert results[(("user", "a"),)] == (ErrorCode.invalid_request, "Invalid configuration key bogus")
    assert after == current


def test_one_fetch_may_carry_the_quota_over_every_sample_but_the_current_one():
    quotas = {(("client-id", "c"),): {"consumer_byte_rate": 1234.0}}
    manager = ClientQuotaManager(11, 1.0, lambda: quotas)
    assert manager.fetch_window_bytes("u", "c") == 12340  # Kafka's getMaxValueInQuotaWindow: 1234 * 10 * 1 s
    assert ClientQuotaManager(3, 2.0, lambda: quotas).fetch_window_bytes("u", "c") == 4936  # 1234 * 2 * 2 s
    assert manager.fetch_window_bytes("u", "other") is None  # no quota: no cap


def test_busy_time_so_far_counts_the_running_step_and_not_the_waits():
    seen = []  # (so_far() mid-step, the step's own time measured inside it)
    wait_s = 0.2

    async def handler():
        await asyncio.sleep(wait_s)  # waiting: not busy
        resumed = time.perf_counter()
        while time.perf_counter() - resumed < 0.02:  # busy, inside the step still running
            pass
        so_far = busy.so_far()
        seen.append((so_far, time.perf_counter() - resumed))

    busy = BusyTime(handler())

    async def drive():
        await busy

    asyncio.run(drive())
    (so_far, stepped), = seen
    # A consumer's Fetch asks mid-step (enforcement.consumer_fetch): the running step counts, the
    # wait before it does not. Bounded by the step's own measured time, not by a fixed figure: a
    # loaded machine once stretched the 20 ms step to 59 ms.
    assert 0.02 <= so_far <= stepped + 0.01, seen
    assert so_far < wait_s, seen
    assert busy.busy_s >= so_far
