"""The ``kingrec`` command line (installed as ``kingrec_cli``)."""
