"""The runtime: where batches run (executors, Dask workers), progress, and the compilation cache
(docs/architecture.md, "Rooms")."""
