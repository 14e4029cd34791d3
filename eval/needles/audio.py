"""The audio path of the needle evaluation (issue 7): a needle meeting spoken, recognised, then evaluated.

The text harness (`needle_eval.evaluate`) asks its questions of the meeting as written. Here the meeting
is first rendered to speech with espeak-ng, one voice per speaker (`render`), then transcribed by the real
edge pipeline in a process of its own: decoding, webrtcvad, faster-whisper, filler cleaning, the outbox
(`recognise`). The recognised segments are not the planted rows: the VAD merges rows said with a short
pause between them and may cut or drop speech, and Whisper writes what it heard. `align` maps every
needle, correction and distractor onto the recognised segments by time overlap, so the same questions
are asked of what the edge really captured and recognition errors count (`evaluate_audio`).

    python -m meetmem.eval.needles.audio --minutes 30 --lang en --model base --out /tmp/needle-audio

prints one JSON object (the `needle_eval.evaluate` result with an `audio` block) on stdout.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..harness import edit_distance, meeting_glossary, pooled, tokens
from ..sample_meeting import (
    SAMPLE_RATE,
    Utterance,
    Voice,
    assemble_meeting,
    encode_meeting,
    render_utterance,
    require_tools,
    spoken_form,
    write_wav,
)
from .records import NeedleMeeting

log = logging.getLogger("meetmem.eval.needles.audio")

#: English voices handed to the meeting's speakers in order of first appearance (the generator uses 4 to
#: 6): the demo meeting's four (`sample_meeting.VOICES`) and two more, American and British, men and women.
#: Whisper base on 40 needle-meeting rows, 160 words a minute, per voice: WER en-us 0.13, +m3 0.14, +f3
#: 0.17, +m7 0.17, en-gb+f4 0.17, +m3 0.20; left out: en-gb-scotland+m1 0.30 and en-gb-x-rp+f4 0.28 (espeak's
#: approximations of those accents, harder than the accents are), and 180 words a minute (+3 to 4 points).
EN_VOICES = (
    Voice("en-us+m3", pitch=42, words_per_minute=160),
    Voice("en-us+f3", pitch=62, words_per_minute=160),
    Voice("en-gb+m3", pitch=38, words_per_minute=155),
    Voice("en-gb+f4", pitch=70, words_per_minute=165),
    Voice("en-us+m7", pitch=50, words_per_minute=150),
    Voice("en-us", pitch=54, words_per_minute=165),
)
AUDIO_FILE = "meeting.ogg"
REFERENCE_NAME = "rendered"  # rendered.jsonl and rendered.needles.json: the planted rows at their audio times
#: A recognised segment also carries a needle when it overlaps this share of the needle's row: a row cut in
#: two by the VAD has its words in both halves, but a segment's pre-roll touching a row's edge holds none.
ALSO_SHARE = 0.25

_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})\s*([ap])m\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True, slots=True)
class RenderedMeeting:
    """A needle meeting as spoken: the meeting with every row at its time in the audio, and the audio."""

    meeting: NeedleMeeting
    audio: Path
    audio_s: float
    voices: dict[str, str]
    wall_s: float


@dataclasses.dataclass(frozen=True, slots=True)
class Recognition:
    """What the edge pipeline made of the audio: interchange rows, and the run's figures."""

    segments: list[dict[str, Any]]
    figures: dict[str, Any]


def said(text: str) -> str:
    """`text` as a person would say it, for espeak-ng: "$4,250" as "4,250 dollars", "6:05 pm" as
    "6 oh 5 p.m." and "10:00 am" as "10 a.m." (espeak reads "6:05" as "six zero five")."""

    def clock(match: re.Match[str]) -> str:
        hour, minute, half = match.group(1), match.group(2), match.group(3).lower()
        minutes = "" if minute == "00" else f" oh {minute[1]}" if minute[0] == "0" else f" {minute}"
        return f"{hour}{minutes} {half}.m."

    return _CLOCK.sub(clock, spoken_form(text))


def speaker_voices(rows: Sequence[dict[str, Any]], lang: str) -> dict[str, Voice]:
    """A voice for each speaker, in order of first appearance."""
    if lang != "en":
        raise ValueError(f"audio needle meetings are English only for now, not {lang!r} (espeak-ng's Mandarin "
                         f"voice reads few Chinese characters; it needs pinyin, and pypinyin is not a dependency)")
    order = list(dict.fromkeys(str(row.get("speaker") or "") for row in rows))
    return {speaker: EN_VOICES[i % len(EN_VOICES)] for i, speaker in enumerate(order)}


