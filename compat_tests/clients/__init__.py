"""Real clients and integrations against twinlog, as a user runs them."""
