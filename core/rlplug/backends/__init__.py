"""Shared building blocks per backend (imported only when that backend is built)."""