def render(meeting: NeedleMeeting, folder: Path, *, seed: int = 20250304, workers: int = 2) -> RenderedMeeting:
    """Speak every row of `meeting` into `folder/meeting.ogg` (16 kHz mono Ogg Vorbis) and write the rows at
    their audio times as `folder/rendered.jsonl` with `rendered.needles.json` (needle indices unchanged).

    Rows are joined with seeded pauses (`sample_meeting.assemble_meeting`); a row's start and end are its
    first and last loud sample, so they match the audio to the sample.
    """
    require_tools()
    t0 = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    voices = speaker_voices(meeting.segments, meeting.lang)
    utterances = tuple(Utterance(str(row.get("speaker") or ""), row["text"]) for row in meeting.segments)
    with tempfile.TemporaryDirectory(prefix="meetmem-needle-audio-") as tmp:
        workdir = Path(tmp)

        def speak(index: int) -> Any:
            utterance = utterances[index]
            return render_utterance(utterance, index, workdir, voices[utterance.speaker], said(utterance.text))

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            renderings = list(pool.map(speak, range(len(utterances))))
        audio, placed = assemble_meeting(utterances, renderings, seed)
        meeting_wav = workdir / "meeting.wav"
        write_wav(meeting_wav, audio)
        encode_meeting(meeting_wav, folder / AUDIO_FILE)
    rows = tuple({**row, "start": round(p.start, 3), "end": round(p.end, 3)}
                 for row, p in zip(meeting.segments, placed, strict=True))
    notes = {**meeting.notes, "source": "audio", "voices": {s: v.name for s, v in voices.items()}}
    rendered = dataclasses.replace(meeting, segments=rows, notes=notes)
    rendered.write(folder, REFERENCE_NAME)
    return RenderedMeeting(rendered, folder / AUDIO_FILE, round(len(audio) / SAMPLE_RATE, 3),
                           notes["voices"], round(time.perf_counter() - t0, 2))


def recognise(audio_path: Path, *, model: str = "base", threads: int = 2, language: str | None = "en",
              glossary: Sequence[str] = (), beam: int = 1) -> Recognition:
    """The edge pipeline (`meetmem edge run` on a file) over `audio_path`, in a process of its own.

    Returns the recognised segments as interchange rows (no speaker: the edge does not diarise) and the
    run's figures: audio seconds, wall time of the capture and of the whole process, real-time factor,
    model load time and peak memory (VmHWM) of the edge process.
    """
    from ..bench.edge_process import run_edge

    job = {"model": model, "beam": beam, "threads": threads, "language": language, "glossary": list(glossary),
           "inputs": [{"path": str(audio_path), "meeting": "needle-audio"}]}
    result = run_edge(job)
    run = result["inputs"][0]
    rows = [{"start": s["start"], "end": s["end"], "text": s["text"], "raw_text": s["raw_text"],
             "lang": s["lang"] or language} for s in run["segments"] if s["text"].strip()]
    audio_s = run["audio_s"]
    figures = {"model": model, "threads": threads, "beam": beam, "language": language, "audio_s": audio_s,
               "capture_wall_s": run["wall_s"], "process_wall_s": result["process"]["wall_s"],
               "rtf": round(run["wall_s"] / audio_s, 4) if audio_s else None, "load_s": result["load_s"],
               "peak_rss_mb": result["peak_rss_mb"], "segments": len(rows), "vad_dropped": run["dropped"],
               "recogniser_calls": run["recogniser_calls"]}
    return Recognition(rows, figures)


