"""Reports from data: Markdown tables and PNG plots generated from validate/bench JSON (never typed by hand)."""

from __future__ import annotations
from ..fsutil import atomic_path


def _fmt(x, spec=".2e"):
    return "–" if x is None else format(x, spec)


def validate_markdown(report: dict) -> str:
    s = report["image_set"]
    lines = [f"Parity vs PyTorch ({report['reference'].get('name')}), {s['count']} images "
             f"(set {s['source']}, sha256 {s['sha256'][:12]}…)", "",
             "| artifact | backend | status | pooled rel-L2 | max rel-L2 | p95 rel-L2 | Pearson | AbsRel (aligned) | δ<1.25 | flags |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        status = r["status"] if r["status"] == "ok" else f"**{r['status']}**: {r['error']}"
        # the depth's row, then one per further output (Depth Anything 3's confidence: "file.tflite → confidence")
        for name, m in [(r["artifact"], r["metrics"] or {}),
                        *((f"{r['artifact']} → {role}", m) for role, m in r.get("output_metrics", {}).items())]:
            lines.append(f"| {name} | {r['backend']} | {status} | {_fmt(m.get('pooled_rel_l2'))} | "
                         f"{_fmt(m.get('max_rel_l2'))} | {_fmt(m.get('p95_rel_l2'))} | "
                         f"{_fmt(m.get('pearson'), '.6f')} | "
                         f"{_fmt(m.get('aligned_absrel'))} | {_fmt(m.get('aligned_delta1'), '.4f')} | "
                         f"{'; '.join(r['flags']) if name == r['artifact'] else ''} |")
    if report.get("worst"):
        lines += ["", *_worst_lines(report["worst"])]
    return "\n".join(lines)


def _worst_lines(worst: dict) -> list[str]:
    """The ``"worst"`` section (``verify.worst.worst_report``'s summary): per file its worst images (CPU) and the
    side-by-side picture of the worst one."""
    lines = ["Worst images (largest rel-L2 vs PyTorch, CPU); the picture shows the worst one beside PyTorch:", ""]
    for name, w in worst.items():
        images = ", ".join(f"`{i['image']}` {_fmt(i['rel_l2'])}" for i in w["worst"])
        lines.append(f"- {name}: {images or '–'} (picture: `{w['png']}`)")
    return lines


def bench_markdown(report: dict, baseline: str | None = None) -> str:
    v = report["variants"]
    names = list(v)
    base = baseline or names[0]
    m = report["method"]
    env = report["environment"]
    lines = [f"Latency, backend {report['backend']}, input {report['input_shape']}, {env.get('threads')} threads, "
             f"{env.get('cpu')}; {m['rounds']} interleaved rounds × ({m['warmup']} warm-up + {m['iters']} timed calls)",
             "", f"| variant | median ms | IQR ms | min ms | ÷ {base} | load s |", "|---|---|---|---|---|---|"]
    for n in names:
        s = v[n]
        lines.append(f"| {n} | {s['median_ms']:.1f} | {s['p25_ms']:.1f}–{s['p75_ms']:.1f} | {s['min_ms']:.1f} | "
                     f"{s['median_ms'] / v[base]['median_ms']:.3f} | {s['load_s']:.2f} |")
    return "\n".join(lines)


def latency_plot(report: dict, path: str, title: str | None = None) -> None:
    """Horizontal bars of median latency with IQR whiskers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    v = report["variants"]
    names = list(v)
    med = [v[n]["median_ms"] for n in names]
    lo = [v[n]["median_ms"] - v[n]["p25_ms"] for n in names]
    hi = [v[n]["p75_ms"] - v[n]["median_ms"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(names) + 1.4))
    ax.barh(names, med, xerr=[lo, hi], color="#4c72b0", capsize=4)
    for i, m in enumerate(med):
        ax.text(m, i, f" {m:.1f} ms", va="center", ha="left", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("median latency, ms (whiskers: IQR)")
    ax.set_title(title or f"{report['backend']} latency, input {report['input_shape']}")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def parity_plot(report: dict, path: str) -> None:
    """Histogram of per-image rel-L2 vs PyTorch (log bins), one series per artifact/backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = [r for r in report["results"] if r.get("per_image_rel_l2")]
    vals = [np.asarray(list(r["per_image_rel_l2"].values())) for r in rows]
    pos = np.concatenate([v[v > 0] for v in vals]) if vals else np.array([1e-7])
    lo, hi = np.log10(pos.min()) - 0.2, np.log10(pos.max()) + 0.2
    bins = np.logspace(lo, hi, 40)
    fig, ax = plt.subplots(figsize=(8, 4))
    for r, v in zip(rows, vals):
        ax.hist(np.clip(v, bins[0], None), bins=bins, alpha=0.6, label=f"{r['artifact']} [{r['backend']}]")
    ax.set_xscale("log")
    ax.set_xlabel("per-image relative L2 vs PyTorch")
    ax.set_ylabel("images")
    ax.set_title(f"Parity on {report['image_set']['count']} images")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
