"""Shared test helpers: service checks and real worker processes."""
