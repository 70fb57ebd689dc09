"""The gpukb command line: one module per command over shared options and output helpers."""

from .main import app

__all__ = ["app"]
