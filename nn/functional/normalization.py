"""Placeholder: filled in by the nn work."""

__all__: list[str] = []
