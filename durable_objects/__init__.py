"""Durable Object classes of the worker (thin platform glue over albert.chat)."""
