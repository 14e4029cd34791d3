"""The real corpora of the evaluation report: QMSum, LoCoMo, AMI and the speech clips, side by side.

`evaluate_corpora(data)` runs whichever of `qmsum/`, `locomo/`, `ami/` and `audio/` exist under `data`
(the shared folder, `../shared/data`; read in place, never copied), through the benchmarks that own them:

* `qmsum/` (`qmsum.evaluate_qmsum`): hit@1, P@5 and hit@5 of the cited turns against the annotated spans of
  QMSum's specific validation queries, for meetmem (`Answerer.ask`'s citations, without a digest: as in
  `bench qmsum`, overview-worded questions are answered from retrieval), BM25 alone, dense alone and the
  default hybrid search. The fusion variants of `bench qmsum` are left out; the vectors are embedded once
  and every method shares them.
* `locomo/` (`locomo.evaluate_locomo`): evidence recall@5 and @10 (and any@k) over LoCoMo's dialogue turns,
  each conversation one meeting, per question category; the unanswerable category apart; also against the
  audit's corrected evidence when `locomo_audit_errors_dev.json` is beside the conversations.
* `ami/` (`ami_ledger.run`): the rule ledger's todo and decision precision and recall against AMI's human
  action items and decisions (evidence overlap and text match).
* `audio/` (`bench_edge.clips_part`): WER (English) and CER (Mandarin) of the shared clips through the edge
  pipeline (Whisper base, beam 1, two threads, language detected), in a child process.

A part whose folder is missing, or whose data the benchmark refuses, is reported as `{"skipped": reason}`;
every other part carries its key figures and `wall_s`. `markdown(result)` turns the result into the report's
"Real corpora" section, from the result alone (a saved report can be redrawn).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..harness import BenchDataError, num, table

PARTS = ("qmsum", "locomo", "ami", "audio")
#: The third-party audit of LoCoMo's evidence, scored beside the published evidence when present.
ERRATA_FILE = "locomo_audit_errors_dev.json"
#: `bench qmsum`'s method names -> the report's.
_QMSUM_METHODS = {"ask": "meetmem", "bm25": "bm25", "dense": "dense", "hybrid_default": "hybrid"}
_LOCOMO_METHODS = {"ask": "meetmem", "bm25": "bm25", "dense": "dense", "hybrid": "hybrid"}
_LABELS = {"meetmem": "meetmem (`ask` citations)", "bm25": "BM25 alone", "dense": "dense alone",
           "hybrid": "hybrid search (default fusion)"}


def evaluate_corpora(data: Path, *, routes: Any, progress: Callable[[str], None] | None = None,
                     parts: Sequence[str] = PARTS, qmsum_limit: int | None = None) -> dict[str, Any]:
    """Run every real corpus found under `data`; each part's key figures and wall time.

    Args:
        data: the shared data folder (holding `qmsum/`, `locomo/`, `ami/`, `audio/`).
        routes: the embedder routes (`embedder_routes(...)`), or None for BM25 alone (no dense rows).
        progress: called with a line of progress for a person, if given.
        parts: which parts to run (default: all); the others are reported as skipped.
        qmsum_limit: only the first N QMSum meetings (quick checks; the result says so).

    Returns:
        `{"data", "parts": {name: figures | {"skipped": reason}}, "wall_s"}`.
    """
    say = progress or (lambda _line: None)
    data = Path(data)
    started = time.perf_counter()
    runners: dict[str, Callable[[Path], dict[str, Any]]] = {
        "qmsum": lambda folder: qmsum_part(folder, routes=routes, limit=qmsum_limit, progress=say),
        "locomo": lambda folder: locomo_part(folder, routes=routes, progress=say),
        "ami": ami_part,
        "audio": lambda folder: audio_part(folder, progress=say),
    }
    out: dict[str, Any] = {}
    for name in PARTS:
        folder = data / name
        if name not in parts:
            out[name] = {"skipped": "not asked for"}
            continue
        if not folder.is_dir():
            out[name] = {"skipped": f"{folder} does not exist"}
            say(f"real corpora: {name} skipped ({folder} does not exist)")
            continue
        say(f"real corpora: {name} ({folder}) ...")
        t0 = time.perf_counter()
        try:
            figures = runners[name](folder)
        except BenchDataError as exc:
            figures = {"skipped": str(exc)}
        figures["wall_s"] = round(time.perf_counter() - t0, 1)
        out[name] = figures
        say(f"real corpora: {name} done in {figures['wall_s']:.1f} s"
            + (f" (skipped: {figures['skipped']})" if "skipped" in figures else ""))
    return {"data": str(data), "parts": out, "wall_s": round(time.perf_counter() - started, 1)}


# -- the parts ----------------------------------------------------------------------------------------------
def qmsum_part(folder: Path, *, routes: Any, limit: int | None = None,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """QMSum's key figures: hit@1, P@5, hit@5 per method, overall and per domain."""
    from .qmsum import evaluate_qmsum

    result = evaluate_qmsum(folder, embedder=routes, fusion_variants=False, limit=limit, progress=progress)
    k = result["k"]
    methods = {}
    for source, name in _QMSUM_METHODS.items():
        figures = result["methods"].get(source)
        if figures is None:
            continue
        methods[name] = {"hit@1": figures["hit@1"], f"p@{k}": figures[f"p@{k}"], f"hit@{k}": figures[f"hit@{k}"],
                         "ms_per_query": figures["ms_per_query"],
                         "by_domain": {d: {"n": f["n"], "hit@1": f["hit@1"], f"p@{k}": f[f"p@{k}"]}
                                       for d, f in figures["by_domain"].items()}}
    return {"split": result["split"], "k": k, "meetings": result["meetings"], "queries": result["queries"],
            "queries_by_domain": result["queries_by_domain"], "segments": result["segments_stored"],
            "subset": f"the first {limit} meetings" if limit else None,
            "embedder": _embedder_name(routes), "methods": methods,
            "random_baseline": result["random_baseline"], "embedding": result["embedding"],
            "wall_time": result["wall_time"]}


