"""Hostile input for kingrec: generators (``hostile``), the judge of one input (``judge``) and
the committed corpus they make (``make_corpus.py``); used by tests/test_fuzz.py,
tests/test_hostile.py and bench/fuzz.py."""