# ------------------------------------------------------------------------------------------------------
# Alignment: planted rows (at their rendered times) onto recognised segments, by time overlap. Pure.
# ------------------------------------------------------------------------------------------------------
class _Timeline:
    """Recognised segments sorted by start, for overlap queries by time."""

    def __init__(self, segments: Sequence[dict[str, Any]]) -> None:
        self.spans = [(float(s["start"]), float(s["end"])) for s in segments]
        self.starts = [a for a, _ in self.spans]
        self.reach: list[float] = []  # the latest end among segments 0..j: bisectable even if spans overlap
        for _, b in self.spans:
            self.reach.append(max(b, self.reach[-1]) if self.reach else b)

    def overlaps(self, start: float, end: float) -> list[tuple[float, int]]:
        """(overlap seconds, segment index) of every segment overlapping [start, end], largest first."""
        found = []
        for j in range(bisect.bisect_right(self.reach, start), len(self.spans)):
            a, b = self.spans[j]
            if a >= end:
                break
            overlap = min(end, b) - max(start, a)
            if overlap > 0:
                found.append((overlap, j))
        return sorted(found, key=lambda item: (-item[0], item[1]))

    def nearest(self, start: float, end: float) -> int:
        """The segment closest in time to [start, end] (for a row no segment overlaps)."""
        at = bisect.bisect_left(self.starts, start)
        candidates = [j for j in (at - 1, at) if 0 <= j < len(self.spans)]
        return min(candidates, key=lambda j: max(self.spans[j][0] - end, start - self.spans[j][1]))


def align(rendered: NeedleMeeting, recognised: Sequence[dict[str, Any]]) -> NeedleMeeting:
    """The needle meeting whose segments are the recognised ones, its needles mapped onto them.

    A needle's `segment_index` becomes the recognised segment with the largest time overlap with its row,
    `also` the others overlapping at least `ALSO_SHARE` of the row. A row no recognised segment overlaps
    (the VAD dropped it) is lost: its needle points at the nearest segment, which does not hold it, so
    every question about it counts as a miss. A correction's `corrects` and the distractors are mapped to
    their largest overlap; a corrected row or distractor that is lost, or that lands in the same segment as
    a needle (rows merged by the VAD), is left out, since that segment's answer is then the needle's.
    What was lost or left out is in `notes["alignment"]`.

    Raises:
        ValueError: nothing was recognised.
    """
    if not recognised:
        raise ValueError("nothing was recognised: the aligned meeting would have no segments")
    segments = sorted(recognised, key=lambda s: (float(s["start"]), float(s["end"])))
    timeline = _Timeline(segments)
    rows = rendered.segments

    def overlaps(index: int) -> list[tuple[float, int]]:
        return timeline.overlaps(float(rows[index]["start"]), float(rows[index]["end"]))

    lost_needles: list[int] = []
    needles = []
    for needle in rendered.needles:
        row = rows[needle.segment_index]
        found = overlaps(needle.segment_index)
        if not found:
            lost_needles.append(needle.segment_index)
            main, also = timeline.nearest(float(row["start"]), float(row["end"])), ()
        else:
            length = max(float(row["end"]) - float(row["start"]), 1e-9)
            main = found[0][1]
            also = tuple(sorted(j for overlap, j in found[1:] if overlap >= ALSO_SHARE * length))
        needles.append(dataclasses.replace(needle, segment_index=main, also=also))
    needle_main = {n.segment_index for n in needles}

    def mapped(index: int) -> int | None:
        found = overlaps(index)
        return found[0][1] if found and found[0][1] not in needle_main else None

    dropped_corrections = 0
    for i, needle in enumerate(needles):
        if needle.corrects is not None:
            corrects = mapped(needle.corrects)
            dropped_corrections += corrects is None
            needles[i] = dataclasses.replace(needle, corrects=corrects)
    distractors = [mapped(i) for i in rendered.distractors]
    lost_rows = sum(1 for i in range(len(rows)) if not overlaps(i))
    notes = {**rendered.notes, "source": "audio",
             "alignment": {"rows": len(rows), "recognised_segments": len(segments), "lost_rows": lost_rows,
                           "lost_needles": len(lost_needles), "lost_needle_rows": lost_needles,
                           "split_needles": sum(1 for n in needles if n.also),
                           "corrections_left_out": dropped_corrections,
                           "distractors_left_out": sum(d is None for d in distractors)}}
    return dataclasses.replace(rendered, segments=tuple(segments), needles=tuple(needles),
                               distractors=tuple(sorted({d for d in distractors if d is not None})), notes=notes)


