"""The Markdown of `meetmem eval report`, made from the saved results alone (so `report.json` can be redrawn).

Sections: the targets the issue sets, checked; method × meeting (recall@k / tokens per question);
meetmem's exact answers, prompt cost, prefix reuse and latency; recall by how the question names the
subject (as said, or reworded); the drift per layer, as values kept and as answers from one layer alone;
the ledger's todos; recall per needle kind; the real corpora, when they were run; the plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..harness import num, table
from .scoring import LAYER_ANSWERS, LAYERS

#: What the issue asks of the harness's own figures: (what, meetings it applies to, floor).
RECALL_TARGETS = (
    ("recall@5 on a 4-hour English day from text", ("en", 4.0, "text"), 0.95),
    ("recall@5 on a 4-hour Chinese day from text", ("zh", 4.0, "text"), 0.95),
    ("recall@5 on an English meeting from audio", ("en", None, "audio"), 0.90),
)
#: Recall through L2 may fall this many points below raw retrieval on the facts L2 keeps.
L2_GAP_POINTS = 2.0


def meeting_label(result: dict[str, Any]) -> str:
    """A short name of one evaluated meeting: `en 0.5 h`, `en 1 h noise 0.1`, `en 0.5 h audio`."""
    m = result["meeting"]
    label = f"{m['lang']} {m['hours']:g} h"
    if m.get("noise"):
        label += f" noise {m['noise']:g}"
    if m.get("source", "text") != "text":
        label += f" {m['source']}"
    return label


def methods_of(results: Sequence[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for result in results:
        names += [row["method"] for row in result["by_method"] if row["method"] not in names]
    return names


def by_method(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["method"]: row for row in result["by_method"]}


def targets(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target the grid can speak to: the meeting measured, the figure, the floor, met or not.

    A recall target is checked on all the meeting's questions and on each wording apart: the questions
    that name the subject as the meeting did, and those that reword it (`needle_rewording`). It applies to
    the clean (noise-free) meetings of its language, length and source; the audio target to any audio
    meeting. The L2 target pools every meeting's questions whose value L2 keeps.
    """
    out: list[dict[str, Any]] = []
    for what, (lang, hours, source), floor in RECALL_TARGETS:
        for r in results:
            m = r["meeting"]
            if (m["lang"] == lang and (hours is None or m["hours"] == hours) and not m.get("noise")
                    and m.get("source", "text") == source):
                recall = r["methods"]["meetmem"]["recall_at_k"]
                label = meeting_label(r)
                out.append({"target": what, "meeting": f"{label}, all questions", "value": recall, "floor": floor,
                            "met": recall is not None and recall >= floor})
                for wording, group in r.get("by_wording", {}).items():
                    share = group["recall_at_k"].get("meetmem")
                    out.append({"target": what, "meeting": f"{label}, {wording} ({group['questions']} questions)",
                                "value": share, "floor": floor, "met": share is not None and share >= floor})
    kept = [r["drift"]["on_kept"]["l2"] for r in results if r["drift"].get("on_kept")]
    questions = sum(k["questions"] for k in kept)
    if questions:
        raw = sum(k["raw_retrieval"] * k["questions"] for k in kept if k["questions"]) / questions
        l2 = sum(k["l2_answer"] * k["questions"] for k in kept if k["questions"]) / questions
        gap = round(100 * (raw - l2), 1)
        out.append({"target": f"recall through L2 within {L2_GAP_POINTS:g} points of raw retrieval on the "
                              f"facts L2 keeps ({questions} questions, all meetings)",
                    "meeting": "all", "value": gap, "floor": L2_GAP_POINTS, "met": gap <= L2_GAP_POINTS,
                    "raw_retrieval": round(raw, 4), "l2_answer": round(l2, 4)})
    return out


