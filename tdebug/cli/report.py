"""`tdebug report`: the --tdebug-json reports of a suite's shards (and pytest's JUnit XML files) merged into one
verdict, one table, one exit code."""

from __future__ import annotations

import json

import click

from ..runtime.files import write_output
from ..runtime.suite import ShardError, durations_lines, load_all
from .common import NothingChecked, output_file


@click.command("report")
@click.argument("reports", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--junit", "junit_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE.xml",
              help="A pytest JUnit XML file (--junitxml) of a shard (repeatable): setup and teardown errors, skips "
                   "and tests that ran without a tdebug record count too.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the merged report (verdict, counts, every test's record) as JSON.")
@click.option("--durations", type=click.IntRange(min=0), default=None, metavar="N",
              help="List the N tests whose Triton launches took longest (0: every test).")
def command(reports, junit_files, json_path, durations) -> None:
    """Merge the reports of `pytest --tdebug --tdebug-json SHARD.json` runs (the shards of one suite, split by
    -k, node ids or pytest-split's --splits/--group) into one verdict.

    A test reported by two shards, a missing file or a file that is not a tdebug report is a usage error.
    Exit 0 when every test that ran passed clean, 1 on findings or failures, 2 when nothing was checked,
    3 when tdebug could not check part of the suite (an internal error, tests that ran outside tdebug).
    """
    if not reports and not junit_files:
        raise click.UsageError("nothing to merge: give the shards' --tdebug-json reports (and --junit FILE.xml)")
    inputs = [*reports, *junit_files]
    json_file = output_file(json_path, "--json", inputs)
    try:
        merged = load_all(reports, junit_files)
        payload = merged.to_json()
    except ShardError as e:
        raise click.UsageError(str(e)) from None
    verdict = merged.verdict()
    click.echo(f"tdebug report: {len(reports)} shard report(s)"
               + (f", {len(junit_files)} JUnit file(s)" if junit_files else "")
               + f"; checks {payload['checks']}, "
               + ("every autotune config" if payload["config"] is None else f"autotune config #{payload['config']}"))
    for line in merged.table():
        click.echo(line)
    if durations is not None:
        click.echo("")
        for line in durations_lines(merged.tests.values(), durations) or ["(no test made a timed launch)"]:
            click.echo(line)
    if json_file:
        write_output(json_file, json.dumps(payload, indent=1), "--json", inputs)
        click.echo(f"wrote {json_path}")
    click.echo(f"verdict: {verdict.summary()}")
    if verdict.nothing_checked:
        raise NothingChecked("no test ran under tdebug in these reports: nothing was checked")
    raise SystemExit(verdict.exit_code)
