"""SASL, TLS, ACLs and delegation tokens, on one broker and on clusters."""
