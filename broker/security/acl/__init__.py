"""Kafka's authorizer: the ACL model, the decision, where ACLs are kept, and the
one-line checks the handlers make."""
