"""LeaderState against a plain model: the HW is the lowest LEO in the ISR and never goes back;
a follower is lagging once it has not reached the leader's LEO for longer than the lag time;
it may rejoin once it reaches the HW and the start of the leader's epoch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replica.leader_state import LeaderState

LEADER, FOLLOWERS, LAG = 1, (2, 3), 100

step = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 5)),
    st.tuples(st.just("fetch"), st.sampled_from(FOLLOWERS), st.integers(0, 5)),
    st.tuples(st.just("isr"), st.sets(st.sampled_from(FOLLOWERS))),
    st.tuples(st.just("tick"), st.integers(1, 80)),
)


@settings(max_examples=300)
@given(st.lists(step, max_size=60), st.integers(0, 3))
def test_high_watermark_and_isr_follow_kafkas_rules(steps, start):
    now = [0]
    state = LeaderState(LEADER, [LEADER, *FOLLOWERS], [LEADER, *FOLLOWERS], start, 0, lambda: now[0], LAG,
                        epoch_start_offset=start)
    leo = {LEADER: start, 2: -1, 3: -1}  # the model: LEO per replica (-1: not fetched yet)
    caught_up = {2: 0, 3: 0}
    isr, hw = {LEADER, *FOLLOWERS}, 0
    for s in steps:
        if s[0] == "append":
            leo[LEADER] += s[1]
            state.leader_appended(leo[LEADER])
            for r in FOLLOWERS:
                if leo[r] >= leo[LEADER]:
                    caught_up[r] = now[0]
        elif s[0] == "fetch":
            _, r, behind = s
            offset = max(leo[r], leo[LEADER] - behind)  # a follower only moves forward
            leo[r] = offset
            state.follower_fetched(r, offset)
            if offset >= leo[LEADER]:
                caught_up[r] = now[0]
        elif s[0] == "isr":
            isr = {LEADER, *s[1]}
            state.set_isr(isr)
        else:
            now[0] += s[1]
        hw = max(hw, min(leo[r] for r in isr))
        assert state.high_watermark == hw
        assert state.high_watermark <= leo[LEADER]
        assert state.lagging() == {r for r in isr - {LEADER} if now[0] - caught_up[r] > LAG}
        for r in FOLLOWERS:
            assert state.may_join(r) == (r not in isr and leo[r] >= max(hw, start))


def test_an_unknown_replica_changes_nothing():
    state = LeaderState(LEADER, [LEADER, 2], [LEADER, 2], 5, 0, lambda: 0, LAG)
    state.follower_fetched(2, 5)
    assert state.high_watermark == 5
    state.follower_fetched(99, 0)  # stale metadata: not a replica of this partition
    assert state.high_watermark == 5
