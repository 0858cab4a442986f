#!/usr/bin/env python3
"""The README's performance table (Markdown) from a `tdebug bench --json` results file.

Usage: python scripts/perf_table.py results/bench-h100.json [-o results/bench-h100.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tdebug.bench.report import markdown  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a JSON file written by tdebug bench --json")
    parser.add_argument("-o", "--output", help="write the table here (default: standard output)")
    args = parser.parse_args(argv)
    try:
        report = json.loads(Path(args.results).read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"perf_table: cannot read {args.results}: {e}", file=sys.stderr)
        return 2
    if not isinstance(report, dict) or "results" not in report:
        print(f"perf_table: {args.results} is not a tdebug bench results file", file=sys.stderr)
        return 2
    text = markdown(report)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
