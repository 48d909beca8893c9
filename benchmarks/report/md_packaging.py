"""BENCHMARKS.md sections for where users get edgedepth and its files: the wheel (wheel_path.json), the Python versions
the pins resolve on (python_versions.json) and predict on a dynamic ONNX file (predict_dynamic.json)."""

from __future__ import annotations

from md_common import load


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def section_wheel(L: list[str]) -> None:
    r = load("wheel_path.json")
    if not r:
        return
    w = r["wheel"]
    L += ["## The wheel: what it carries, the newcomer path", "",
          f"`benchmarks/wheel_path.py`, one run on {r['cpu']} ({r['cores']} cores, Python {r['python']}, "
          f"{r['date']}, commit {r['commit']}). Method: {r['method']}", "",
          f"`{w['name']}`: {_mb(w['bytes'])} (sdist `{r['sdist']['name']}`: {_mb(r['sdist']['bytes'])}).", "",
          "| part | files | bytes | in the wheel (compressed) |", "|---|---|---|---|"]
    for p in w["parts"]:
        L.append(f"| {p['part']} | {p['files']} | {_mb(p['bytes'])} | {_mb(p['compressed_bytes'])} |")
    L += ["", "| step | seconds | exit |", "|---|---|---|"]
    for s in r["steps"]:
        L.append(f"| {s['step']} | {s['seconds']:.1f} | {s['exit']} |")
    serve = r["steps"][-1]
    L += ["", f"`publish --dry-run` listed {r['published_files']} files; `serve` answered the page "
          f"({serve['page_bytes']} bytes) and a LiteRT.js wasm ({_mb(serve['wasm_bytes'])}) from the wheel, with "
          + (f"these notes: {'; '.join(serve['notes'])}" if serve["notes"] else "no missing-runtime note") + ".", ""]


def section_python_versions(L: list[str]) -> None:
    r = load("python_versions.json")
    if not r:
        return
    L += ["## Python versions the pinned stack installs on", "",
          f"`benchmarks/python_versions.py` ({r['date']}, pip {r['pip']}, commit {r['commit']}). Method: "
          f"{r['method']}. pyproject.toml's Requires-Python is the resolving range (tests/test_packaging.py).", "",
          "| Python | resolves | packages | why not |", "|---|---|---|---|"]
    for row in r["rows"]:
        L.append(f"| {row['python']} | {'yes' if row['resolves'] else '**no**'} | {row['packages'] or '–'} | "
                 f"{row.get('why_not', '–')} |")
    if r.get("platforms"):
        L += ["", "Other operating systems and CPUs, Python 3.11: which direct pins of requirements.txt have no binary "
              "wheel there (each checked alone with `--platform`: pip evaluates dependency markers for the machine it "
              "runs on, so a full resolve for another OS is not trustworthy):", "",
              "| platform | pins without a wheel |", "|---|---|"]
        for row in r["platforms"]:
            L.append(f"| `{row['platform']}` | {', '.join(row['direct_pins_without_a_wheel']) or 'none'} |")
    L.append("")


def section_predict_dynamic(L: list[str]) -> None:
    r = load("predict_dynamic.json")
    if not r:
        return
    L += ["## predict on the dynamic ONNX file: each photo at upstream's size", "",
          f"`benchmarks/predict_dynamic.py` on release `{r['release']}` ({r['checkpoint']}, `onnx/model.onnx` "
          f"sha256 `{r['onnx_sha256'][:16]}…`), {r['cpu']}, {r['date']}, commit {r['commit']}. Method: "
          f"{r['method']}", "",
          "| photo | H×W | snippet's size | now: rel-L2 vs the card's snippet | at the recorded size | FP32 noise |",
          "|---|---|---|---|---|---|"]
    for row in r["rows"]:
        rec = "×".join(map(str, row["recorded_hxw"]))
        L.append(f"| {row['photo']} | {row['photo_hxw'][0]}×{row['photo_hxw'][1]} | "
                 f"{row['snippet_hxw'][0]}×{row['snippet_hxw'][1]} | {row['rel_l2_now']:.1e} | "
                 f"{row['rel_l2_fixed_size']:.3f} ({rec}) | {row['fp32_noise_rel_l2']:.1e} |")
    L.append("")


