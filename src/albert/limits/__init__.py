"""Rate limits: a client's own, kept in its object, and shared ones, kept per key.

- client_rates: RateLimiter, one client's rates inside its object (chat messages, MCP
  changes, frames); one object, one limiter, nothing shared.
- shared: the SharedLimiter port for limits across objects and requests, its wire to the
  limiter object, and InMemoryLimiter, the stand-in for one process. On Cloudflare the
  buckets live in one limiter Durable Object per key (albert.cloudflare.shared_limiter,
  durable_objects/limiter.py), where every worker instance sees the same count.
- new_sessions: new clients per address, checked by the router (addresses: the address
  a per-address limit counts, IPv6 by its /64).
- model_budget: model calls per tenant, counted around the model client.
- key_bucket: the bucket one limiter object keeps in its SQLite.
- token_bucket: the bucket arithmetic, on wall-clock milliseconds so a stored bucket
  refills across restarts.
"""
