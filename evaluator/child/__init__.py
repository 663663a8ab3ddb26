"""Code that runs inside sandboxed children: the candidate process and the reference (baseline) process.

Both regenerate their inputs from seeds the harness sends, time with the same loop and report over the
harness's pipes; the reference process never imports candidate code, so its outputs, samples and
fingerprints are the trusted values every candidate call is checked against.
"""