def section_finetune_formats(L: list[str]) -> None:
    r = load("finetune_formats.json")
    if not r:
        return
    L += ["## Your own checkpoint: every format it may come in", "",
          f"`benchmarks/finetune_formats.py`, {r['cpu']} ({r['cores']} cores), {r['date']}, commit {r['commit']}. "
          f"Method: {r['method']}.", ""]
    for b in r["bases"]:
        L += ["| base | format | file | load, first / warm s | same state dict | LiteRT FP32 file (SHA-256) | "
              "pooled rel-L2 vs PyTorch | PyTorch FP32 vs float64 |", "|---|---|---|---|---|---|---|---|"]
        for row in b["rows"]:
            L.append(f"| {b['base']} ({b['size']}) | {row['format']} | `{row['file_name']}` | "
                     f"{row['load_first_s']:.2f} / {row['load_warm_median_s']:.2f} | "
                     f"{'yes' if row['same_state_dict'] else '**no**'} | `{row['exported_sha256'][:12]}…` | "
                     f"{row['pooled_rel_l2']:.1e} | {row['pytorch_fp32_vs_float64']:.1e} |")
        L.append("")
        L.append(f"{b['base']}: the files exported from every format are "
                 + ("byte-identical." if b["byte_identical_files"] else "**not** byte-identical.") + "")
        L.append("")


def section_cluster_builds(L: list[str]) -> None:
    r = load("cluster_builds.json")
    if not r:
        return
    runs = {x["variant"]: x for x in r["runs"]}
    o = r["overhead"]
    L += ["## Release builds on a Ray cluster", "",
          f"`benchmarks/cluster_builds.py`, {r['cpu']} ({r['cores']} cores), {r['date']}, commit {r['commit']}. "
          f"Method: {r['method']}.", "",
          "| tiny family ({} jobs) | executor | nodes | wall s | jobs from the cache |".format(len(runs["serial"]["jobs"])),
          "|---|---|---|---|---|"]
    for name, what in (("serial", "one process, one job after another"), ("ray", "Ray, cold cache"),
                       ("ray_cached", "Ray, the same build again")):
        x = runs[name]
        L.append(f"| {what} | {x['executor']['executor']} | {x['executor']['nodes']} | {x['wall_s']:.1f} | "
                 f"{sum(j['cached'] for j in x['jobs'])} of {len(x['jobs'])} |")
    busy = {k: sum(j["seconds"] for j in runs[k]["jobs"]) for k in ("serial", "ray")}
    L += ["", f"Speed-up of two single-CPU nodes over one process: **{r['speedup_ray_vs_serial']:.2f}x**; the cached "
          f"re-run takes {r['cached_vs_cold']:.1%} of the cold one. The jobs themselves took {busy['ray']:.0f} s on "
          f"the two nodes against {busy['serial']:.0f} s in one process (two exports at once share this machine's "
          f"caches and memory; each worker imports the converters once), and {r['driver_s']:.0f} s of the serial run "
          "is the driver's (loading checkpoints, putting releases together, verifying). `tests/test_cluster.py` checks "
          "that a Ray build's files equal the serial goldens, also with a worker killed mid-job.", "",
          f"Ray's own overhead here: connecting a driver {o['connect_s']:.2f} s, an empty task's round trip "
          f"{o['empty_task_round_trip_ms']:.1f} ms, a task returning 1 / 16 / 64 MB {o['return_1mb_ms']:.0f} / "
          f"{o['return_16mb_ms']:.0f} / {o['return_64mb_ms']:.0f} ms (a job's files come back this way).", "",
          f"Projected wall time of the same graph on more workers ({r['simulation_note']}):", "",
          "| workers | projected wall s | its critical path (longest job + driver) s |", "|---|---|---|"]
    for s in r["simulation"]:
        L.append(f"| {s['workers']} | {s['projected_wall_s']:.1f} | {s['critical_path_s']:.1f} |")
    L.append("")


