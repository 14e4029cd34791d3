"""The PNG plots of `meetmem eval report`, drawn from the saved results alone.

matplotlib is imported inside `plot` (the `eval` extra) and draws on the Agg canvas without pyplot, so no
window or global backend is touched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .evaluation import DEFAULT_K
from .report_md import by_method, meeting_label, methods_of

#: The bars of the layer plot: what each layer keeps, then what answering from it alone finds.
PLOT_LAYERS = ("raw_retrieval", "l1", "l2", "l1_answer", "l2_answer")
PLOTS = {
    "recall_vs_length": "recall@k against meeting length, per method and language (text meetings without noise)",
    "recall_by_layer": "share of questions whose expected value is in meetmem's citations, in L1 and L2, and in "
                       "the first k lines found in L1 or L2 alone",
    "tokens_vs_length": "prompt tokens per question against meeting length, per method (log scale)",
    "latency": "meetmem ask latency p50 and p95 per meeting",
}


def _value(value: Any) -> float:
    return math.nan if value is None else float(value)


def _layer(result: dict[str, Any], layer: str) -> Any:
    drift = result["drift"]
    return drift.get("answers", {}).get(layer) if layer.endswith("_answer") else drift.get(layer)


def plot(results: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """Write the four PNG plots of `PLOTS` into `out`; returns their paths."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("the report's plots need matplotlib: pip install 'meetmem[eval]'") from exc

    out.mkdir(parents=True, exist_ok=True)
    methods = methods_of(results)
    clean = [r for r in results if not r["meeting"].get("noise") and r["meeting"].get("source", "text") == "text"]
    langs = list(dict.fromkeys(r["meeting"]["lang"] for r in clean))
    labels = [meeting_label(r) for r in results]
    k = results[0]["config"]["k"] if results else DEFAULT_K
    paths: list[Path] = []

    def save(fig: Any, name: str) -> None:
        FigureCanvasAgg(fig)
        fig.tight_layout()
        path = out / f"{name}.png"
        fig.savefig(path, format="png", dpi=110)
        paths.append(path)

    def per_length(name: str, field: str, ylabel: str, log: bool) -> None:
        fig = Figure(figsize=(6 * max(1, len(langs)), 4.5))
        for i, lang in enumerate(langs, start=1):
            ax = fig.add_subplot(1, max(1, len(langs)), i)
            mine = sorted((r for r in clean if r["meeting"]["lang"] == lang), key=lambda r: r["meeting"]["hours"])
            hours = [r["meeting"]["hours"] for r in mine]
            for method in methods:
                ys = [_value(by_method(r).get(method, {}).get(field)) for r in mine]
                if all(math.isnan(y) for y in ys):
                    continue
                ax.plot(hours, ys, marker="o", label=method)
            ax.set_title(lang)
            ax.set_xlabel("meeting length (hours)")
            ax.set_ylabel(ylabel)
            if log:
                ax.set_yscale("log")
            else:
                ax.set_ylim(-0.02, 1.02)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        save(fig, name)

    per_length("recall_vs_length", "recall_at_k", f"recall@{k}", log=False)

    fig = Figure(figsize=(max(6, 1.8 * len(results)), 4.5))
    ax = fig.add_subplot()
    width = 0.8 / len(PLOT_LAYERS)
    for j, layer in enumerate(PLOT_LAYERS):
        xs = [i + (j - (len(PLOT_LAYERS) - 1) / 2) * width for i in range(len(results))]
        ax.bar(xs, [_value(_layer(r, layer)) for r in results], width, label=layer)
    ax.set_xticks(range(len(results)), labels, rotation=20, fontsize="small")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of questions with the expected value")
    ax.set_title("recall per layer")
    ax.legend(fontsize="small")
    save(fig, "recall_by_layer")

    per_length("tokens_vs_length", "tokens_per_question", "prompt tokens per question", log=True)

    fig = Figure(figsize=(max(6, 1.8 * len(results)), 4.5))
    ax = fig.add_subplot()
    lat = [r["methods"]["meetmem"]["ask_latency"] for r in results]
    for j, key in enumerate(("p50_ms", "p95_ms")):
        ax.bar([i + (j - 0.5) * 0.4 for i in range(len(results))], [_value(x.get(key)) for x in lat], 0.4,
               label=key.removesuffix("_ms"))
    ax.set_xticks(range(len(results)), labels, rotation=20, fontsize="small")
    ax.set_ylabel("meetmem ask latency (ms)")
    ax.set_title("ask latency")
    ax.legend(fontsize="small")
    save(fig, "latency")
    return paths