def word_errors(reference: Sequence[dict[str, Any]], recognised: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """WER of the recognised text against the rendered rows, pooled over islands of rows and segments
    linked by time overlap (one edit distance over a whole meeting is quadratic in its words). A lost row's
    words are all deletions; a segment over no row is all insertions."""
    segments = sorted(recognised, key=lambda s: (float(s["start"]), float(s["end"])))
    timeline = _Timeline(segments)
    parent = list(range(len(reference) + len(segments)))  # rows first, then segments

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, row in enumerate(reference):
        for _, j in timeline.overlaps(float(row["start"]), float(row["end"])):
            parent[root(len(reference) + j)] = root(i)
    islands: dict[int, tuple[list[str], list[str]]] = {}
    for i, row in enumerate(reference):
        islands.setdefault(root(i), ([], []))[0].append(row["text"])
    for j, segment in enumerate(segments):
        islands.setdefault(root(len(reference) + j), ([], []))[1].append(segment["text"])
    scores = []
    for ref, hyp in islands.values():
        ref_tokens, hyp_tokens = tokens(" ".join(ref), "word"), tokens(" ".join(hyp), "word")
        scores.append({"errors": edit_distance(ref_tokens, hyp_tokens), "ref_tokens": len(ref_tokens)})
    return pooled(scores)


_LOOSE = (
    (re.compile(r"(?<=\d),(?=\d{3}\b)"), ""),  # 93,830 -> 93830
    (re.compile(r"\$\s*(\d+)"), r"\1 dollars"),  # $93830 -> 93830 dollars
    (re.compile(r"\b([ap])\.\s?m\b\.?"), r"\1m"),  # p.m. -> pm
    (re.compile(r"(?<=\d)[:.](?=\d\d(?!\d))"), ""),  # 6:05, 6.05 -> 605
    (re.compile(r"(?<=\d)\s+(?=[ap]m\b)"), ""),  # 605 pm -> 605pm
    (re.compile(r"(?<=\d)(st|nd|rd|th)\b"), ""),  # 23rd -> 23
    (re.compile(r"\s+"), " "),
)


def loosely(text: str) -> str:
    """Text with the ways Whisper writes a number, an amount, a time or a date folded together
    ("$93,830" / "93,830 dollars", "12:25 pm" / "1225pm" / "12.25 p.m.", "June 23rd" / "June 23")."""
    text = text.casefold()
    for pattern, replacement in _LOOSE:
        text = pattern.sub(replacement, text)
    return text.strip()


def values_survived(aligned: NeedleMeeting, *, loose: bool = False) -> list[bool]:
    """For each needle, whether every expected answer of its questions is in the recognised text of its
    segments, as written (the ceiling on exact answers once recognition has happened), or with `loose`
    up to how numbers, amounts, times and dates are written (`loosely`)."""
    from .scoring import holds

    out = []
    for needle in aligned.needles:
        text = " ".join(aligned.segments[i]["text"] for i in needle.segments)
        if loose:
            out.append(all(loosely(q.expected) in loosely(text) for q in needle.questions))
        else:
            out.append(all(holds(text, q.expected, needle.lang) for q in needle.questions))
    return out


def evaluate_audio(meeting: NeedleMeeting, folder: Path, *, routes: Any, model: str = "base", threads: int = 2,
                   beam: int = 1, k: int = 5, budget: int = 4000, seed: int = 20250304, glossary: Sequence[str] = (),
                   db_path: Path | None = None, progress: Callable[[str], None] | None = None,
                   on_question: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Render `meeting` into `folder`, recognise it with the edge pipeline, align, and evaluate.

    Args:
        meeting: the needle meeting (English).
        folder: where the audio (`meeting.ogg`), the rendered rows (`rendered.*`), the recognised ones
            (`recognised.jsonl`) and the aligned meeting (`aligned.*`) are written.
        routes: the embedder routes for `needle_eval.evaluate` (None: BM25 alone).
        model, threads, beam: the edge's Whisper model (`base`, `tiny.en`), its CPU threads and beam size
            (int8; beam 1 is greedy, the edge's default).
        glossary: the edge's glossary (Whisper hotwords, kept by the filler cleaner); none by default, as
            `meetmem edge run` without `--glossary`. `asr_scoring.meeting_glossary` gives what a meeting's
            organiser would list.
        db_path: a new database file to keep the evaluated copy in (None: a temporary one).
        progress, on_question: as for `needle_eval.evaluate`.

    Returns:
        The `needle_eval.evaluate` result, its `meeting` block marked `source: audio`, plus `audio`: the
        render, the recognition's figures, WER, the share of needles whose answers survived recognition
        verbatim, what the alignment lost, and the wall time of it all (`total_wall_s`).
    """
    from .evaluation import evaluate

    say = progress or (lambda _message: None)
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    say(f"rendering {len(meeting.segments)} rows with espeak-ng ...")
    rendered = render(meeting, folder, seed=seed)
    say(f"rendered {rendered.audio_s:.0f} s of audio in {rendered.wall_s:.0f} s; recognising with {model} ...")
    terms = list(glossary)
    recognition = recognise(rendered.audio, model=model, threads=threads, language=meeting.lang, glossary=terms,
                            beam=beam)
    (folder / "recognised.jsonl").write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in recognition.segments), encoding="utf-8")
    say(f"recognised {len(recognition.segments)} segments, rtf {recognition.figures['rtf']}; evaluating ...")
    aligned = align(rendered.meeting, recognition.segments)
    aligned.write(folder, "aligned")
    if db_path is not None:
        result = evaluate(aligned, db_path=db_path, routes=routes, k=k, budget=budget, progress=progress,
                          on_question=on_question)
    else:
        with tempfile.TemporaryDirectory(prefix="meetmem-needle-audio-") as tmp:
            result = evaluate(aligned, db_path=Path(tmp) / "needles.db", routes=routes, k=k, budget=budget,
                              progress=progress, on_question=on_question)
    survived, loose = values_survived(aligned), values_survived(aligned, loose=True)
    alignment = aligned.notes["alignment"]
    result["meeting"] |= {"source": "audio", "audio_s": rendered.audio_s, "rows": len(meeting.segments)}
    result["audio"] = {
        **recognition.figures, "glossary": terms, "render_wall_s": rendered.wall_s, "voices": rendered.voices,
        "wer": word_errors(rendered.meeting.segments, recognition.segments),
        "values_verbatim_share": round(sum(survived) / len(survived), 4) if survived else None,
        "values_loose_share": round(sum(loose) / len(loose), 4) if loose else None,
        "needles_lost": alignment["lost_needles"],
        "alignment": {key: value for key, value in alignment.items() if key != "lost_needle_rows"},
        "total_wall_s": round(time.perf_counter() - started, 1),
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Needle recall from audio: a generated meeting spoken by "
                                                 "espeak-ng and recognised by the edge pipeline.")
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the generated meeting")
    parser.add_argument("--lang", default="en", choices=("en",), help="the meeting's language")
    parser.add_argument("--seed", type=int, default=7, help="the needle generator's seed")
    parser.add_argument("--needles-per-hour", type=int, default=40)
    parser.add_argument("--model", default="base", help="the edge's Whisper model: base or tiny.en")
    parser.add_argument("--threads", type=int, default=2, help="Whisper's CPU threads")
    parser.add_argument("--beam", type=int, default=1, help="Whisper's beam size (1: greedy, the edge's default)")
    parser.add_argument("--embedder", default="minilm", help="the dense embedding model, or none for BM25")
    parser.add_argument("--embedder-zh", default="none")
    parser.add_argument("--embed-threads", type=int, default=1)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--glossary", action="store_true",
                        help="give the edge the speakers' names and product codes as its glossary")
    parser.add_argument("--out", type=Path, required=True, help="folder for the audio, the rows and the database")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from meetmem.store.index.embedder_routes import embedder_routes

    from .generator import generate

    t0 = time.perf_counter()
    meeting = generate(args.minutes / 60, lang=args.lang, seed=args.seed, needles_per_hour=args.needles_per_hour)
    routes = embedder_routes(args.embedder, args.embedder_zh, threads=args.embed_threads)

    def note(message: str) -> None:
        sys.stderr.write(f"[{time.perf_counter() - t0:6.0f} s] {message}\n")
        sys.stderr.flush()

    glossary = meeting_glossary(meeting.segments) if args.glossary else ()
    result = evaluate_audio(meeting, args.out, routes=routes, model=args.model, threads=args.threads,
                            beam=args.beam, k=args.k, budget=args.budget, glossary=glossary, progress=note)
    result["audio"]["run_wall_s"] = round(time.perf_counter() - t0, 1)  # with generating and model loads
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
