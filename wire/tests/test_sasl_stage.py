"""The SASL stage table: total, and no walk reaches an API handler before authentication."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wire.sasl_stage import (
    TRANSITIONS, Frame, Outcome, Stage, Verdict, after, classify, initial_stage, transition,
)


def test_table_is_total():
    assert set(TRANSITIONS) == {(s, f) for s in Stage for f in Frame}


def test_initial_stage_per_security_protocol():
    assert initial_stage("PLAINTEXT") is Stage.AUTHENTICATED
    assert initial_stage("SSL") is Stage.AUTHENTICATED
    assert initial_stage("SASL_PLAINTEXT") is Stage.HANDSHAKE
    assert initial_stage("SASL_SSL") is Stage.HANDSHAKE


def test_classify_reads_the_header_except_for_bare_tokens():
    assert classify(Stage.HANDSHAKE, 18, 3) is Frame.API_VERSIONS
    assert classify(Stage.HANDSHAKE, 17, 0) is Frame.SASL_HANDSHAKE_V0
    assert classify(Stage.HANDSHAKE, 17, 1) is Frame.SASL_HANDSHAKE_V1
    assert classify(Stage.AUTHENTICATE, 36, 2) is Frame.SASL_AUTHENTICATE
    assert classify(Stage.HANDSHAKE, 0, 9) is Frame.OTHER_API
    assert classify(Stage.RAW_TOKEN, 18, 0) is Frame.RAW_TOKEN


def test_the_happy_paths():
    step = transition(Stage.HANDSHAKE, Frame.SASL_HANDSHAKE_V1)
    assert step.verdict is Verdict.AUTHENTICATE and after(step, Outcome.CONTINUE) is Stage.AUTHENTICATE
    step = transition(Stage.AUTHENTICATE, Frame.SASL_AUTHENTICATE)
    assert after(step, Outcome.CONTINUE) is Stage.AUTHENTICATE
    assert after(step, Outcome.COMPLETE) is Stage.AUTHENTICATED
    step = transition(Stage.HANDSHAKE, Frame.SASL_HANDSHAKE_V0)
    assert after(step, Outcome.CONTINUE) is Stage.RAW_TOKEN
    assert after(transition(Stage.RAW_TOKEN, Frame.RAW_TOKEN), Outcome.COMPLETE) is Stage.AUTHENTICATED
    assert after(transition(Stage.RAW_TOKEN, Frame.RAW_TOKEN), Outcome.FAILED) is Stage.FAILED


# A client's walk: each frame it sends, and (when the authenticator takes it) what that made of it.
walks = st.lists(st.tuples(st.sampled_from(Frame), st.sampled_from(Outcome)), max_size=30)


@settings(max_examples=2000)
@given(start=st.sampled_from(["SASL_PLAINTEXT", "SASL_SSL"]), walk=walks)
def test_no_walk_reaches_a_handler_before_the_authenticator_says_complete(start, walk):
    stage = initial_stage(start)
    proven = False  # an AUTHENTICATE step ended COMPLETE
    for frame, outcome in walk:
        step = transition(stage, frame)
        if step.verdict is Verdict.CLOSE:
            return  # the connection is gone: nothing after this is read
        if step.verdict is Verdict.SERVE:
            assert proven or frame is Frame.API_VERSIONS, (stage, frame)
        if step.verdict is Verdict.AUTHENTICATE:
            assert frame in (Frame.SASL_HANDSHAKE_V0, Frame.SASL_HANDSHAKE_V1,
                             Frame.SASL_AUTHENTICATE, Frame.RAW_TOKEN), (stage, frame)
            stage = after(step, outcome)
            if outcome is Outcome.COMPLETE and stage is Stage.AUTHENTICATED:
                proven = True
            assert stage is not Stage.AUTHENTICATED or proven
        else:
            stage = step.next
        assert (stage is Stage.AUTHENTICATED) == proven
