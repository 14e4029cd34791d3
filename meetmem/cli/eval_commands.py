"""`meetmem eval ...`: evaluations of meetmem's answers against baselines on generated meetings.

`eval run --folder DIR` reads a needle meeting folder (`<name>.jsonl` and `<name>.needles.json`, as
`meetmem.eval.needles.records.NeedleMeeting.write` leaves them) and prints the comparison of
`meetmem.eval.needles.evaluation.evaluate`: a table, or one JSON object with `--json`. Progress goes to stderr.
`eval report` generates and evaluates a grid of needle meetings (`meetmem.eval.needles.report`) and writes
`report.json`, `report.md` and PNG plots into a folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .options import JSON, MODEL, QUIET, Deprecated, UsageError, flags
from .output import emit_json
from .progress import note


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _hours_list(value: str) -> list[float]:
    try:
        hours = [float(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected hours separated by commas, not {value!r}") from None
    if not hours or any(not (h > 0 and h < 1000) for h in hours):
        raise argparse.ArgumentTypeError("every length must be a positive number of hours")
    return hours


def _langs_list(value: str) -> list[str]:
    langs = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [lang for lang in langs if lang not in ("en", "zh")]
    if not langs or unknown:
        raise argparse.ArgumentTypeError(f"languages are en and zh, separated by commas, not {value!r}")
    return list(dict.fromkeys(langs))


def _routes(ctx: Any) -> Any:
    """The embedder routes of the settings, loading each model on first use (said on stderr unless -q)."""
    from meetmem.store.index.embedder_routes import embedder_routes

    s = ctx.settings
    return embedder_routes(s.embedder, s.embedder_zh, threads=s.threads, on_load=(
        None if ctx.quiet else (lambda name: note(f"loading the {name} embedding model ..."))))


def _optional_hours(value: str) -> list[float]:
    """Hours separated by commas, or 0 for none."""
    if value.strip() in ("0", "none", ""):
        return []
    return _hours_list(value)


def _audio_hours(value: str) -> float | None:
    """One length in hours, or 0 for no audio meeting."""
    hours = _optional_hours(value)
    if len(hours) > 1:
        raise argparse.ArgumentTypeError(f"one length, not {value!r}")
    return hours[0] if hours else None


def _noise_rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, not {value!r}") from None
    if not 0.0 <= rate <= 1.0:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1, not {value}")
    return rate


def report(args: argparse.Namespace, ctx: Any) -> int:
    from meetmem.eval.harness import checkout, machine_info
    from meetmem.eval.needles.report import evaluate_grid, grid, write_report

    from .progress import ProgressBar

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        sys.stderr.write(f"meetmem: error: {out} is not a folder\n")
        return 2
    data = Path(args.data) if args.data else None
    if data is not None and not data.is_dir():
        sys.stderr.write(f"meetmem: error: --data {data} is not a folder (expected ../shared/data or the like)\n")
        return 2
    say = None if ctx.quiet else note
    routes = _routes(ctx)
    head, modified = checkout(["cloud", "store", "summarizers", "edge", "eval"])
    specs = grid(hours=args.hours, langs=args.langs, noisy_hours=args.noisy_hours, noise=args.noise,
                 audio_hours=args.audio_hours)
    bars: list[ProgressBar] = []

    def bar(label: str) -> ProgressBar:
        bars.append(ProgressBar(label, enabled=not ctx.quiet))
        return bars[-1]

    started = time.perf_counter()
    results = evaluate_grid(out, specs, seed=args.seed, k=args.k, budget=args.budget, routes=routes,
                            audio_model=args.audio_model, progress=say, bar=bar, speaker_hours=args.speaker_hours)
    for b in bars:
        b.finish()
    corpora = corpora_lines = None
    if data is not None:
        from meetmem.eval.corpora.report import evaluate_corpora
        from meetmem.eval.corpora.report import markdown as corpora_markdown

        corpora = evaluate_corpora(data, routes=routes, progress=say)
        corpora_lines = corpora_markdown(corpora)
    header = {"evaluation": "needles_report", "machine": machine_info(),
              "code": {"git_head": head, "modified_files": modified},
              "grid": {"hours": args.hours, "langs": args.langs, "noisy_hours": args.noisy_hours, "noise": args.noise,
                       "audio_hours": args.audio_hours, "audio_model": args.audio_model,
                       "speaker_hours": args.speaker_hours, "seed": args.seed,
                       "k": args.k, "budget": args.budget, "data": str(data) if data else None},
              "wall_s": round(time.perf_counter() - started, 1)}
    try:
        written = write_report(out, results, header, corpora=corpora, corpora_lines=corpora_lines or ())
    except ImportError as exc:
        sys.stderr.write(f"meetmem: error: {exc}\n")
        return 1
    if say:
        say(f"wrote {', '.join(p.name for p in written)} in {out}, {time.perf_counter() - started:.0f} s in all")
    sys.stdout.write(str(out / "report.md") + "\n")
    sys.stdout.flush()
    return 0


def run(args: argparse.Namespace, ctx: Any) -> int:
    from meetmem.eval.harness import checkout, machine_info
    from meetmem.eval.needles.evaluation import evaluate, table
    from meetmem.eval.needles.records import NeedleMeeting
    if args.folder is None:
        raise UsageError("give the needle meeting's folder: meetmem eval run --folder FOLDER")
    folder = Path(args.folder)
    files = [folder / f"{args.name}.jsonl", folder / f"{args.name}.needles.json"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        sys.stderr.write(f"meetmem: error: not a needle meeting folder, missing {', '.join(missing)}\n")
        return 2
    try:
        meeting = NeedleMeeting.read(folder, args.name)
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"meetmem: error: cannot read the needle meeting in {folder}: {exc!r}\n")
        return 1
    say = None if ctx.quiet else note
    routes = _routes(ctx)
    info = machine_info()
    head, modified = checkout(["cloud", "store", "summarizers", "eval/needles/evaluation.py",
                               "eval/needles/baselines.py"])
    # A database named with --db keeps the evaluated copy for a look afterwards; it must be new.
    if args.db:
        if Path(args.db).exists():
            sys.stderr.write(f"meetmem: error: {args.db} exists; eval run ingests into a new database\n")
            return 2
        result = evaluate(meeting, db_path=args.db, routes=routes, k=args.k, budget=args.budget, progress=say)
    else:
        with tempfile.TemporaryDirectory(prefix="meetmem-eval-") as tmp:
            result = evaluate(meeting, db_path=Path(tmp) / "needles.db", routes=routes, k=args.k,
                              budget=args.budget, progress=say)
    if args.json:
        report = {"evaluation": "needles", "meeting_folder": str(folder), "machine": info,
                  "code": {"git_head": head, "modified_files": modified}, **result}
        emit_json(report)
    else:
        sys.stdout.write(table(result) + "\n")
    sys.stdout.flush()
    return 0


def add_eval_commands(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser(
        "eval", help="evaluate meetmem's answers against baselines on a needle meeting",
        description="Evaluations of meetmem's answers against the usual baselines. Each action takes its "
                    "options (--embedder, -q, ...) after its name.",
    )
    actions = group.add_subparsers(dest="eval_command", metavar="ACTION", required=True)
    p = actions.add_parser(
        "run", parents=flags(MODEL, JSON, QUIET, own_db=True),
        help="needle recall of meetmem against baselines on a needle meeting folder",
        description="Ingest a needle meeting into a new database (temporary unless --db names a new file), "
                    "index it, digest it, and put every needle question to meetmem and to BM25 alone, dense "
                    "alone, a sliding window over the last tokens, a rolling summary and the full transcript: "
                    "recall@k, exact answers, prompt tokens, prefix reuse, latency, drift per summary layer "
                    "and ledger todo precision/recall. A table on stdout, or one JSON object with --json; "
                    "progress on stderr.",
    )
    # Not a meeting id: the folder a needle meeting was written to (`--meeting FOLDER` before issue 34).
    p.add_argument("--folder", metavar="FOLDER", default=None,
                   help="the needle meeting's folder, with <name>.jsonl and <name>.needles.json (required; "
                        "NeedleMeeting.write)")
    p.add_argument("--meeting", dest="folder", metavar="FOLDER", action=Deprecated, new="--folder")
    p.add_argument("--db", default=None, metavar="PATH",
                   help="keep the evaluated copy in this new database file (default: a temporary one)")
    p.add_argument("--name", default="meeting", help="the files' stem in the folder (default: meeting)")
    p.add_argument("--k", type=_positive, default=5, help="citations or hits that count for recall (default: 5)")
    p.add_argument("--budget", type=_positive, default=4000,
                   help="compiled prompt budget and sliding window size, in tokens (default: 4000)")
    p.set_defaults(func=run)

    p = actions.add_parser(
        "report", parents=flags(MODEL, QUIET),
        help="needle evaluation over generated meetings: report.json, report.md, plots",
        description="Generate a seeded needle meeting for every language and length (written under "
                    "OUT/meetings/), evaluate each as `eval run` does, and write OUT/report.json (every result), "
                    "OUT/report.md (the targets checked; method x meeting recall@k and tokens per question; "
                    "meetmem's exact answers, cost, prefix reuse and latency; recall by wording, per layer and "
                    "per needle kind; the ledger; the real corpora with --data) and PNG plots (recall and prompt "
                    "tokens against meeting length, recall per layer, ask latency). Besides clean text at every "
                    "length: noisy text at --noisy-hours and an English audio meeting (--audio-hours). Needs "
                    "matplotlib (the eval extra), and espeak-ng, sox and the Whisper weights for audio. Progress "
                    "on stderr; the path of report.md on stdout.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the meetings, the report and the plots")
    p.add_argument("--hours", type=_hours_list, default=[0.5, 1.0, 4.0, 8.0], metavar="H[,H...]",
                   help="meeting lengths in hours, separated by commas (default: 0.5,1,4,8)")
    p.add_argument("--langs", type=_langs_list, default=["en", "zh"], metavar="LANG[,LANG...]",
                   help="languages of the meetings, en and/or zh (default: en,zh)")
    p.add_argument("--noisy-hours", type=_optional_hours, default=[1.0], metavar="H[,H...]",
                   help="lengths that are also evaluated with ASR-like noise in the text, 0 for none (default: 1)")
    p.add_argument("--noise", type=_noise_rate, default=0.1,
                   help="the noisy meetings' rate of disturbed words (default: 0.1)")
    p.add_argument("--audio-hours", type=_audio_hours, default=0.5, metavar="H",
                   help="length of an English meeting rendered with espeak-ng and recognised by the edge "
                        "pipeline, 0 for none (default: 0.5)")
    p.add_argument("--audio-model", default="base",
                   help="Whisper model of the audio meeting, as `edge run --model` takes it (default: base)")
    p.add_argument("--speaker-hours", type=_optional_hours, default=[1.0], metavar="H[,H...]",
                   help="lengths of the clean English meetings also asked \"who said ...?\" of their needles, "
                        "stored with edge speaker labels named in the speaker map; 0 for none (default: 1)")
    p.add_argument("--data", metavar="DIR",
                   help="the real corpora (a folder with qmsum/, locomo/, ami/, audio/, as ../shared/data): "
                        "their figures are added to the report")
    p.add_argument("--seed", type=int, default=7, help="seed of the generated meetings (default: 7)")
    p.add_argument("--k", type=_positive, default=5, help="citations or hits that count for recall (default: 5)")
    p.add_argument("--budget", type=_positive, default=4000,
                   help="compiled prompt budget and sliding window size, in tokens (default: 4000)")
    p.set_defaults(func=report)
