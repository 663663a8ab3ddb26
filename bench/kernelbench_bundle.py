"""Write a KernelBench-style bundle of honest kernels for problems of a KernelBench checkout.

    python bench/kernelbench_bundle.py KERNELBENCH OUT_DIR --level 2 --problems 1-10 [--kind identity|copy]

Each kernel is the problem's own code plus a ModelNew: `identity` is the task's Model unchanged (pure
PyTorch, nothing to build); `copy` runs the task's forward and then copies the result through a CUDA
kernel of its own, built with load_inline under a name of its own (so each file is a separate build, as
in a real bundle). Files land in OUT_DIR/runs/<name>/level_L_problem_P_sample_0_kernel.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

IDENTITY = "\n\nclass ModelNew(Model):\n    pass\n"
COPY = '''

from torch.utils.cpp_extension import load_inline as _load_inline

_COPY_SOURCE = r"""
#include <torch/extension.h>

__global__ void copy_kernel(const float* __restrict__ src, float* __restrict__ dst, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) dst[i] = src[i];
}

torch::Tensor copy_out(torch::Tensor x) {
    auto src = x.contiguous();
    auto out = torch::empty_like(src);
    long long n = src.numel();
    int threads = 256;
    long long blocks = (n + threads - 1) / threads;
    if (blocks > 65535LL * 32) blocks = 65535LL * 32;
    copy_kernel<<<(unsigned int)blocks, threads>>>(src.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
_copy = _load_inline(
    name="kb_bundle_copy_{tag}",
    cpp_sources="torch::Tensor copy_out(torch::Tensor x);",
    cuda_sources=_COPY_SOURCE,
    functions=["copy_out"],
    verbose=False,
)


class ModelNew(Model):
    def forward(self, *args):
        return _copy.copy_out(super().forward(*args))
'''


def problem_files(checkout: Path, level: int) -> dict[int, Path]:
    files = {}
    for path in (checkout / "KernelBench" / f"level{level}").glob("*.py"):
        number = path.name.split("_", 1)[0]
        if number.isdigit():
            files[int(number)] = path
    return files


def numbers(text: str) -> list[int]:
    chosen = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        chosen += list(range(int(low), int(high or low) + 1))
    return chosen


def write_bundle(
    checkout: Path, out: Path, level: int, chosen: list[int], kind: str, name: str
) -> list[Path]:
    folder = out / "runs" / name
    folder.mkdir(parents=True, exist_ok=True)
    files = problem_files(checkout, level)
    written = []
    for number in chosen:
        source = files[number].read_text()
        extra = IDENTITY if kind == "identity" else COPY.replace("{tag}", f"l{level}_p{number}")
        path = folder / f"level_{level}_problem_{number}_sample_0_kernel.py"
        path.write_text(source + extra)
        written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kernelbench", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--problems", default="1-10")
    parser.add_argument("--kind", choices=("identity", "copy"), default="identity")
    parser.add_argument("--name", default="bundle")
    args = parser.parse_args()
    written = write_bundle(
        args.kernelbench, args.out, args.level, numbers(args.problems), args.kind, args.name
    )
    sys.stdout.write(f"{len(written)} kernels in {written[0].parent}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
