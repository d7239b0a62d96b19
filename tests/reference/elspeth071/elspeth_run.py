# `elspeth run -s SETTINGS --execute` without Typer's argument parsing
# (Debian's Typer 0.7 cannot build ELSPETH 0.7.1's CLI); calls the same function.
import sys
import typer
from elspeth.cli import run
try:
    run(settings=sys.argv[1], dry_run=False, execute=True, verbose=False, output_format="console")
except typer.Exit as e:
    sys.exit(getattr(e, "exit_code", 1))
