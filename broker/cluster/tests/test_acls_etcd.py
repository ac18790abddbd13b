"""ACLs of a cluster against a real etcd (broker/security/acl/cluster_store.py): an ACL created through one
broker binds another as soon as its image shows it; two brokers creating ACLs at once both land
(compare-and-swap of the one key); DeleteAcls reports what it removed, everywhere."""

from __future__ import annotations

import asyncio

from broker.security.acl.authorizer import AuthorizerSettings
from broker.security.acl.cluster_store import ClusterAclStore
from broker.security.acl.model import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType

from broker.cluster.tests.harness import Members, run


def _acl(name: str, user: str = "User:alice") -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, PatternType.PREFIXED, user, "*", Operation.WRITE, Permission.ALLOW)


EVERYTHING = AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY)


def test_acls_bind_every_broker_and_concurrent_changes_land(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            one, two = await members.start(1, 2)
            first, second = ClusterAclStore(one, AuthorizerSettings()), ClusterAclStore(two, AuthorizerSettings())
            assert not second.authorizer.authorize("User:alice", "h", Operation.WRITE, ResourceType.TOPIC, "a.x")
            await first.create([_acl("a.")])
            await two.wait_for(lambda im: len(im.acls.entries) == 1, 5)
            assert second.authorizer.authorize("User:alice", "h", Operation.WRITE, ResourceType.TOPIC, "a.x")
            await asyncio.gather(*(store.create([_acl(f"p{i}.")])
                                   for i, store in enumerate([first, second] * 5)))
            await one.wait_for(lambda im: len(im.acls.entries) == 11, 5)
            assert {a.resource_name for a in first.describe(EVERYTHING)} == {"a.", *(f"p{i}." for i in range(10))}
            only_a = AclFilter(ResourceType.TOPIC, "a.", PatternType.PREFIXED, None, None, Operation.ANY,
                               Permission.ANY)
            assert await second.delete([only_a, only_a]) == [[_acl("a.")], [_acl("a.")]]
            assert await second.delete([only_a]) == [[]]
            await one.wait_for(lambda im: len(im.acls.entries) == 10, 5)
            assert not first.authorizer.authorize("User:alice", "h", Operation.WRITE, ResourceType.TOPIC, "a.x")
            assert first.authorizer.authorize("User:alice", "h", Operation.WRITE, ResourceType.TOPIC, "p3.x")
    run(scenario())
