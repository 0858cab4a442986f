"""`tdebug bench` (not yet built)."""

import click


@click.command("bench")
def command() -> None:
    """Not yet built."""
    raise click.ClickException("tdebug bench is not built yet")
