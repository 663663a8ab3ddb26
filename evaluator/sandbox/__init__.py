"""Launching and confining sandboxed children: namespaces, a new root, Landlock, cgroups, limits, pipes.

`confine` runs first inside every child (standard library only); the rest runs in the harness process.
"""
