"""Reported scores in: parsers for the almanac page formats and a plain CSV, and the idempotent writer."""
