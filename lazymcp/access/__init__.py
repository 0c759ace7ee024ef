"""access."""
