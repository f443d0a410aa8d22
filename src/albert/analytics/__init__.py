"""Product analytics: one typed event catalog, batched delivery after the response.

Nothing is re-exported here: with analytics off (no key, no log file) a chat object
imports the service alone, never the catalog (albert.analytics.event_catalog) or the sinks.
"""
