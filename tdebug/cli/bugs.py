"""`tdebug bugs` (not yet built)."""

import click


@click.command("bugs")
def command() -> None:
    """Not yet built."""
    raise click.ClickException("tdebug bugs is not built yet")
