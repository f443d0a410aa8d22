"""Vault records: the one normalised shape every processor produces."""