def locomo_part(folder: Path, *, routes: Any, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """LoCoMo's key figures: evidence recall@5/@10 and any@5/@10 per method, answerable and per category."""
    from .locomo import evaluate_locomo

    audit = folder / ERRATA_FILE
    result = evaluate_locomo(folder, embedder=routes, errata=audit if audit.is_file() else None, progress=progress)
    methods = {name: result["methods"][source] for source, name in _LOCOMO_METHODS.items()
               if source in result["methods"]}
    return {"conversations": [{"sample_id": c["sample_id"], "sessions": len(c["sessions"]),
                               "first_session": c["sessions"][0]["date_time"],
                               "last_session": c["sessions"][-1]["date_time"], "segments": c["segments"],
                               "questions": c["questions"]} for c in result["conversations"]],
            "captions": result["captions"], "errata": result["errata"],
            "questions": {k: v for k, v in result["questions"].items() if k != "unscored_no_known_evidence"},
            "unscored": len(result["questions"]["unscored_no_known_evidence"]),
            "embedder": _embedder_name(routes), "methods": methods,
            "random_baseline": result["random_baseline"]["answerable"], "wall_time": result["wall_time"]}


def ami_part(folder: Path) -> dict[str, Any]:
    """AMI's key figures: the rule ledger's todo and decision precision/recall (evidence and text match)."""
    from .ami_ledger import run

    result = run(folder)
    result.pop("per_meeting", None)
    return {key: result[key] for key in ("split", "meetings", "meetings_without_actions", "segments", "match",
                                         "averaging", "todos", "decisions")}


def audio_part(folder: Path, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The clips' WER/CER per language through the edge pipeline; skipped when the edge extra is missing."""
    import importlib.util

    missing = [m for m in ("faster_whisper", "opencc") if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"the edge extra is not installed ({', '.join(missing)}): pip install 'meetmem[edge]'"}
    from ..bench.edge import clips_part
    from ..bench.serve_process import ServeBenchError

    if progress is not None:
        progress("clips: Whisper base, beam 1, 2 threads, language detected, in a child process ...")
    try:
        result = clips_part(SimpleNamespace(quiet=True), folder)
    except ServeBenchError as exc:
        return {"skipped": f"the edge process failed: {str(exc).splitlines()[0]}"}
    if "skipped" in result:
        return result
    rows = [{k: r[k] for k in ("file", "language", "metric", "speech_type", "audio_s", "detected", "rate",
                               "rate_raw", "errors", "ref_tokens")} for r in result["clips"]]
    return {"asr": "Whisper base, beam 1, 2 threads, language detected (en|zh)", "clips": rows,
            "overall": result["overall"], "rtf": result["rtf"]}


def _embedder_name(routes: Any) -> str | None:
    if routes is None:
        return None
    return getattr(routes, "default", routes).name


# -- Markdown -----------------------------------------------------------------------------------------------
def markdown(result: dict[str, Any]) -> list[str]:
    """The report's "Real corpora" section as Markdown lines (no trailing newline on each)."""
    parts = result.get("parts", {})
    out = ["## Real corpora", "",
           f"Public corpora read in place from `{result.get('data')}`; {num(result.get('wall_s'), 0)} s in all.", ""]
    out += _qmsum_md(parts.get("qmsum", {"skipped": "not run"}))
    out += _locomo_md(parts.get("locomo", {"skipped": "not run"}))
    out += _ami_md(parts.get("ami", {"skipped": "not run"}))
    out += _audio_md(parts.get("audio", {"skipped": "not run"}))
    return out


def _skipped(title: str, part: dict[str, Any]) -> list[str] | None:
    if "skipped" in part:
        return [f"### {title}", "", f"Skipped: {part['skipped']}.", ""]
    return None


def _qmsum_md(part: dict[str, Any]) -> list[str]:
    title = "QMSum: cited turns against the annotated spans"
    skipped = _skipped(title, part)
    if skipped:
        return skipped
    k = part["k"]
    subset = f" ({part['subset']})" if part.get("subset") else ""
    out = [f"### {title}", "",
           f"{part['meetings']} {part['split']} meetings{subset}, {part['queries']} specific queries; hit@1 = the "
           f"first result lies in an annotated span, P@{k} = share of the first {k} inside. Embedder "
           f"{part['embedder'] or 'none'}; random P@{k} {num(part['random_baseline'].get(f'p@{k}'))}; "
           f"{part['wall_s']:.0f} s.", ""]
    rows = [[_LABELS.get(name, name), num(m["hit@1"]), num(m[f"p@{k}"]), num(m[f"hit@{k}"])]
            for name, m in part["methods"].items()]
    out += table(["method", "hit@1", f"P@{k}", f"hit@{k}"], rows)
    return [*out, ""]


def _locomo_md(part: dict[str, Any]) -> list[str]:
    title = "LoCoMo: evidence recall over the dialogue turns"
    skipped = _skipped(title, part)
    if skipped:
        return skipped
    convs = part["conversations"]
    q = part["questions"]
    n = next(iter(part["methods"].values()))["answerable"]["n"] if part["methods"] else 0
    unanswerable = q["by_category"].get("5 unanswerable", 0)
    out = [f"### {title}", "",
           f"{len(convs)} conversations ({sum(c['segments'] for c in convs)} turns in "
           f"{sum(c['sessions'] for c in convs)} dated sessions), each one meeting; {n} answerable questions "
           f"(categories 1-4; {unanswerable} unanswerable ones apart). recall@k = share of a question's evidence "
           f"turns among the first k results; any@k = at least one. Photo captions "
           f"{'included' if part['captions'] else 'left out (the words alone)'}. Random recall@5 "
           f"{num(part['random_baseline'].get('recall@5'))}; {part['wall_s']:.0f} s.", ""]
    rows = [[_LABELS.get(name, name), *(num(m["answerable"][key]) for key in ("recall@5", "recall@10", "any@5",
                                                                               "any@10"))]
            for name, m in part["methods"].items()]
    out += table(["method", "recall@5", "recall@10", "any@5", "any@10"], rows)
    categories = list(next(iter(part["methods"].values()))["by_category"]) if part["methods"] else []
    if categories:
        out += ["", "recall@5 per category (n):", ""]
        rows = [[f"{c} ({part['methods'][next(iter(part['methods']))]['by_category'][c]['n']})",
                 *(num(m["by_category"][c]["recall@5"]) for m in part["methods"].values())] for c in categories]
        out += table(["category", *part["methods"]], rows)
    errata = part.get("errata")
    if errata:
        cells = ", ".join(f"{name} {num(m.get('answerable_errata', {}).get('recall@5'))}"
                          for name, m in part["methods"].items())
        out += ["", f"Against the corrected evidence of a third-party audit (unverified; {errata['questions_changed']} "
                    f"questions changed): recall@5 {cells}."]
    return [*out, ""]


def _ami_md(part: dict[str, Any]) -> list[str]:
    title = "AMI: ledger todos and decisions against the human annotations"
    skipped = _skipped(title, part)
    if skipped:
        return skipped
    out = [f"### {title}", "",
           f"{part['meetings']} {part['split']} meetings ({part['meetings_without_actions']} without an action item), "
           f"micro-averaged. evidence: the item cites a segment of the gold sentence's evidence; text: content-word "
           f"F1 with the gold sentence. {part['wall_s']:.0f} s.", ""]
    rows = []
    for kind in ("todos", "decisions"):
        f = part[kind]
        rows.append([kind, str(f["counts"]["extracted"]), str(f["counts"]["gold"]), num(f["evidence"]["precision"]),
                     num(f["evidence"]["recall"]), num(f["text"]["precision"]), num(f["text"]["recall"])])
    out += table(["ledger", "extracted", "gold", "precision (evidence)", "recall (evidence)", "precision (text)",
                   "recall (text)"], rows)
    return [*out, ""]


def _audio_md(part: dict[str, Any]) -> list[str]:
    title = "Speech clips: WER and CER"
    skipped = _skipped(title, part)
    if skipped:
        return skipped
    out = [f"### {title}", "",
           f"{len(part['clips'])} clips through the edge pipeline ({part['asr']}); case and punctuation "
           f"normalised, Mandarin scored by characters; cleaned text (raw Whisper text in brackets). RTF "
           f"{num(part['rtf'])}; {part['wall_s']:.0f} s.", ""]
    rows = []
    for lang, metric in (("en", "WER"), ("zh", "CER")):
        pooled, raw = part["overall"].get(f"{lang}_{metric}"), part["overall"].get(f"{lang}_{metric}_raw")
        if pooled is None:
            continue
        clips = [c for c in part["clips"] if c["language"] == lang]
        rows.append([lang, metric, str(len(clips)), f"{sum(c['audio_s'] for c in clips):.0f}",
                     f"{num(pooled['rate'])} ({num(raw['rate'] if raw else None)})"])
    out += table(["language", "metric", "clips", "seconds", "pooled rate"], rows)
    return [*out, ""]
