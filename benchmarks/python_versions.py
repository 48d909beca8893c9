"""Which Python versions the pinned stack installs on: pip's resolver, per version, over requirements.txt with every
transitive pin of constraints.txt, binary wheels only, nothing installed (``pip install --dry-run --python-version``).

    .venv/bin/python benchmarks/python_versions.py [--versions 3.10,...,3.14] [--platforms macosx_14_0_arm64,...]
        [--out results/python_versions.json]

For other operating systems and CPUs (``--platform``, Python 3.11): which direct pins have no wheel there, each pin
checked alone (pip evaluates markers for the machine it runs on, so a full resolve for another OS would mislead).  pyproject.toml's Requires-Python is the widest range that resolves here (tests/test_packaging.py checks the two agree).
Two adjustments, both stated in the record: torch's local ``+cpu`` tag is dropped (the CPU wheel on these machines'
disk is cp311 only; the registry's torch==2.13.0 is the same release), and antlr4-python3-runtime 4.9.3 (omegaconf's
dependency, published as an sdist only) is given as a pure-Python wheel built from that sdist, since a resolver for
another Python version takes binary wheels only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _pip(*args, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout)


def _reason(stderr: str) -> str:
    """The resolver's own words for why a version failed: the lines under "The conflict is caused by:", else its
    first error line (absolute paths dropped)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip() and not l.startswith("WARNING: Location")]
    at = next((i for i, l in enumerate(lines) if l.startswith("The conflict is caused by")), None)
    caused = []
    for l in lines[at + 1:] if at is not None else []:
        if l.startswith(("To fix", "ERROR", "Additionally")):
            break
        caused.append(l)
    errors = [l for l in lines if l.startswith("ERROR:")]
    pins = [re.search(r"requested (?:\(constraint\) )?(\S+)==(\S+)", l) for l in caused]
    ignored = next((l for l in lines if "require a different python version" in l), "")
    if caused and all(pins):        # only the pins themselves: that release does not take this Python
        name, version = pins[0].groups()
        need = re.search(rf"(?:^|[:;] ){re.escape(version)} (Requires-Python [^;]+)", ignored)
        caused = [f"{name}=={version} has no wheel for this Python and platform"
                  + (f" ({need.group(1)})" if need else "")]
    text = "; ".join(caused) or (errors[0] if errors else lines[-1] if lines else "?")
    return text.replace(ROOT + os.sep, "")


def _wheels_for(plat: str, tmp: str) -> dict:
    """Which of requirements.txt's direct pins have a binary wheel for Python 3.11 on ``plat`` (each alone, no
    dependencies: pip evaluates environment markers for the machine it runs on, not for ``--platform``, so a full
    resolve for another OS would follow Linux-only markers)."""
    missing = []
    for line in open(os.path.join(ROOT, "requirements.txt")):
        pin = line.split("#")[0].strip()
        if not pin:
            continue
        r = _pip("install", "--dry-run", "--no-deps", "--ignore-installed", "--target", os.path.join(tmp, "w"),
                 "--python-version", "3.11", "--platform", plat, "--only-binary=:all:", pin)
        if r.returncode:
            missing.append(pin)
    print(f"{plat}: no wheel for {', '.join(missing) or 'none'}", flush=True)
    return {"platform": plat, "python": "3.11", "direct_pins_without_a_wheel": missing}


def main(argv=None) -> int:
    from edgedepth.fsutil import write_bytes_atomic

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", default="3.10,3.11,3.12,3.13,3.14")
    ap.add_argument("--platforms", default="macosx_14_0_arm64,win_amd64,manylinux_2_28_aarch64",
                    help="other operating systems / CPUs, each resolved for Python 3.11 (the tested one)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "python_versions.json"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        constraints = os.path.join(tmp, "constraints.txt")
        with open(os.path.join(ROOT, "constraints.txt")) as f:
            text = re.sub(r"^torch==([0-9.]+)\+cpu$", r"torch==\1", f.read(), flags=re.M)
        with open(constraints, "w") as f:
            f.write(text)
        wheels = os.path.join(tmp, "wheels")
        antlr = re.search(r"^antlr4-python3-runtime==(\S+)$", text, re.M).group(1)
        r = _pip("wheel", "-q", "--no-deps", f"antlr4-python3-runtime=={antlr}", "-w", wheels)
        if r.returncode:
            raise SystemExit(f"cannot build the antlr4-python3-runtime wheel: {_reason(r.stderr)}")
        def resolve(key: dict, *target) -> dict:
            r = _pip("install", "--dry-run", "--ignore-installed", "--target", os.path.join(tmp, "t"), *target,
                     "--only-binary=:all:", "--find-links", wheels,
                     "-r", os.path.join(ROOT, "requirements.txt"), "-c", constraints)
            would = next((l for l in r.stdout.splitlines() if l.startswith("Would install")), "")
            row = {**key, "resolves": r.returncode == 0, "packages": len(would.split()) - 2 if would else 0,
                   **({} if r.returncode == 0 else {"why_not": _reason(r.stdout + "\n" + r.stderr)})}
            print(f"{key}: {'resolves' if r.returncode == 0 else 'no: ' + row['why_not']}", flush=True)
            return row

        rows = [resolve({"python": v}, "--python-version", v) for v in args.versions.split(",")]
        platforms = [_wheels_for(p, tmp) for p in args.platforms.split(",") if p]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    record = {"what": "Python versions the pinned stack (requirements.txt + constraints.txt) resolves on, binary wheels",
              "method": "pip install --dry-run --python-version V --only-binary=:all: -r requirements.txt "
                        "-c constraints.txt (torch's +cpu tag dropped; antlr4-python3-runtime as a wheel built "
                        "from its sdist); a resolve, not a test run: CI tests Python 3.11 only",
              "date": datetime.date.today().isoformat(), "commit": commit,
              "machine": platform.machine(), "pip": _pip("--version").stdout.split()[1], "rows": rows,
              "platforms": platforms}
    write_bytes_atomic(args.out, (json.dumps(record, indent=2) + "\n").encode())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
