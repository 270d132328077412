"""Par analysis: what each seat could have guaranteed in a deal, and what each card cost.

``kingrec.analysis.par`` solves positions (``deal_par``), ``kingrec.analysis.review``
prices every card of a deal (``review_deal``); docs/ANALYSIS.md gives the definitions.
"""