def section_job_costs(L: list[str]) -> None:
    r = load("job_costs.json")
    if not r or r.get("tiny"):
        return
    z = r["zoo"]
    L += ["### What each job costs, and the whole zoo on more workers", "",
          f"`benchmarks/job_costs.py`, {r['cpu']} ({r['cores']} cores), {r['date']}, commit {r['commit']}. "
          f"Method: {r['method']}.", "",
          "| kind | job | CPU s | wall s | peak RSS GiB | declared GiB | files MB |", "|---|---|---|---|---|---|---|"]
    for x in r["rows"]:
        over = " (over)" if x["peak_rss_mb"] / 1024 > x["declared_memory_gib"] else ""
        job = x["job"] + (f" — **failed**: {x['failed']} (its cost until then)" if x.get("failed") else "")
        L.append(f"| {x['kind']} ({x['model']}) | {job} | {x['cpu_seconds']:.0f} | {x['seconds']:.0f} | "
                 f"{x['peak_rss_mb'] / 1024:.1f}{over} | {x['declared_memory_gib']:.1f} | {x['bytes'] / 1e6:.0f} |")
    w64 = next(w for w in z["workers"] if w["workers"] == 64)
    goal = "met" if w64["projected_wall_s"] <= 15 * 60 else "not met"
    if "critical_path_s" in z:      # jobs split per precision: the longest chain bounds the build
        bound = (f"Its longest chain of jobs, ending with {z['critical_path_ends_with']}, takes "
                 f"{z['critical_path_s'] / 60:.1f} min (the longest single job: {z['longest_job']}, "
                 f"{z['longest_job_s'] / 60:.1f} min)")
        split = ("A precision made from an FP32 file is a job of its own that starts once that file's job has "
                 "finished" + (f"; kinds measured before jobs were split count as one job of their measured cost "
                               f"(at least their chain's length: that job converted once and gated every file, "
                               f"computing PyTorch's outputs again for each): "
                               + ", ".join(" ".join(k[:3]).strip() for k in z["unsplit_kinds"])
                               if z.get("unsplit_kinds") else "") + ".")
    else:
        bound = f"The longest, {z.get('longest_job', '')}, takes {z['longest_job_s'] / 60:.1f} min"
        split = ("A job is one export with every precision derived from it; a job per precision would start from "
                 "the FP32 file and cut the longest path.")
    n = z.get("zoo_jobs", z["jobs"] + z.get("jobs_left_out", 0))
    L += ["", f"The whole zoo, both families, is {n} jobs; the {z['jobs']} the projection counts (a kind measured "
          f"unsplit: one job) take {z['job_seconds'] / 3600:.1f} CPU-hours. {bound}, so no number of workers builds "
          f"the zoo faster: projected on 64 workers **{w64['projected_wall_s'] / 60:.1f} min** (goal ≤ 15 min: "
          f"{goal}; a projection from the costs above, not a measurement, without the driver's own time). {split}",
          "", "| workers | projected wall min |", "|---|---|"]
    L += [f"| {w['workers']} | {w['projected_wall_s'] / 60:.1f} |" for w in z["workers"]]
    if z["unmeasured_kinds"]:
        L += ["", "Not measured (left out of the projection): "
              + ", ".join(" ".join(filter(None, k)) for k in z["unmeasured_kinds"]) + "."]
    L.append("")


def section_cluster_builds_small(L: list[str]) -> None:
    r = load("cluster_builds_small.json")
    if not r:
        return
    runs = {x["variant"]: x for x in r["runs"]}
    s, ray, added = runs["serial"], runs["ray"], runs["serial_size_added"]
    L += ["### The full V2 Small release", "",
          f"`benchmarks/cluster_builds.py --release small`, {r['cpu']} ({r['cores']} cores), {r['date']}, commit "
          f"{r['commit']}. Method: {r['method']}.", "",
          "| build | executor | jobs built | wall s |", "|---|---|---|---|"]
    for what, x in (("cold, one size short", s), ("cold, one size short", ray),
                    ("the missing size added, same cache", added)):
        L.append(f"| {what} | {x['executor']['executor']} ({x['executor']['nodes']} node"
                 f"{'s' if x['executor']['nodes'] != 1 else ''}) | {sum(not j['cached'] for j in x['jobs'])} of "
                 f"{len(x['jobs'])} | {x['wall_s']:.0f} |")
    busy = {k: sum(j["seconds"] for j in x["jobs"]) for k, x in (("serial", s), ("ray", ray))}
    L += ["", f"Two single-CPU Ray nodes against one process: **{r['speedup_ray_vs_serial']:.2f}x**. The serial "
          f"process runs each job on both cores (PyTorch's and the converters' threads): its jobs took "
          f"{busy['serial']:.0f} s, the same jobs on single-CPU workers {busy['ray']:.0f} s, so two such nodes can "
          f"do at most {2 * busy['serial'] / busy['ray']:.2f}x here, whatever the scheduling. Adding a size to a "
          f"cached release built {', '.join(r['size_added_jobs_built']) or 'nothing'} and took "
          f"**{r['size_added_vs_cold']:.0%}** of the cold build (goal ≤ 20 %).", ""]
