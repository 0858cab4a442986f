"""`python -m tdebug`: the command line."""

from tdebug.cli import main

main()
