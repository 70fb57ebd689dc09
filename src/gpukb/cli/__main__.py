"""`python -m gpukb.cli`: the `gpukb` command without its installed script."""

from .main import app

app()
