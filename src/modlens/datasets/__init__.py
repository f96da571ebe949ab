"""Dataset readers for batch audits (one module per layout; registered in `registry.READERS`)."""
from modlens.datasets.base import Dataset, DatasetError, DatasetItem  # noqa: F401
