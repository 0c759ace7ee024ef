"""surfaces."""
