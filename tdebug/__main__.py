from tdebug.cli import main

main()
