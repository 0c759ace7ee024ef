"""The package version: one place, read by the package, the command line and the build."""

__version__ = "0.1.0"
