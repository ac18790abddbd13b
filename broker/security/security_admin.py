"""The security stores the admin APIs change, gathered in one place (broker/api/security_service.py's
SecurityAdmin): the ACL store (None without --authorizer), and BrokerSecurity's SCRAM credentials,
delegation tokens and SASL mechanisms.

BrokerSecurity's stores are read at each call, not kept: a cluster member puts etcd's in place of
the data dir's (broker/cluster/member.py).
"""

from __future__ import annotations

from broker.security.acl.cluster_store import ClusterAclStore
from broker.security.acl.store import AclStore
from broker.security.authentication import BrokerSecurity
from broker.security.cluster_scram_credentials import ClusterScramCredentials
from broker.security.delegation_token_manager import DelegationTokenManager
from broker.security.sasl_credentials import ScramCredentialStore


class SecurityAdministration:
    def __init__(self, security: BrokerSecurity, acls: AclStore | ClusterAclStore | None) -> None:
        self._security = security
        self._acls = acls

    @property
    def acls(self) -> AclStore | ClusterAclStore | None:
        return self._acls

    @property
    def scram(self) -> ScramCredentialStore | ClusterScramCredentials:
        return self._security.scram

    @property
    def tokens(self) -> DelegationTokenManager:
        return self._security.tokens

    @property
    def enabled_mechanisms(self) -> tuple[str, ...]:
        return self._security.enabled_mechanisms
