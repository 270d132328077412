"""kingrec: the record format, validator and replay tools for King (Rıfkı)."""

__version__ = "0.1.0"
