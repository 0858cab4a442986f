"""`tdebug viz` (not yet built)."""

import click


@click.command("viz")
def command() -> None:
    """Not yet built."""
    raise click.ClickException("tdebug viz is not built yet")
