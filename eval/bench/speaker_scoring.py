"""`bench speakers`' labels and scores: a meeting's utterances as the edge cuts and embeds them, labelled by
the edge's online `SpeakerTracker` (the encoder is not run again per threshold), and scored against the
reference turns: DER (`eval/harness/der.py`), speaker counts, where utterances were cut, the enrolled wearer."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..harness.der import Turn, diarization_error
from .speaker_meetings import ENROLL_LINES, SR, Meeting, render_line


@dataclass(frozen=True)
class Cutting:
    """How utterances are cut where the voice changes inside them (`edge.speaker_turns.speaker_turns`)."""

    change: float
    short: float | None
    max_turns: int
    candidates: int

    def public(self) -> dict[str, Any]:
        return {"change_threshold": self.change, "short_change_threshold": self.short,
                "max_turns": self.max_turns, "candidates": self.candidates}


def edge_cutting(change: float | None = None, short: float | None = -1.0) -> Cutting:
    """The edge's cutting today (`edge.speaker_turns` defaults), a threshold changed where given."""
    from meetmem.edge import speaker_turns as sp

    return Cutting(sp.CHANGE_THRESHOLD if change is None else change,
                   sp.SHORT_CHANGE_THRESHOLD if short == -1.0 else short, sp.MAX_TURNS, sp.CHANGE_CANDIDATES)


#: The cut before more than one cut per utterance: once at most, both sides 1.6 s or more, 3 pauses tried.
SINGLE_CUT = Cutting(0.8, None, 2, 3)


@dataclass
class Embedded:
    """The edge's utterances of a meeting, each with its embedding."""

    meeting: Meeting
    spans: list[tuple[float, float]]
    embeddings: list[np.ndarray]
    cpu_seconds: float
    #: With a change threshold: each utterance's start (s) and its candidate turns, which the tracker joins
    #: again where their labels would be the same (`SpeakerTracker.merge_same`); `spans` are then unused.
    turns: list[tuple[float, list[Any]]] | None = None



def embed_meeting(meeting: Meeting, encoder: Any, *, oracle: bool = False,
                  change_threshold: float | None = None, cutting: Cutting | None = None) -> Embedded:
    """The edge's VAD utterances embedded; with `oracle`, the reference turns instead (what the clustering
    alone gets right, when no utterance holds two speakers); with `cutting` (or `change_threshold`, the
    edge's cutting at that threshold), each utterance cut where the voice changes inside it first, as the
    edge does (`edge.speaker_turns.speaker_turns`)."""
    from meetmem.edge.speaker_turns import speaker_turns
    from meetmem.edge.vad import segment

    if cutting is None and change_threshold is not None:
        cutting = edge_cutting(change_threshold)

    spans, embeddings = [], []
    turns: list[tuple[float, list[Any]]] = []
    started = time.process_time()
    if oracle:
        for start, end, _ in meeting.reference:
            spans.append((start, end))
            audio = meeting.samples[int(start * SR):int(end * SR)].astype(np.float32) / 32768.0
            embeddings.append(encoder.embed(audio))
    else:
        for utterance in segment(meeting.samples):
            if cutting is None:
                spans.append((utterance.start, utterance.end))
                embeddings.append(encoder.embed(utterance.audio))
                continue
            turns.append((utterance.start, speaker_turns(encoder, utterance.audio, cutting.change, cutting.short,
                                                         max_turns=cutting.max_turns,
                                                         candidates=cutting.candidates)))
    return Embedded(meeting, spans, embeddings, time.process_time() - started,
                    turns if cutting is not None else None)


def label(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None) -> list[Turn]:
    """The tracker's labels for the embedded utterances, in order (the encoder is not run again)."""
    return labelled(embedded, threshold, wearer)[0]


#: The clustering before a short turn needed less likeness to join a voice: one threshold for every turn of
#: 1 s or more (`edge.speakers.SpeakerOptions.new_voice_seconds` 0), scored beside the edge's rule.
ONE_THRESHOLD_RULE: dict[str, Any] = {"new_voice_seconds": 0.0}


def labelled(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None,
              rule: dict[str, Any] | None = None) -> tuple[list[Turn], list[tuple[float, float]], list[float]]:
    """`label`'s turns, the utterances' spans, and where an utterance was cut (seconds); `rule`: other
    `SpeakerOptions` fields than the edge's defaults."""
    from meetmem.edge.speakers import SpeakerOptions, SpeakerTracker

    options = SpeakerOptions(threshold=threshold, wearer_threshold=threshold, **(rule or {}))
    tracker = SpeakerTracker(encoder=None, options=options, wearer=wearer)  # type: ignore[arg-type]
    if embedded.turns is not None:
        out, spans, cuts = [], [], []
        for at, candidates in embedded.turns:
            spans.append((at + candidates[0].start / SR, at + candidates[-1].end / SR))
            for i, turn in enumerate(tracker.merge_same(candidates)):
                start, end = at + turn.start / SR, at + turn.end / SR
                out.append((start, end, tracker.assign(turn.embedding, end - start)))
                if i:
                    cuts.append(start)
        return out, spans, cuts
    turns = [(start, end, tracker.assign(e, end - start))
             for (start, end), e in zip(embedded.spans, embedded.embeddings, strict=True)]
    return turns, list(embedded.spans), []


#: A cut this close to a change of speaker in the reference found it.
CUT_TOLERANCE_S = 0.25


def changes(reference: Sequence[Turn]) -> list[tuple[float, float]]:
    """Where the reference's speaker changes, as intervals: the gap between two people's turns, or the
    overlap when the second starts before the first ends."""
    ordered = sorted(reference)
    return [(min(end, start), max(end, start))
            for (_, end, who), (start, _, nxt) in zip(ordered, ordered[1:], strict=False) if who != nxt]


