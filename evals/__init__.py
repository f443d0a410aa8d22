"""Grounding evaluation: a question set with expected tool calls, a runner and a scorer."""
