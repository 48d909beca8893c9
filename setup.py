"""Build hook: the wheel carries what a checkout keeps beside ``src/`` (metadata lives in pyproject.toml).

``edgedepth/_bundled/`` in the wheel mirrors the repository's layout, so the same relative paths work from a checkout
and from an installed wheel (:mod:`edgedepth.resources`):

- ``recipes/*.py``                  the release recipes (``edgedepth release`` without ``--recipe``);
- ``benchmarks/results/*.json``     the committed measurement records the recipes embed (``parity_data``,
                                    ``latency_data``: resolved relative to the recipe file, as in the checkout);
- ``web/``                          the playground page and, from ``web/node_modules`` (installed by ``npm ci`` from
                                    web/package-lock.json before building), exactly the browser files the page loads:
                                    no npm at run time.

An sdist carries the same files at the same paths, so a wheel built from it is the same wheel.  Editable
installs read the checkout itself and bundle nothing.
"""

from __future__ import annotations

import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))

# (glob relative to the repository, required): a required pattern that matches nothing fails the build, so a wheel
# built without `npm ci --prefix web` cannot come out silently without its browser runtimes.
BUNDLE = [
    ("recipes/*.py", True),
    ("benchmarks/results/*.json", True),
    ("web/index.html", True), ("web/*.js", True), ("web/*.css", True), ("web/runtimes/*.js", True),
    # LiteRT.js (every wasm variant: the runtime picks one per browser)
    ("web/node_modules/@litertjs/core/package.json", True), ("web/node_modules/@litertjs/core/dist/**", True),
    ("web/node_modules/@litertjs/core/wasm/*", True),
    ("web/node_modules/@litertjs/wasm-utils/package.json", True),
    ("web/node_modules/@litertjs/wasm-utils/dist/**", True),
    # ONNX Runtime Web: the WebGPU + wasm build the page imports and the one wasm binary it loads
    ("web/node_modules/onnxruntime-web/package.json", True),
    ("web/node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs", True),
    ("web/node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.*", True),
    # transformers.js: its browser bundles and the wasm of the ONNX Runtime Web build it was made against
    ("web/node_modules/@huggingface/transformers/package.json", True),
    ("web/node_modules/@huggingface/transformers/LICENSE", True),
    ("web/node_modules/@huggingface/transformers/dist/transformers.js", True),
    ("web/node_modules/@huggingface/transformers/dist/transformers.min.js", True),
    ("web/node_modules/@huggingface/transformers/node_modules/onnxruntime-web/package.json", True),
    ("web/node_modules/@huggingface/transformers/node_modules/onnxruntime-web/dist/"
     "ort-wasm-simd-threaded.asyncify.*", True),
]


def bundled_files(root: str) -> list[str]:
    """Relative paths of every file to bundle, sorted; SystemExit naming a required pattern that matched nothing."""
    found: set[str] = set()
    for pattern, required in BUNDLE:
        hits = [p for p in glob.glob(os.path.join(root, pattern), recursive=True) if os.path.isfile(p)]
        if required and not hits:
            raise SystemExit(f"edgedepth build: nothing matches {pattern!r} under {root!r} "
                             "(run `make setup`, or `npm ci --prefix web --ignore-scripts`, before building)")
        found.update(os.path.relpath(p, root) for p in hits if not p.endswith(".map"))
    return sorted(found)


class BuildPy(build_py):
    """build_py + the bundle, copied into ``edgedepth/_bundled/`` of the build folder (not for editable installs)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = os.path.join(self.build_lib, "edgedepth", "_bundled")
        for rel in bundled_files(HERE):
            dest = os.path.join(target, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(HERE, rel), dest)


class Sdist(sdist):
    """sdist + the bundle's files at their repository paths, so building the wheel from the sdist needs no npm."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        for rel in bundled_files(HERE):
            dest = os.path.join(base_dir, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(HERE, rel), dest)


if __name__ == "__main__":      # setuptools' backend runs this file as __main__; tests import bundled_files()
    setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
