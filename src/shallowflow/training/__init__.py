"""Training: from experiments to batches, the one training entry point, the certificates of a
trajectory and the checks before any work (docs/architecture.md, "Rooms")."""
