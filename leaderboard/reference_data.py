"""Reference data every database needs: KernelBench, its levels, metrics, evaluation targets, data version.

Written by migration 0003 and again after every `migrate` or `flush` (a post_migrate handler), so a test
that empties the database gets it back without serialized rollbacks.
"""

import secrets

from django.apps import apps as django_apps

LEVELS = [
    (
        1,
        "Level 1: single operators",
        100,
        "Single operators: matmul variants, activations, norms, pooling, reductions, convolutions, losses.",
    ),
    (2, "Level 2: fusions", 100, "Fusion chains of several operators, e.g. Gemm + Multiply + LeakyReLU."),
    (3, "Level 3: full architectures", 50, "Whole models: MLPs, ResNet, VGG, ViT, RNNs, minGPT, Mamba2."),
]

# id, name, short name, unit, direction, aggregation, threshold op, p, denominator, description
METRICS = [
    (
        "fast_1",
        "Fast1",
        "Fast1",
        "%",
        "higher",
        "rate",
        ">",
        1.0,
        "all_tasks",
        "Share of tasks (or samples) that are correct and faster than the baseline.",
    ),
    (
        "fast_1_2",
        "Fast1.2",
        "Fast1.2",
        "%",
        "higher",
        "rate",
        ">",
        1.2,
        "all_tasks",
        "Share correct and more than 1.2x faster than the baseline.",
    ),
    (
        "fast_1_5",
        "Fast1.5",
        "Fast1.5",
        "%",
        "higher",
        "rate",
        ">",
        1.5,
        "all_tasks",
        "Share correct and more than 1.5x faster than the baseline.",
    ),
    (
        "fast_2",
        "Fast2",
        "Fast2",
        "%",
        "higher",
        "rate",
        ">",
        2.0,
        "all_tasks",
        "Share correct and more than 2x faster than the baseline.",
    ),
    (
        "correct_rate",
        "Correct rate",
        "Correct",
        "%",
        "higher",
        "rate",
        "",
        None,
        "all_tasks",
        "Share of tasks with a correct kernel (fast_0).",
    ),
    (
        "success_rate",
        "Success rate",
        "Success",
        "fraction",
        "higher",
        "rate",
        "",
        None,
        "all_tasks",
        "Share of tasks for which the system eventually produced a correct kernel (best-of, 0-1).",
    ),
    (
        "speedup_mean",
        "Mean speedup",
        "Mean ×",
        "×",
        "higher",
        "arithmetic",
        "",
        None,
        "correct_only",
        "Mean speedup over correct kernels; some sources give a geomean here, marked G per value.",
    ),
    (
        "speedup_geomean",
        "Geomean speedup",
        "Geomean ×",
        "×",
        "higher",
        "geometric",
        "",
        None,
        "correct_only",
        "Geometric-mean speedup over correct kernels (KernelBench's convention).",
    ),
    (
        "speedup_geomean_all",
        "Penalised geomean speedup",
        "Geomean all ×",
        "×",
        "higher",
        "geometric",
        "",
        None,
        "all_tasks",
        "Geometric-mean speedup over all tasks, an incorrect or missing kernel counting as 1x.",
    ),
    (
        "speedup_median",
        "Median speedup",
        "Median ×",
        "×",
        "higher",
        "median",
        "",
        None,
        "correct_only",
        "Median speedup over correct kernels.",
    ),
    (
        "speedup_min",
        "Min speedup",
        "Min ×",
        "×",
        "neutral",
        "min",
        "",
        None,
        "correct_only",
        "Smallest speedup among correct kernels.",
    ),
    (
        "speedup_max",
        "Max speedup",
        "Max ×",
        "×",
        "neutral",
        "max",
        "",
        None,
        "correct_only",
        "Largest speedup among correct kernels.",
    ),
    (
        "pct_faster",
        "% faster",
        "% faster",
        "%",
        "higher",
        "rate",
        "",
        None,
        "correct_only",
        "Share of correct kernels faster than the baseline.",
    ),
    (
        "pct_slower",
        "% slower",
        "% slower",
        "%",
        "lower",
        "rate",
        "",
        None,
        "correct_only",
        "Share of correct kernels slower than the baseline.",
    ),
]


CPU_HARDWARE = "CPU"
"""The CPU-only target (the embedded default's harness): the one target that may lack a queue ('cpu' then)."""

# Evaluation targets and the RQ queue that serves each; CPU is the embedded default's CPU-only harness.
HARDWARE_QUEUES = [
    (CPU_HARDWARE, "", "cpu"),
    ("H100", "NVIDIA", "gpu-h100"),
    ("H200", "NVIDIA", "gpu-h200"),
    ("L40S", "NVIDIA", "gpu-l40s"),
    ("A100", "NVIDIA", "gpu-a100"),
]


def ensure_hardware_targets(apps=django_apps) -> None:
    """Each evaluation target exists with its queue (a queue an admin changed is kept)."""
    Hardware = apps.get_model("leaderboard", "Hardware")
    for name, vendor, queue in HARDWARE_QUEUES:
        hardware, _ = Hardware.objects.get_or_create(name=name, defaults={"vendor": vendor})
        if not hardware.queue:
            hardware.queue = queue
            hardware.save(update_fields=["queue"])


def ensure_reference_data(apps=django_apps) -> None:
    """Create or update the benchmark, its levels and the metric catalogue (idempotent)."""
    Benchmark = apps.get_model("leaderboard", "Benchmark")
    Level = apps.get_model("leaderboard", "Level")
    Metric = apps.get_model("leaderboard", "Metric")
    benchmark, _ = Benchmark.objects.update_or_create(
        slug="kernelbench",
        defaults={
            "name": "KernelBench",
            "version": "v0.1",
            "url": "https://github.com/ScalingIntelligence/KernelBench",
        },
    )
    for number, name, task_count, description in LEVELS:
        Level.objects.update_or_create(
            benchmark=benchmark,
            number=number,
            defaults={"name": name, "task_count": task_count, "description": description},
        )
    for position, row in enumerate(METRICS):
        metric_id, name, short, unit, direction, aggregation, op, p, denominator, description = row
        Metric.objects.update_or_create(
            id=metric_id,
            defaults={
                "name": name,
                "short_name": short,
                "unit": unit,
                "direction": direction,
                "aggregation": aggregation,
                "threshold_op": op,
                "threshold": p,
                "denominator": denominator,
                "description": description,
                "position": position,
            },
        )
    ensure_hardware_targets(apps)
    ensure_data_version(apps)


def ensure_data_version(apps=django_apps) -> None:
    """The data-version row exists (at a random start, so a recreated database matches no old cache)."""
    try:
        DataVersion = apps.get_model("leaderboard", "DataVersion")
    except LookupError:
        return  # a migration before the model exists
    DataVersion.objects.get_or_create(pk=1, defaults={"value": secrets.randbits(62)})
