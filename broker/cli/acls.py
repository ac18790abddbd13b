"""`twinlog acls create|list|delete`: Kafka's ACLs over the Kafka protocol, as kafka-acls and
`rpk security acl` manage them.

    create  CreateAcls: every --allow-principal / --deny-principal with every --operation on
            every resource (--topic, --group, --transactional-id, --cluster), one binding each,
            as kafka-acls --add builds them; --resource-pattern-type literal or prefixed
    list    DescribeAcls with a filter: what is not given matches anything; with
            --resource-pattern-type match, the bindings that would apply to the named resource
            (wildcards and prefixes included), as Kafka's MATCH filter
    delete  DeleteAcls with the same filter, printing what it deleted; a filter naming neither a
            resource nor a principal would delete every ACL and is refused (exit 2)

The codes and names are Kafka's (broker/security/acl/model.py). A broker without an authorizer
answers SECURITY_DISABLED, a principal without ALTER (or DESCRIBE) on the cluster
CLUSTER_AUTHORIZATION_FAILED: one `Error:` line and exit status 1.
"""

from __future__ import annotations

import click

from broker.cli.client_settings import client_options
from broker.cli.options import check, kafka_client, print_table
from broker.cli.output import emit, format_option
from broker.security.acl.model import CLUSTER_NAME, Operation, PatternType, Permission, ResourceType

_OPERATIONS = [op.name.lower().replace("_", "-") for op in Operation if op > Operation.ANY]
_COLUMNS = ["PRINCIPAL", "HOST", "OPERATION", "PERMISSION", "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN-TYPE"]


def _resource_options(command):
    for option in reversed((
            click.option("--topic", "topics", multiple=True, help="A topic (repeatable)."),
            click.option("--group", "groups", multiple=True, help="A consumer group (repeatable)."),
            click.option("--transactional-id", "transactional_ids", multiple=True,
                         help="A transactional id (repeatable)."),
            click.option("--cluster", is_flag=True, help=f"The cluster ({CLUSTER_NAME})."))):
        command = option(command)
    return command


def _resources(topics, groups, transactional_ids, cluster) -> list[tuple[ResourceType, str]]:
    return ([(ResourceType.TOPIC, t) for t in topics] + [(ResourceType.GROUP, g) for g in groups]
            + [(ResourceType.TRANSACTIONAL_ID, t) for t in transactional_ids]
            + ([(ResourceType.CLUSTER, CLUSTER_NAME)] if cluster else []))


def _operation(name: str) -> Operation:
    return Operation[name.upper().replace("-", "_")]


def binding_document(resource_type, resource_name, pattern_type, principal, host, operation, permission) -> dict:
    return {"principal": principal, "host": host, "operation": Operation(operation).name,
            "permission": Permission(permission).name, "resource_type": ResourceType(resource_type).name,
            "resource_name": resource_name, "pattern_type": PatternType(pattern_type).name}


def _print_bindings(title: str, bindings: list[dict]) -> None:
    print_table(title, _COLUMNS, [list(b.values()) for b in bindings])


@click.group("acls")
def acls_group() -> None:
    """Create, list and delete ACLs (the broker must run with --authorizer)."""


@acls_group.command("create")
@click.option("--allow-principal", "allow", multiple=True, metavar="User:NAME", help="Allow this principal.")
@click.option("--deny-principal", "deny", multiple=True, metavar="User:NAME", help="Deny this principal.")
@click.option("--operation", "operations", multiple=True, required=True,
              type=click.Choice(_OPERATIONS, case_sensitive=False), help="An operation (repeatable).")
@click.option("--host", default="*", show_default=True, help="The client host the binding applies to.")
@_resource_options
@click.option("--resource-pattern-type", "pattern", type=click.Choice(["literal", "prefixed"]), default="literal",
              show_default=True, help="prefixed: every resource whose name starts with the given one.")
