"""The `tdebug` command line: one module per subcommand; each parses, calls the harness, renders, exits."""

from __future__ import annotations

import errno
import sys

import click

from .. import settings
from ..runtime import processes
from ..runtime.files import OutputError, WriteFailed
from . import signals


class TdebugGroup(click.Group):
    """A group whose errors end with one line on stderr (no usage block, no traceback): exit code 2 for a
    usage error, 3 for anything else that stopped tdebug (never 0 after an exception)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        processes.resume()
        try:
            try:
                settings.check_all()  # every TDEBUG_* variable, before any work (a bad one: exit 2)
            except settings.SettingError as e:
                raise click.UsageError(str(e)) from None
            return super().main(args=args, prog_name=prog_name or "tdebug", complete_var=complete_var,
                                standalone_mode=False, **extra)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.exceptions.Abort:  # Ctrl-C at a click prompt
            sys.exit(signals.stop(KeyboardInterrupt()))
        except click.exceptions.NoArgsIsHelpError as e:  # `tdebug`, `tdebug bugs`: the help, then one line
            click.echo(e.ctx.get_help())
            click.echo(f"tdebug: error: no command given ({e.ctx.command_path} --help lists them)", err=True)
            sys.exit(2)
        except OutputError as e:  # an output path found unsafe only when written (it changed meanwhile)
            click.echo(f"tdebug: error: {e}", err=True)
            sys.exit(2)
        except WriteFailed as e:  # a full disk, no descriptors left: the output named, exit 3
            click.echo(f"tdebug: error: {e}", err=True)
            sys.exit(3)
        except click.ClickException as e:
            click.echo(f"tdebug: error: {e.format_message()}", err=True)
            # UsageError (2), CouldNotRun (3) and the like say their own code; a bare ClickException is
            # something that stopped tdebug: 3, never 1 (findings) or 0.
            sys.exit(3 if type(e) is click.ClickException else e.exit_code)
        except (KeyboardInterrupt, _Stopped) as e:  # Ctrl-C or SIGTERM (signals.Terminated)
            sys.exit(signals.stop(e.interrupt if isinstance(e, _Stopped) else e))
        except Exception as e:  # noqa: BLE001 - a bug in tdebug: one line, exit 3
            if isinstance(e, OSError) and e.errno in RESOURCES:  # the machine's limits, not a bug of tdebug's
                where = f" ({e.filename})" if e.filename else ""
                click.echo(f"tdebug: error: could not do the job: {e.strerror or e}{where}", err=True)
                sys.exit(3)
            from ..interpreter.versions import triton_label

            click.echo(f"tdebug: internal error in tdebug ({triton_label()}): {type(e).__name__}: {e}", err=True)
            sys.exit(3)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:  # past click's own handler, which would print an empty line first
            raise _Stopped(e) from None


# OS errors that say the machine ran out of something (descriptors, disk, quota) or failed under tdebug (I/O)
RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.ENOMEM,
                       errno.EROFS})


class _Stopped(Exception):
    """Ctrl-C or SIGTERM on its way out of click."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__()
        self.interrupt = interrupt


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
    tdebug report SHARD.json...                  a sharded `pytest --tdebug` suite's reports as one verdict
    """


# tdebug/cli/<name>.py, each with `command`
SUBCOMMANDS = ("run", "check", "sanitize", "viz", "bench", "bugs", "report")


def _get_command(ctx: click.Context, name: str) -> click.Command | None:
    """A subcommand's module is imported when it is asked for, so `tdebug sanitize` on a GPU starts its engines'
    processes at once instead of first importing torch for every subcommand (4.6 s on the H100)."""
    if name not in SUBCOMMANDS:
        return None
    import importlib

    from .common import EXIT_CODES

    command = importlib.import_module(f".{name}", __name__).command
    command.epilog = EXIT_CODES
    return command


def _set_epilog() -> None:
    from .common import EXIT_CODES

    cli.epilog = EXIT_CODES + "\n\n\b\n" + settings.help_text()


_set_epilog()
cli.get_command = _get_command  # type: ignore[method-assign]
cli.list_commands = lambda ctx: list(SUBCOMMANDS)  # type: ignore[method-assign]


def main() -> None:
    signals.install()
    try:
        cli.main()
    except SystemExit as e:
        if signals.stopped():
            signals.leave(e.code if isinstance(e.code, int) else 1)
        raise
