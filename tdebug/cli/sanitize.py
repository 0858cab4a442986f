"""`tdebug sanitize` (not yet built)."""

import click


@click.command("sanitize")
def command() -> None:
    """Not yet built."""
    raise click.ClickException("tdebug sanitize is not built yet")
