"""Generators of the documentation site's reference pages (run by docgen/hooks.py at build time)."""
