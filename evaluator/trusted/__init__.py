"""The trusted harness process: drives the sandboxed children, relays their data, judges what they report.

Nothing here imports candidate code or torch: the reference process computes expected outputs and times the
baselines, the candidate process runs the kernel, and this process only orchestrates and decides.
"""
