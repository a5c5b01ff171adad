"""The package's version, in a module of its own: the catalog, the CLI and the build read it here."""

__version__ = "0.1.0"
