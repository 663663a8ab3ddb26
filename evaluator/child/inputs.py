"""Inputs from seeds: the task's own get_inputs() under a seed, made on the device, in either process.

The candidate's process and the reference process draw every input set themselves from the seed the harness
names, with this code, so nothing but seeds crosses a process boundary: both get the same tensors, and the
reference's fingerprint of them tells whether the candidate's process drew what it was asked to.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import torch

Inputs = list[Any]


_generators: list[torch.Generator] = []  # what seed_everything seeds, bound before candidate code runs


def bind_generators(device: str) -> None:
    """Bind the default generators of the CPU and (on a GPU, initialising CUDA) of every CUDA device.

    Called before candidate code runs: torch.manual_seed looks up torch.cuda, torch.mps, torch.xpu and a
    custom backend's module at every call, so something a kernel planted there would run inside the harness,
    between drawing a call's inputs and timing it (work done there is never timed)."""
    found = [torch.default_generator]
    if device == "cuda":
        torch.cuda.init()
        found += list(torch.cuda.default_generators)
    _generators[:] = found


def seed_everything(seed: int) -> None:
    """What torch.manual_seed does to the CPU's and the CUDA devices' generators, through the bound ones."""
    if not _generators:  # outside the children (tests, benches): torch's own seeding, CUDA's included
        torch.manual_seed(seed)
        return
    for generator in _generators:
        generator.manual_seed(seed)


def kernelbench_trial_seeds(count: int, seed: int = 42) -> list[int]:
    """KernelBench's correctness seeds: manual_seed(42), then randint(0, 2**32 - 1) per trial."""
    generator = torch.Generator().manual_seed(seed)
    return [int(torch.randint(0, 2**32 - 1, (1,), generator=generator).item()) for _ in range(count)]


def cast(value: Any, device: str) -> Any:
    """Floating tensors to fp32 on the device; integer tensors keep their dtype (KernelBench PR #152)."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.is_floating_point():
        return value.to(device=device, dtype=torch.float32)
    return value.to(device)


SIGN_CHUNK = 1 << 24  # elements whose int8 signs a heavy-tailed draw holds at once (16 MiB)


def draw(distribution: str, values: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """values (contiguous, owning their memory) overwritten with signed (standard normal) or heavy-tailed
    (signed Pareto, alpha 3) draws.

    In place, the signs chunk by chunk: an input set costs nothing beyond its own size but 16 MiB.
    """
    if distribution == "signed":
        return values.normal_(generator=generator)
    if distribution == "heavy_tailed":
        values.uniform_(generator=generator).neg_().add_(1).pow_(-1 / 3).sub_(1)
        flat = values.view(-1)
        for start in range(0, flat.numel(), SIGN_CHUNK):
            part = flat[start : start + SIGN_CHUNK]
            sign = torch.randint(0, 2, part.shape, generator=generator, device=part.device, dtype=torch.int8)
            part.mul_(sign.mul_(2).sub_(1))
        return values
    raise ValueError(f"unknown input distribution {distribution!r}")


def own_storage(values: Inputs) -> list[bool]:
    """Which tensors are dense, own their memory and share it with no other input: safe to draw into."""
    storages = [v.untyped_storage().data_ptr() if isinstance(v, torch.Tensor) else None for v in values]
    sharing = collections.Counter(storages)
    return [
        isinstance(v, torch.Tensor) and v.is_contiguous() and v._base is None and sharing[storage] == 1
        for v, storage in zip(values, storages, strict=True)
    ]


def make_inputs(get_inputs: Callable[[], Any], seed: int, distribution: str, device: str) -> Inputs:
    """The task's get_inputs() after seeding, its factories on the device; other distributions redraw floats.

    get_inputs is the function itself, taken before any candidate code ran, never looked up on a module a
    candidate can reach.
    """
    seed_everything(seed)
    with torch.device(device):
        values = [cast(value, device) for value in get_inputs()]
    if distribution == "task":
        return values
    generator = torch.Generator(device=device).manual_seed(seed)
    owned = own_storage(values)
    with torch.no_grad():
        for index, value in enumerate(values):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                if not owned[index]:  # a view or an alias of another input: drawn into a tensor of its own
                    value = torch.empty(value.shape, dtype=value.dtype, device=value.device)
                values[index] = draw(distribution, value, generator)
    return values


def tensor_bytes(values: Inputs) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def init_inputs(get_init_inputs: Callable[[], Any], device: str) -> Inputs:
    """KernelBench's construction arguments: seed 42, get_init_inputs(), floats in fp32 on the device."""
    seed_everything(42)
    return [cast(value, device) for value in get_init_inputs()]


def build_model(model_class: type, arguments: Inputs, device: str) -> torch.nn.Module:
    """KernelBench's construction: seed 42, the class with the init inputs, then to the device in fp32."""
    seed_everything(42)
    model = model_class(*arguments)
    return model.to(device=device, dtype=torch.float32)