def markdown(results: Sequence[dict[str, Any]], plots: Sequence[str] = (), *, plot_titles: dict[str, str] | None = None,
             corpora: Sequence[str] = ()) -> str:
    """The report as Markdown; `plots` are image file names, `corpora` the real-corpora section's lines."""
    if not results:
        return "# Needle evaluation report\n\nNo meetings were evaluated.\n" + "\n".join(corpora)
    k = results[0]["config"]["k"]
    labels = [meeting_label(r) for r in results]
    config = results[0]["config"]
    first = results[0]["meeting"]
    out = ["# Needle evaluation report", "",
           f"k = {k}, prompt budget {config['budget']} tokens, search {config['search']}, seed {first['seed']}, "
           f"{len(results)} meetings; about half the questions name the needle's subject in other words "
           "(`reworded`).", ""]

    checks = targets(results)
    if checks:
        out += ["## Targets", ""]
        out += table(["target", "meeting", "measured", "floor", "met"],
                     [[c["target"], c["meeting"], num(c["value"], 3 if c["floor"] < 1.5 else 1),
                       num(c["floor"], 2 if c["floor"] < 1.5 else 1), "yes" if c["met"] else "**no**"]
                      for c in checks])
        out.append("")

    out += [f"## Recall@{k} and tokens per question", "", "Each cell: recall@k / mean prompt tokens per question.", ""]
    rows = []
    for method in methods_of(results):
        cells = []
        for result in results:
            row = by_method(result).get(method)
            if row is None:
                cells.append("—")
                continue
            tokens = row["tokens_per_question"]
            cells.append(f"{num(row['recall_at_k'])} / {'n/a' if tokens is None else f'{tokens:,.0f}'}")
        rows.append([method, *cells])
    out += table(["method", *labels], rows)

    out += ["", "## meetmem: exact answers, cost, prefix reuse, latency", "",
            "Transcript tokens per hour: what stuffing the whole meeting costs for each hour it lasts; meetmem's "
            "prompt stays within its budget however long the meeting.", ""]
    rows = []
    for label, result in zip(labels, results, strict=True):
        m, mm = result["meeting"], result["methods"]["meetmem"]
        lat = mm["ask_latency"]
        rows.append([label, str(m["segments"]), str(m["questions"]), f"{m['transcript_tokens']:,}",
                     num(m["transcript_tokens"] / m["hours"], 0) if m["hours"] else "n/a",
                     num(mm["recall_at_k"]), num(mm["exact_answer_rate"]), num(mm["prompt_tokens"]["mean"], 0),
                     num(mm["prefix_reuse"]["mean"]), num(lat.get("p50_ms"), 1), num(lat.get("p95_ms"), 1)])
    out += table(["meeting", "segments", "questions", "transcript tokens", "transcript tokens / hour",
                  f"recall@{k}", "exact answers", "prompt tokens / question", "prefix reuse", "ask p50 ms",
                  "ask p95 ms"], rows)

    wording_methods = [m for m in ("meetmem", "bm25", "dense") if m in methods_of(results)]
    out += ["", f"## Recall@{k} by how the question names the subject", "",
            "`as_said`: with the meeting's own words for it; `reworded`: in other words (`needle_rewording`).", ""]
    rows = []
    for label, result in zip(labels, results, strict=True):
        for wording, group in result.get("by_wording", {}).items():
            rows.append([label, wording, str(group["questions"]),
                         *(num(group["recall_at_k"].get(m)) for m in wording_methods),
                         num(group["exact_answer_rate"])])
    out += table(["meeting", "wording", "questions", *wording_methods, "exact answers"], rows)

    out += ["", "## Drift per layer", "",
            "Kept: share of questions whose expected value is in meetmem's first k citations (raw_retrieval), "
            "in any L1 or L2 line, anywhere in the log (the ceiling). Answered: the value is in the first k "
            "lines the same search finds among the L1 lines alone or the L2 lines alone. On kept: the questions "
            "whose value L2 keeps, raw retrieval against the answer from L2 alone.", ""]
    rows = []
    for label, r in zip(labels, results, strict=True):
        d = r["drift"]
        answers = d.get("answers", {})
        kept = d.get("on_kept", {}).get("l2", {})
        rows.append([label, *(num(d.get(layer)) for layer in LAYERS), *(num(answers.get(a)) for a in LAYER_ANSWERS),
                     f"{kept.get('questions', 0)}: {num(kept.get('raw_retrieval'))} / {num(kept.get('l2_answer'))}"])
    out += table(["meeting", *(f"kept {layer}" for layer in LAYERS), *(f"answered {a}" for a in LAYER_ANSWERS),
                  "L2 keeps: raw / L2"], rows)

    out += ["", "## Ledger and traceability", "",
            "Todo needles against the rule ledger's todos (a match cites the needle's segment); every other "
            "todo the ledger finds in the talk counts against precision. Traceability: share of L1, L2 and "
            "ledger items whose citations resolve to stored segments.", ""]
    rows = []
    for label, r in zip(labels, results, strict=True):
        todo, trace = r["ledger"]["todo"], r["ledger"]["traceability"]
        rows.append([label, num(todo["precision"]), num(todo["recall"]), f"{todo['found_needles']}/{todo['needles']}",
                     str(todo["ledger_todos"]), *(num(v["share"]) for v in trace.values())])
    trace_names = list(results[0]["ledger"]["traceability"])
    out += table(["meeting", "todo precision", "todo recall", "needles found", "ledger todos",
                  *(f"traceable {name}" for name in trace_names)], rows)

    out += ["", f"## Recall@{k} per needle kind", ""]
    for label, result in zip(labels, results, strict=True):
        methods = [row["method"] for row in result["by_method"]]
        rows = [[kind, str(group["questions"]), *(num(group["recall_at_k"].get(m)) for m in methods),
                 num(group["exact_answer_rate"])]
                for kind, group in result["by_kind"].items()]
        out += ["", f"### {label}", ""]
        out += table(["kind", "questions", *methods, "exact answers"], rows)

    speakers = [(label, r["speaker_needles"]) for label, r in zip(labels, results, strict=True)
                if r.get("speaker_needles")]
    if speakers:
        out += ["", "## Who said it: speaker needles", "",
                "\"Who said we are not using titanium?\" for each negation, quote, amount, quantity and name one "
                "person stated. The meeting is stored as the edge stores it, speakers as labels (`S1`, `S2`, ...) "
                "with their names only in the meeting's speaker map; right at 1: the first citation is the "
                f"needle's segment and its label maps to the person who said it (at {k}: any of the first {k}).",
                ""]
        rows = []
        for label, sp in speakers:
            kinds = ", ".join(f"{kind} {num(group['speaker_at_1'])}" for kind, group in sp["by_kind"].items())
            rows.append([label, str(sp["questions"]), num(sp["speaker_at_1"]), num(sp.get(f"speaker_at_{sp['k']}")),
                         kinds, num(sp.get("ask_mean_ms"), 1)])
        out += table(["meeting", "questions", "speaker@1", f"speaker@{k}", "speaker@1 by kind", "ask mean ms"], rows)

    audio = [(label, r) for label, r in zip(labels, results, strict=True) if r.get("audio")]
    if audio:
        out += ["", "## Audio meetings", "",
                "Rendered with espeak-ng voices and recognised by the edge pipeline (VAD, Whisper int8, "
                "cleaning) in a process of its own; needles follow the recognised segments that overlap them in "
                "time. Values recognised: share of needles whose expected answers are in their recognised "
                "segments word for word (the ceiling on exact answers).", ""]
        rows = []
        for label, r in audio:
            a = r["audio"]
            rows.append([label, str(a.get("model")), num(a.get("audio_s", 0) / 60, 1), num(a["wer"]["rate"]),
                         num(a.get("rtf")), num(a.get("peak_rss_mb"), 0), str(a.get("segments")),
                         str(a.get("needles_lost")), num(a.get("values_verbatim_share")),
                         num(r["methods"]["meetmem"]["recall_at_k"]), num(r["methods"]["meetmem"]["exact_answer_rate"]),
                         num(a.get("total_wall_s"), 0)])
        out += table(["meeting", "model", "audio min", "WER", "RTF", "edge peak RSS MB", "segments",
                      "needles lost", "values recognised", f"recall@{k}", "exact answers", "wall s"], rows)

    if corpora:
        out += ["", *corpora]
    if plots:
        titles = plot_titles or {}
        out += ["", "## Plots", ""]
        out += [f"![{titles.get(Path(name).stem, name)}]({name})" for name in plots]
    return "\n".join(out) + "\n"
