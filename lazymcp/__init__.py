"""lazymcp."""
