"""The token search collection: schema, seed data and loader."""
