"""What a benchmark report says about the machine it ran on: the CPU's model name and the installed package versions."""

from __future__ import annotations

import importlib.metadata
import platform


def cpu_name() -> str:
    """/proc/cpuinfo's model name (else what platform knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions(packages) -> dict[str, str | None]:
    """{package: installed version, or None when it is not installed}."""
    out = {}
    for p in packages:
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            out[p] = None
    return out