def cut_stats(reference: Sequence[Turn], spans: Sequence[tuple[float, float]], cuts: Sequence[float]) -> dict[str, Any]:
    """How the cuts inside utterances match the reference's changes of speaker: a cut further than
    `CUT_TOLERANCE_S` from every change (`changes`) is false (one person's speech split in two); a change
    inside an utterance (its middle not within the tolerance of the utterance's ends) is found when a cut
    is that close. An utterance of one voice (no change inside) that was cut is counted too."""
    moments = changes(reference)

    def near(cut: float, change: tuple[float, float]) -> bool:
        return change[0] - CUT_TOLERANCE_S <= cut <= change[1] + CUT_TOLERANCE_S

    inside = [c for c in moments
              if any(a + CUT_TOLERANCE_S < (c[0] + c[1]) / 2 < b - CUT_TOLERANCE_S for a, b in spans)]
    false = [c for c in cuts if not any(near(c, m) for m in moments)]
    one_voice = [(a, b) for a, b in spans if not any(a < (m[0] + m[1]) / 2 < b for m in moments)]
    return {"cuts": len(cuts), "false_cuts": len(false),
            "changes_inside_utterances": len(inside),
            "changes_found": sum(any(near(c, m) for c in cuts) for m in inside),
            "one_voice_utterances": len(one_voice),
            "one_voice_utterances_cut": sum(any(a < c < b for c in cuts) for a, b in one_voice)}


def score(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None,
          rule: dict[str, Any] | None = None) -> dict[str, Any]:
    hypothesis, spans, cuts = labelled(embedded, threshold, wearer, rule)
    reference = embedded.meeting.reference
    result = diarization_error(reference, hypothesis)
    no_collar = diarization_error(reference, hypothesis, collar=0.0)
    ref_count = len({t[2] for t in reference})
    hyp_count = len({t[2] for t in hypothesis})
    return {"meeting": embedded.meeting.name, "kind": embedded.meeting.kind,
            "seconds": round(embedded.meeting.seconds, 1), "utterances": len(hypothesis),
            "speakers": ref_count, "labels": hyp_count, "count_right": ref_count == hyp_count,
            **result.public(), "der_no_collar": round(no_collar.der, 4),
            "no_collar_errors_s": round(no_collar.missed + no_collar.false_alarm + no_collar.confusion, 2),
            "no_collar_scored_s": round(no_collar.scored, 2), **cut_stats(reference, spans, cuts)}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = sum(r["scored_s"] for r in rows)
    errors = sum(r["missed_s"] + r["false_alarm_s"] + r["confusion_s"] for r in rows)
    loose = sum(r["no_collar_scored_s"] for r in rows)
    cuts = sum(r["cuts"] for r in rows)
    inside = sum(r["changes_inside_utterances"] for r in rows)
    one_voice = sum(r["one_voice_utterances"] for r in rows)
    return {"meetings": len(rows), "der_pooled": round(errors / scored, 4) if scored else None,
            "der_pooled_no_collar": round(sum(r["no_collar_errors_s"] for r in rows) / loose, 4) if loose else None,
            "der_mean": round(float(np.mean([r["der"] for r in rows])), 4),
            "cuts": cuts, "false_cuts": sum(r["false_cuts"] for r in rows),
            "false_cut_rate": round(sum(r["false_cuts"] for r in rows) / cuts, 3) if cuts else None,
            "changes_inside_utterances": inside,
            "change_recall": round(sum(r["changes_found"] for r in rows) / inside, 3) if inside else None,
            "one_voice_utterances_cut": f"{sum(r['one_voice_utterances_cut'] for r in rows)}/{one_voice}",
            "speaker_count_accuracy": round(sum(r["count_right"] for r in rows) / len(rows), 3),
            "speaker_count_abs_error_mean": round(float(np.mean([abs(r["labels"] - r["speakers"]) for r in rows])), 2)}


def wearer_check(embedded: Embedded, encoder: Any, threshold: float, workdir: Path) -> dict[str, Any]:
    """The demo meeting with Alice enrolled from two sentences she does not say in it: how many of her
    utterances are labelled the wearer, and how many of the others' are."""
    from meetmem.edge.speakers import WEARER_LABEL

    from ..sample_meeting import VOICES

    voice = VOICES["Alice"]
    enroll = np.concatenate([render_line(line, (voice.name, voice.pitch, voice.words_per_minute), workdir, 900 + i)
                             for i, line in enumerate(ENROLL_LINES)]).astype(np.float32) / 32768.0
    wearer = encoder.embed(enroll)
    hypothesis = label(embedded, threshold, wearer)

    def owner(start: float, end: float) -> str | None:
        best, most = None, 0.0
        for a, b, who in embedded.meeting.reference:
            shared = min(b, end) - max(a, start)
            if shared > most:
                best, most = who, shared
        return best

    hers = [h for h in hypothesis if owner(h[0], h[1]) == "Alice"]
    others = [h for h in hypothesis if owner(h[0], h[1]) != "Alice"]
    return {"enrolled_seconds": round(len(enroll) / SR, 1),
            "wearer_utterances_labelled_wearer": f"{sum(h[2] == WEARER_LABEL for h in hers)}/{len(hers)}",
            "other_utterances_labelled_wearer": f"{sum(h[2] == WEARER_LABEL for h in others)}/{len(others)}",
            **{f"with_wearer_{k}": v for k, v in score(embedded, threshold, wearer).items()
               if k in ("der", "labels", "speakers")}}

