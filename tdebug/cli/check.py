"""`tdebug check` (not yet built)."""

import click


@click.command("check")
def command() -> None:
    """Not yet built."""
    raise click.ClickException("tdebug check is not built yet")
