"""encbench: measure what encryption costs a database."""

__version__ = "0.1.0"
