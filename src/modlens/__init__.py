"""modlens: audit content-moderation models on real comments."""

__version__ = "0.1.0"
