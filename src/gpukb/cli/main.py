"""The `gpukb` command line assembled: one Typer app over the commands, each in a module of its own (ask, sweep,
explain, list, lint, impact, validate, probe, schema) on the options and output helpers of cli/common.py."""

from __future__ import annotations

import typer

from .ask import ask
from .catalog import list_catalog
from .explain import explain_entry
from .impact import impact
from .lint import lint
from .probe import probe
from .schema import schema
from .sweep import sweep
from .usage import Group
from .validate import validate

app = typer.Typer(cls=Group, add_completion=False, no_args_is_help=True,
                  help="Which GPUs an LLM workload needs, what will hold it back, and what to do — with a trace.")
app.command()(ask)
app.command()(sweep)
app.command("explain")(explain_entry)
app.command("list")(list_catalog)
app.command()(lint)
app.command()(impact)
app.command()(validate)
app.command()(probe)
app.command()(schema)

if __name__ == "__main__":  # pragma: no cover
    app()
