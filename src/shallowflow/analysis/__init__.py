"""Measurements on recorded results: norms and directions, curves, fits (docs/architecture.md,
"Rooms")."""
