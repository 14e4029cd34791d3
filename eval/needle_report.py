"""`meetmem eval report`: the needle evaluation over a grid of generated meetings, as JSON, Markdown and plots.

For each (language, hours) a seeded needle meeting (`needles.generate`) is written under `OUT/meetings/`
and put through `needle_eval.evaluate`; then `OUT/report.json` holds every result, `OUT/report.md` the
side-by-side summary, and four PNG plots show how recall, prompt tokens and latency move with the
meeting's length. The Markdown and the plots are made from the results alone (`markdown`, `plot`), so a
saved `report.json` can be redrawn without evaluating again.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .needle_eval import DEFAULT_BUDGET, DEFAULT_K, evaluate
from .needles import generate

#: The drift layers the layer plot shows: retrieval, then the two summary levels.
PLOT_LAYERS = ("raw_retrieval", "l1", "l2")
PLOTS = {
    "recall_vs_length": "recall@k against meeting length, per method and language",
    "recall_by_layer": "share of questions whose expected value is in meetmem's citations, L1 and L2",
    "tokens_vs_length": "prompt tokens per question against meeting length, per method (log scale)",
    "latency": "meetmem ask latency p50 and p95 per meeting",
}


def meeting_label(result: dict[str, Any]) -> str:
    """A short name of one evaluated meeting, such as `en 0.5 h`."""
    m = result["meeting"]
    return f"{m['lang']} {m['hours']:g} h"


def evaluate_grid(out: Path, *, hours: Sequence[float], langs: Sequence[str], seed: int = 7, k: int = DEFAULT_K,
                  budget: int = DEFAULT_BUDGET, routes: Any = None,
                  progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Generate, write and evaluate one needle meeting per (language, hours), languages outermost.

    Each meeting goes to `out/meetings/<lang>-<hours>h/`; its database is temporary, so a report can be
    made again into the same folder. Returns the `evaluate` results in order, each with `meeting_folder`.
    """
    say = progress or (lambda _line: None)
    grid = [(lang, h) for lang in langs for h in hours]
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    for number, (lang, h) in enumerate(grid, start=1):
        label = f"{lang} {h:g} h"
        say(f"meeting {number}/{len(grid)}: {label} (seed {seed}), {time.perf_counter() - started:.1f} s elapsed")
        meeting = generate(h, lang=lang, seed=seed)
        folder = out / "meetings" / f"{lang}-{h:g}h"
        meeting.write(folder)
        with tempfile.TemporaryDirectory(prefix="meetmem-report-") as tmp:
            result = evaluate(meeting, db_path=Path(tmp) / "needles.db", routes=routes, k=k, budget=budget,
                              progress=(lambda line, label=label: say(f"  {label}: {line}")))
        results.append({"meeting_folder": str(folder), **result})
        say(f"meeting {number}/{len(grid)}: {label} done in {result['wall_s']:.1f} s, "
            f"{time.perf_counter() - started:.1f} s elapsed")
    return results


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _methods(results: Sequence[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for result in results:
        names += [row["method"] for row in result["by_method"] if row["method"] not in names]
    return names


def _by_method(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["method"]: row for row in result["by_method"]}


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]


def markdown(results: Sequence[dict[str, Any]], plots: Sequence[str] = ()) -> str:
    """The report as Markdown: method × meeting (recall@k and tokens per question), meetmem's exact answers,
    prefix reuse and latency, recall per drift layer, recall per needle kind, and the plots' images."""
    if not results:
        return "# Needle evaluation report\n\nNo meetings were evaluated.\n"
    k = results[0]["config"]["k"]
    labels = [meeting_label(r) for r in results]
    config = results[0]["config"]
    out = ["# Needle evaluation report", "",
           f"k = {k}, prompt budget {config['budget']} tokens, search {config['search']}, "
           f"seed {results[0]['meeting']['seed']}, {len(results)} meetings.", "",
           f"## Recall@{k} and tokens per question", "",
           "Each cell: recall@k / mean prompt tokens per question.", ""]
    rows = []
    for method in _methods(results):
        cells = []
        for result in results:
            row = _by_method(result).get(method)
            if row is None:
                cells.append("—")
                continue
            tokens = row["tokens_per_question"]
            cells.append(f"{_num(row['recall_at_k'])} / {'n/a' if tokens is None else f'{tokens:,.0f}'}")
        rows.append([method, *cells])
    out += _table(["method", *labels], rows)

    out += ["", "## meetmem: exact answers, prefix reuse, latency", ""]
    rows = []
    for label, result in zip(labels, results, strict=True):
        m, mm = result["meeting"], result["methods"]["meetmem"]
        lat = mm["ask_latency"]
        rows.append([label, str(m["segments"]), str(m["questions"]), f"{m['transcript_tokens']:,}",
                     _num(mm["recall_at_k"]), _num(mm["exact_answer_rate"]),
                     _num(mm["prompt_tokens"]["mean"], 0), _num(mm["prefix_reuse"]["mean"]),
                     _num(lat.get("p50_ms"), 1), _num(lat.get("p95_ms"), 1)])
    out += _table(["meeting", "segments", "questions", "transcript tokens", f"recall@{k}", "exact answers",
                   "prompt tokens", "prefix reuse", "ask p50 ms", "ask p95 ms"], rows)

    out += ["", "## Recall per layer", "",
            "Share of questions whose expected value is in meetmem's first k citations (raw_retrieval), "
            "in an L1 or L2 summary line, and anywhere in the log (the ceiling).", ""]
    layers = ("raw_retrieval", "l1", "l2", "raw_log")
    out += _table(["meeting", *layers], [[label, *(_num(r["drift"].get(layer)) for layer in layers)]
                                         for label, r in zip(labels, results, strict=True)])

    out += ["", f"## Recall@{k} per needle kind", ""]
    for label, result in zip(labels, results, strict=True):
        methods = [row["method"] for row in result["by_method"]]
        rows = [[kind, str(group["questions"]), *(_num(group["recall_at_k"].get(m)) for m in methods),
                 _num(group["exact_answer_rate"])]
                for kind, group in result["by_kind"].items()]
        out += ["", f"### {label}", ""]
        out += _table(["kind", "questions", *methods, "exact answers"], rows)

    if plots:
        out += ["", "## Plots", ""]
        out += [f"![{PLOTS.get(Path(name).stem, name)}]({name})" for name in plots]
    return "\n".join(out) + "\n"


def _value(value: Any) -> float:
    return math.nan if value is None else float(value)


def plot(results: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """Write the four PNG plots of `PLOTS` into `out`; returns their paths.

    matplotlib is imported here (the `eval` extra) and draws on the Agg canvas without pyplot, so no
    window or global backend is touched.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("the report's plots need matplotlib: pip install 'meetmem[eval]'") from exc

    out.mkdir(parents=True, exist_ok=True)
    methods = _methods(results)
    langs = list(dict.fromkeys(r["meeting"]["lang"] for r in results))
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
            mine = sorted((r for r in results if r["meeting"]["lang"] == lang), key=lambda r: r["meeting"]["hours"])
            hours = [r["meeting"]["hours"] for r in mine]
            for method in methods:
                ys = [_value(_by_method(r).get(method, {}).get(field)) for r in mine]
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

    fig = Figure(figsize=(max(6, 1.6 * len(results)), 4.5))
    ax = fig.add_subplot()
    width = 0.8 / len(PLOT_LAYERS)
    for j, layer in enumerate(PLOT_LAYERS):
        xs = [i + (j - (len(PLOT_LAYERS) - 1) / 2) * width for i in range(len(results))]
        ax.bar(xs, [_value(r["drift"].get(layer)) for r in results], width, label=layer)
    ax.set_xticks(range(len(results)), labels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of questions with the expected value")
    ax.set_title("recall per layer")
    ax.legend(fontsize="small")
    save(fig, "recall_by_layer")

    per_length("tokens_vs_length", "tokens_per_question", "prompt tokens per question", log=True)

    fig = Figure(figsize=(max(6, 1.6 * len(results)), 4.5))
    ax = fig.add_subplot()
    lat = [r["methods"]["meetmem"]["ask_latency"] for r in results]
    for j, key in enumerate(("p50_ms", "p95_ms")):
        ax.bar([i + (j - 0.5) * 0.4 for i in range(len(results))], [_value(x.get(key)) for x in lat], 0.4,
               label=key.removesuffix("_ms"))
    ax.set_xticks(range(len(results)), labels)
    ax.set_ylabel("meetmem ask latency (ms)")
    ax.set_title("ask latency")
    ax.legend(fontsize="small")
    save(fig, "latency")
    return paths


def write_report(out: Path, results: Sequence[dict[str, Any]], header: dict[str, Any] | None = None) -> list[Path]:
    """Write `report.json` (header plus every result), the plots and `report.md` into `out`; returns them."""
    out.mkdir(parents=True, exist_ok=True)
    report_json = out / "report.json"
    report_json.write_text(json.dumps({**(header or {}), "results": list(results)}, ensure_ascii=False, indent=1)
                           + "\n", encoding="utf-8")
    plots = plot(results, out) if results else []
    report_md = out / "report.md"
    report_md.write_text(markdown(results, [p.name for p in plots]), encoding="utf-8")
    return [report_json, report_md, *plots]
