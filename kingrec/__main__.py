"""``python -m kingrec`` runs the command line."""

from kingrec_cli.startup import run

run()
