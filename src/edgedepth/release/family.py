"""A whole model family released as one job graph: every member that has a recipe, into ``OUT/<member>/``.

All members' jobs go to one executor at once (on a cluster, a Large export waits for a node with the memory it declares
while small jobs fill the others), each looked up in the build cache first; each member's folder is then put together
and swapped in like a single release, and verified.  ``synthetic``: build every member from its synthetic stand-in
("tiny": the tests' widths; "full": the real architecture with seeded weights), no download.
"""

from __future__ import annotations

import contextlib
import os

from .. import interrupt, models
from ..errors import EdgedepthError
from . import graph, manifest as mf, outdir
from .build import assemble, job_count, plan
from .recipe import load_recipe

STAND_INS = ("tiny", "full")


def family_named(name: str):
    """The :class:`models.base.ModelFamily` called ``name`` ("depth-anything-v2" or "depth_anything_v2")."""
    key = name.strip().lower().replace("-", "_")
    fam = next((f for f in models.FAMILIES if f.name == key), None)
    if fam is None:
        raise EdgedepthError(f"--family {name!r}: choose from "
                             f"{', '.join(f.name.replace('_', '-') for f in models.FAMILIES)}", option="family")
    return fam


def stand_in(fam, member, kind: str) -> str:
    """The synthetic stand-in of ``member`` of width ``kind`` ("tiny" or "full")."""
    names = [n for n, (m, _) in fam.synthetic.items() if m == member.name and ("tiny" in n) == (kind == "tiny")]
    if not names:
        raise EdgedepthError(f"{member.name} has no {kind} synthetic stand-in")
    return names[0]


def member_recipes(family: str, *, synthetic: str | None = None, **overrides) -> list[tuple[str, object]]:
    """(member name, its recipe with ``overrides`` applied: ``Recipe.with_overrides``) of every member of
    ``family`` (comma-separated: several families) that has a recipe, in the families' order."""
    from .. import resources

    out = []
    for fam, m in [(fam, m) for name in family.split(",") for fam in [family_named(name)] for m in fam.members.values()]:
        path = resources.path("recipes", os.path.basename(fam.recipe_file(m)))
        if not os.path.isfile(path):
            continue
        model = stand_in(fam, m, synthetic) if synthetic else None
        out.append((m.name, load_recipe(path).with_overrides(model=model, **overrides)))
    return out


def plans(recipes, *, gpu_check: bool, step) -> list:
    """Every member's :class:`build.Plan` (checkpoints loaded, jobs listed)."""
    return list(_plans(recipes, gpu_check=gpu_check, step=step))


def _plans(recipes, *, gpu_check: bool, step):
    for name, recipe in recipes:
        step(f"load {name}: {recipe.model}")
        yield plan(recipe, gpu_check=gpu_check, release=name, step=step)


def build_family(recipes, out: str, *, gpu_check: bool = True, executor, cache=None, step=lambda name: None,
                 jobs_progress=None, force: bool = False) -> tuple[list[dict], dict]:
    """Build every (member, recipe) of ``recipes`` into ``out/<member>/`` as one job graph; returns (each member's
    manifest, where and how the jobs ran).  Every member folder is replaced only when all of them are built.  Each
    member's jobs start as soon as its checkpoint is loaded, while the next one loads."""
    step = interrupt.checking(step)
    if os.path.isfile(os.path.join(out, mf.MANIFEST)):
        raise EdgedepthError(f"{out!r} is a release folder: a family goes into a folder of release folders")
    made = not os.path.lexists(out)
    try:
        with executor as ex, contextlib.ExitStack() as stack:
            ps = []

            def staged():
                for (name, _), p in zip(recipes, _plans(recipes, gpu_check=gpu_check, step=step)):
                    p.staging = stack.enter_context(outdir.staged(os.path.join(out, name), force=force))
                    ps.append(p)
                    yield p

            outputs, where = graph.run_graph(staged(), ex, cache, step, jobs_progress,
                                             total=sum(job_count(r) for _, r in recipes))
            manifests = [assemble(p, outs, step, where) for p, outs in zip(ps, outputs)]
    except BaseException:
        if made:
            with contextlib.suppress(OSError):      # only an empty folder this build made: never a user's file
                os.rmdir(out)
        raise
    return manifests, where


def verify_members(out: str, names: list[str]) -> dict[str, list[str]]:
    """``edgedepth verify`` of each member folder: {member: problems} (empty lists: all verified)."""
    return {n: mf.verify(os.path.join(out, n)) for n in names}