@client_options
def create_command(allow, deny, operations, host, topics, groups, transactional_ids, cluster, pattern,
                   connection) -> None:
    """Create ACLs: each principal, operation and resource given makes one binding."""
    resources = _resources(topics, groups, transactional_ids, cluster)
    if not resources:
        raise click.UsageError("name a resource: --topic, --group, --transactional-id or --cluster")
    if not allow and not deny:
        raise click.UsageError("name a principal: --allow-principal or --deny-principal")
    principals = [(p, Permission.ALLOW) for p in allow] + [(p, Permission.DENY) for p in deny]
    bindings = [binding_document(rtype, name, PatternType[pattern.upper()], principal, host, _operation(op), permission)
                for rtype, name in resources for principal, permission in principals for op in operations]
    with kafka_client(connection) as client:
        answer = client.call(30, creations=[{
            "resource_type": ResourceType[b["resource_type"]], "resource_name": b["resource_name"],
            "resource_pattern_type": PatternType[b["pattern_type"]], "principal": b["principal"], "host": b["host"],
            "operation": Operation[b["operation"]], "permission_type": Permission[b["permission"]]} for b in bindings])
    failed = [(b, r) for b, r in zip(bindings, answer.results) if r.error_code.value != 0]
    _print_bindings("created ACLs", [b for b, r in zip(bindings, answer.results) if r.error_code.value == 0])
    if failed:
        b, r = failed[0]
        check(r.error_code, f"{len(failed)} ACL(s) not created; {b['principal']} {b['operation']} on "
                            f"{b['resource_type']} {b['resource_name']}", r.error_message)


def _filter_options(command):
    for option in reversed((
            click.option("--principal", "principals", multiple=True, metavar="User:NAME",
                         help="Only this principal's bindings (repeatable)."),
            click.option("--operation", "operations", multiple=True,
                         type=click.Choice(_OPERATIONS, case_sensitive=False), help="Only this operation (repeatable)."),
            click.option("--permission", type=click.Choice(["any", "allow", "deny"]), default="any", show_default=True),
            click.option("--host", default=None, help="Only bindings for this host."),
            _resource_options,
            click.option("--resource-pattern-type", "pattern", default="any", show_default=True,
                         type=click.Choice(["any", "match", "literal", "prefixed"])))):
        command = option(command)
    return command


def _filters(principals, operations, permission, host, topics, groups, transactional_ids, cluster, pattern) -> list:
    """The filters of a list or delete: every resource with every principal and operation."""
    resources = _resources(topics, groups, transactional_ids, cluster) or [(ResourceType.ANY, None)]
    return [{"resource_type_filter": rtype, "resource_name_filter": name,
             "pattern_type_filter": PatternType[pattern.upper()], "principal_filter": principal, "host_filter": host,
             "operation": _operation(op) if op else Operation.ANY, "permission_type": Permission[permission.upper()]}
            for rtype, name in resources for principal in (principals or [None]) for op in (operations or [None])]


@acls_group.command("list")
@_filter_options
@format_option
@client_options
def list_command(principals, operations, permission, host, topics, groups, transactional_ids, cluster, pattern,
                 output_format, connection) -> None:
    """List the ACLs that match the filter (everything by default)."""
    bindings: list[dict] = []
    with kafka_client(connection) as client:
        for f in _filters(principals, operations, permission, host, topics, groups, transactional_ids, cluster,
                          pattern):
            answer = client.call(29, **f)
            check(answer.error_code, "DescribeAcls", answer.error_message)
            bindings += [binding_document(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                                          a.operation, a.permission_type) for r in answer.resources for a in r.acls]
    bindings = [dict(t) for t in dict.fromkeys(tuple(b.items()) for b in bindings)]  # filters may overlap
    emit(output_format, bindings, lambda: _print_bindings("ACLs", bindings))


@acls_group.command("delete")
@_filter_options
@format_option
@client_options
def delete_command(principals, operations, permission, host, topics, groups, transactional_ids, cluster, pattern,
                   output_format, connection) -> None:
    """Delete the ACLs that match the filter (it must name a resource or a principal)."""
    if not principals and not _resources(topics, groups, transactional_ids, cluster):
        raise click.UsageError("name a resource (--topic, --group, --transactional-id, --cluster) or a --principal: "
                               "an empty filter would delete every ACL")
    with kafka_client(connection) as client:
        answer = client.call(31, filters=_filters(principals, operations, permission, host, topics, groups,
                                                  transactional_ids, cluster, pattern))
    deleted = []
    for result in answer.filter_results:
        check(result.error_code, "DeleteAcls", result.error_message)
        for m in result.matching_acls:
            check(m.error_code, "DeleteAcls", m.error_message)
            deleted.append(binding_document(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                                            m.operation, m.permission_type))
    emit(output_format, deleted, lambda: _print_bindings("deleted ACLs", deleted))
