"""`twinlog serve`'s authorizer settings, checked together (the options are declared in the
settings table, table.py), named after Kafka's settings:

    authorizer.class.name=...StandardAuthorizer    --authorizer (off by default: no ACL is checked,
                                                   and the ACL APIs answer SECURITY_DISABLED)
    super.users=User:admin;User:ops                --super-users 'User:admin;User:ops'
    allow.everyone.if.no.acl.found=true            --allow-everyone-if-no-acl-found

ACLs live in <data-dir>/acls.json (broker/security/acl/store.py), or in etcd on a cluster member
(broker/security/acl/cluster_store.py): every broker of a cluster should be started with the same flags.
"""

from __future__ import annotations

import click

from broker.security.acl.authorizer import AuthorizerSettings

def authorizer_settings(options: dict) -> AuthorizerSettings | None:
    """Takes this file's options out of `options` (serve's keyword arguments); None: no authorizer.
    Raises click.UsageError for a combination it cannot serve."""
    enabled = options.pop("authorizer")
    super_users = frozenset(p.strip() for p in options.pop("super_users").split(";") if p.strip())
    allow_everyone = options.pop("allow_everyone_if_no_acl_found")
    if not enabled:
        if super_users or allow_everyone:
            raise click.UsageError("--super-users and --allow-everyone-if-no-acl-found need --authorizer")
        return None
    bad = sorted(p for p in super_users if not p.startswith("User:") or p == "User:")
    if bad:
        raise click.UsageError(f"--super-users: {bad} are not principals like User:name")
    return AuthorizerSettings(super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone)
