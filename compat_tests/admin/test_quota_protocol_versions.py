"""Every advertised version of DescribeClientQuotas (48) and AlterClientQuotas (49), over a raw
socket: quotas set on each kind of entity (user, client-id, both, their defaults, ip) are
described back through exact, default and any-name filters, strict or not; `remove` drops a key;
validate_only stores nothing; Kafka's refusals (INVALID_REQUEST, UNSUPPORTED_VERSION for an
unknown entity type in a filter) with their messages; and the quotas survive a restart.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions

NONE, UNSUPPORTED_VERSION, INVALID_REQUEST = 0, 35, 42
EXACT, DEFAULT, ANY = 0, 1, 2


@pytest.fixture(scope="module")
def broker():
    proc = BrokerProcess()
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


def _entry(entity: dict, remove=(), **values):
    ops = [{"key": k, "value": v, "remove": False} for k, v in values.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in remove]
    return {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()], "ops": ops}


def _alter(c, version, *entries, validate_only=False):
    r = c.request(49, version, entries=list(entries), validate_only=validate_only)
    return [(x.error_code, {e.entity_type: e.entity_name for e in x.entity}, x.error_message) for x in r.entries]


def _describe(c, version, *components, strict=False):
    r = c.request(48, version, strict=strict, components=[
        {"entity_type": t, "match_type": m, "match": n} for t, m, n in components])
    assert r.error_code == NONE, r
    return {tuple(sorted((e.entity_type, e.entity_name) for e in x.entity)): {v.key: v.value for v in x.values}
            for x in r.entries}


@over_versions(49)
def test_alter_and_describe_each_kind_of_entity(broker, version):
    user, client = f"u{version}-{uuid.uuid4().hex[:6]}", f"c{version}-{uuid.uuid4().hex[:6]}"
    with Client.to(broker) as c:
        got = _alter(c, version,
                     _entry({"user": user}, producer_byte_rate=1024.0, request_percentage=12.5),
                     _entry({"client-id": client}, consumer_byte_rate=2048.0),
                     _entry({"user": user, "client-id": client}, controller_mutation_rate=3.5),
                     _entry({"user": None}, producer_byte_rate=4096.0),
                     _entry({"ip": "127.0.0.2"}, connection_creation_rate=7.0))
        assert [code for code, _, _ in got] == [NONE] * 5, got
        described = _describe(c, 1, ("user", EXACT, user))
        assert described == {
            (("user", user),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
            (("client-id", client), ("user", user)): {"controller_mutation_rate": 3.5}}
        assert _describe(c, 1, ("user", EXACT, user), strict=True) == {
            (("user", user),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5}}
        assert _describe(c, 1, ("user", DEFAULT, None), strict=True) == {
            (("user", None),): {"producer_byte_rate": 4096.0}}
        assert _describe(c, 1, ("client-id", EXACT, client), ("user", ANY, None)) == {
            (("client-id", client), ("user", user)): {"controller_mutation_rate": 3.5}}
        assert _describe(c, 1, ("ip", EXACT, "127.0.0.2")) == {
            (("ip", "127.0.0.2"),): {"connection_creation_rate": 7.0}}
        # remove one key, then the last: the entity goes
        assert _alter(c, version, _entry({"user": user}, remove=["producer_byte_rate"]))[0][0] == NONE
        assert _describe(c, 1, ("user", EXACT, user), strict=True) == {(("user", user),): {"request_percentage": 12.5}}
        gone = _alter(c, version, _entry({"user": user}, remove=["request_percentage", "consumer_byte_rate"]))
        assert gone[0][0] == NONE
        assert _describe(c, 1, ("user", EXACT, user), strict=True) == {}
        # validate_only checks and stores nothing
        assert _alter(c, version, _entry({"user": user}, producer_byte_rate=5.0), validate_only=True)[0][0] == NONE
        assert _describe(c, 1, ("user", EXACT, user), strict=True) == {}
        assert _alter(c, version, _entry({"user": user}, unknown_key=5.0), validate_only=True)[0][0] == INVALID_REQUEST
        _alter(c, version, _entry({"user": None}, remove=["producer_byte_rate"]),
               _entry({"ip": "127.0.0.2"}, remove=["connection_creation_rate"]))


@over_versions(49)
def test_alter_refusals(broker, version):
    with Client.to(broker) as c:
        cases = [
            (_entry({"user": "a"}, unknown_key=1.0), "Invalid configuration key unknown_key"),
            (_entry({"user": "b"}, producer_byte_rate=0.0), "Quota producer_byte_rate must be greater than 0"),
            (_entry({"user": "c"}, producer_byte_rate=-5.0), "must be greater than 0"),
            (_entry({"user": "d"}, producer_byte_rate=10.5), "producer_byte_rate cannot be a fractional value."),
            (_entry({"client-id": "e"}, connection_creation_rate=3.0), "Invalid configuration key"),
            (_entry({"ip": "127.0.0.1"}, producer_byte_rate=3.0), "Invalid configuration key producer_byte_rate"),
            (_entry({"ip": "1.2.3.4", "user": "f"}, connection_creation_rate=3.0), "IP entity should"),
            (_entry({"ip": "no-such-host.invalid"}, connection_creation_rate=3.0), "is not a valid IP"),
            (_entry({"group": "g"}, producer_byte_rate=3.0), "Unhandled client quota entity type: group"),
            (_entry({"user": ""}, producer_byte_rate=3.0), "Empty user not supported"),
            (_entry({}, producer_byte_rate=3.0), "Invalid empty client quota entity"),
        ]
        got = _alter(c, version, *(entry for entry, _ in cases))
        assert len(got) == len(cases)
        for (code, _, message), (_, expected) in zip(got, cases):
            assert code == INVALID_REQUEST and expected in message, (code, message, expected)
        # one entity named twice: one result, refused; a key twice in one entry: the same
        twice = _alter(c, version, _entry({"user": "h"}, producer_byte_rate=3.0),
                       _entry({"user": "h"}, consumer_byte_rate=3.0))
        assert [(code, "Ignoring duplicate entity" in m) for code, _, m in twice] == [(INVALID_REQUEST, True)]
        dup = c.request(49, version, validate_only=False, entries=[{
            "entity": [{"entity_type": "user", "entity_name": "i"}],
            "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}] * 2}])
        assert [x.error_code for x in dup.entries] == [INVALID_REQUEST]
        # a refused entity changes nothing; a good one beside it does
        mixed = _alter(c, version, _entry({"user": "j"}, producer_byte_rate=1000.0, nope=1.0),
                       _entry({"user": "k"}, producer_byte_rate=1000.0))
        assert [code for code, _, _ in mixed] == [INVALID_REQUEST, NONE]
        assert _describe(c, 1, ("user", EXACT, "j")) == {}
        assert _describe(c, 1, ("user", EXACT, "k")) == {(("user", "k"),): {"producer_byte_rate": 1000.0}}
        _alter(c, version, _entry({"user": "k"}, remove=["producer_byte_rate"]),
               _entry({"user": "h"}, remove=["producer_byte_rate"]))


@over_versions(48)
def test_describe_filters_and_refusals(broker, version):
    tag = uuid.uuid4().hex[:6]
    with Client.to(broker) as c:
        assert [x[0] for x in _alter(c, 1, _entry({"client-id": f"x{tag}"}, producer_byte_rate=10.0),
                                      _entry({"client-id": None}, consumer_byte_rate=20.0))] == [NONE, NONE]
        r = c.request(48, version, strict=False, components=[{"entity_type": "client-id", "match_type": EXACT,
                                                               "match": f"x{tag}"}])
        assert r.error_code == NONE and r.error_message is None
        assert [({e.entity_type: e.entity_name for e in x.entity}, {v.key: v.value for v in x.values})
                for x in r.entries] == [({"client-id": f"x{tag}"}, {"producer_byte_rate": 10.0})]
        every = c.request(48, version, strict=False, components=[])
        names = [{e.entity_type: e.entity_name for e in x.entity} for x in every.entries]
        assert {"client-id": f"x{tag}"} in names and {"client-id": None} in names
        assert c.request(48, version, strict=True, components=[]).entries == ()
        bad = [
            ([("", EXACT, "a")], INVALID_REQUEST, "Invalid empty entity type."),
            ([("user", EXACT, "a"), ("user", ANY, None)], INVALID_REQUEST, "cannot appear more than once"),
            ([("group", EXACT, "a")], UNSUPPORTED_VERSION, "Unsupported entity type group"),
            ([("user", EXACT, None)], INVALID_REQUEST, "MATCH_TYPE_EXACT, but set match string to null."),
            ([("user", DEFAULT, "a")], INVALID_REQUEST, "MATCH_TYPE_DEFAULT, but also specified a match string."),
            ([("user", ANY, "a")], INVALID_REQUEST, "MATCH_TYPE_SPECIFIED, but also specified a match string."),
            ([("user", 7, None)], INVALID_REQUEST, "Unknown match type 7"),
            ([("ip", ANY, None), ("client-id", ANY, None)], INVALID_REQUEST, "IP filter component should not"),
        ]
        for components, code, message in bad:
            r = c.request(48, version, strict=False, components=[
                {"entity_type": t, "match_type": m, "match": n} for t, m, n in components])
            assert (r.error_code, r.entries) == (code, None) and message in r.error_message, (components, r)
        _alter(c, 1, _entry({"client-id": f"x{tag}"}, remove=["producer_byte_rate"]),
               _entry({"client-id": None}, remove=["consumer_byte_rate"]))


def test_quotas_survive_a_restart(tmp_path):
    proc = BrokerProcess(workdir=tmp_path)
    try:
        proc.start()
        with Client.to(proc) as c:
            assert _alter(c, 1, _entry({"user": "kept", "client-id": None}, producer_byte_rate=777.0))[0][0] == NONE
        proc.stop()
        assert (proc.data_dir / "client_quotas.json").exists()
        proc.start()
        with Client.to(proc) as c:
            assert _describe(c, 1, ("user", EXACT, "kept")) == {
                (("client-id", None), ("user", "kept")): {"producer_byte_rate": 777.0}}
    finally:
        proc.cleanup()
