"""``python -m kingrec`` runs the command line."""

from kingrec_cli.main import run

run()
