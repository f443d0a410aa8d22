"""Client identity: signed session tokens and the tenants they belong to."""
