"""The `tdebug` command line: one module per subcommand; each parses, calls the harness, renders, exits."""

from __future__ import annotations

import sys

import click


class TdebugGroup(click.Group):
    """A group whose user errors end with one line on stderr and exit code 2 (no usage block, no traceback)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            return super().main(args=args, prog_name=prog_name or "tdebug", complete_var=complete_var,
                                standalone_mode=False, **extra)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("tdebug: aborted", err=True)
            sys.exit(130)
        except click.ClickException as e:
            click.echo(f"tdebug: error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("tdebug: interrupted", err=True)
            sys.exit(130)


@click.group(cls=TdebugGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tdebug")
def cli() -> None:
    """tdebug: find out why a Triton kernel is wrong, crashes, or is slow.

    \b
    tdebug run FILE --mode interpret --break     step through a kernel on the CPU
    tdebug sanitize [FILE]                       out-of-bounds, races, uninitialised reads, unwritten outputs
    tdebug check --all                           every kernel against its reference on adversarial cases
    tdebug viz FILE --shape 129x127              who touched which element, as heatmaps
    tdebug bench --all                           GPU speed against cuBLAS/ATen
    tdebug bugs list                             exercises: kernels with one seeded bug each
    """


SUBCOMMANDS = ("run", "check", "sanitize", "viz", "bench", "bugs")  # tdebug/cli/<name>.py, each with `command`


def _get_command(ctx: click.Context, name: str) -> click.Command | None:
    """A subcommand's module is imported when it is asked for, so `tdebug sanitize` on a GPU starts its engines'
    processes at once instead of first importing torch for every subcommand (4.6 s on the H100)."""
    if name not in SUBCOMMANDS:
        return None
    import importlib

    return importlib.import_module(f".{name}", __name__).command


cli.get_command = _get_command  # type: ignore[method-assign]
cli.list_commands = lambda ctx: list(SUBCOMMANDS)  # type: ignore[method-assign]


def main() -> None:
    cli.main()
