"""Benchmark problems in KernelBench format: the built-in suite, the registry and importers."""
