"""Placeholder: filled in by the nn work."""
