"""The model: the two-layer network, its activations and losses, initialisation schemes, and the
data layouts of its two contractions (docs/architecture.md, "Rooms")."""
