"""Scoring a paced run of `meetmem bench edge`'s latency part: when each reference word was spoken, how
soon partial captions showed the words, and how soon each final was stored and acknowledged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..harness import error_rate, latency, spoken_end

SAMPLE_RATE = 16000


def segments_text(segments: Sequence[dict[str, Any]], key: str = "text") -> str:
    return " ".join(s[key] for s in segments if s.get(key))



def word_times(reference: list[dict[str, Any]]) -> list[float]:
    """When each reference word was done being spoken, in order: each utterance's span shared evenly among its
    words (espeak-ng speaks at an even rate; an estimate for recorded speech)."""
    times: list[float] = []
    for segment in reference:
        words = segment["text"].split()
        span = segment["end"] - segment["start"]
        times += [segment["start"] + span * (i + 1) / len(words) for i in range(len(words))]
    return times


def partial_figures(partials: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict[str, Any]:
    """Partial-caption latency: when a word first reached the HUD callback minus when it was spoken.

    The i-th word of an utterance's caption is taken as the i-th reference word after the utterance's start
    (`word_times`): a caption one word short or long of the reference shifts it by about one word's time.
    A word counts once, when it was first shown in any caption: an utterance the VAD cut at its length limit
    goes on in the next one, whose caption starts afresh, and the words past the cut may have been shown by
    the caption before it. First words are each caption's first word, at that first showing."""
    import bisect

    times = word_times(reference)
    seen: dict[int, tuple[float, float]] = {}  # reference word -> (shown at, heard until), its first showing
    firsts: list[int] = []  # the reference word each caption starts at
    shown: dict[float, int] = {}
    for p in partials:
        before = shown.get(p["start"], 0)
        count = len(p["text"].split())
        j0 = bisect.bisect_right(times, p["start"] + 0.05)
        if p["start"] not in shown and count > 0 and j0 < len(times):
            firsts.append(j0)
        for i in range(before, count):
            if j0 + i < len(times):
                seen.setdefault(j0 + i, (p["at"], p["heard_until"]))
        shown[p["start"]] = max(before, count)
    every = [at - times[j] for j, (at, _) in seen.items()]
    first = [seen[j][0] - times[j] for j in firsts]
    # Split in two: how much audio after the word the pass that showed it needed (the policy's share, the
    # same on any machine), and the time from that audio to the caption (the recogniser's share: passes, and
    # finals ahead of them, which load stretches). A paced run's clock reads audio seconds: sample t is
    # delivered at about t.
    heard = [seen[j][1] - times[j] for j in firsts]
    waited = [seen[j][0] - seen[j][1] for j in firsts]
    return {"first": latency(first), "every": latency(every), "first_heard_after_spoken": latency(heard),
            "first_shown_after_heard": latency(waited)}


def latency_figures(result: dict[str, Any], reference: list[dict[str, Any]]) -> dict[str, Any]:
    """Latency percentiles of one paced run, from the reference's ends of speech."""
    item = result["inputs"][0]
    spans = [(r["start"], r["end"]) for r in reference]
    segs = item["segments"]
    acked = [s for s in segs if s["acked"] is not None]
    # Speech ends where the reference says. A segment cut inside a reference utterance ends at the cut (the
    # VAD cuts at the start of a pause, or at its limit): the speech before the cut ended there.
    found = {id(s): spoken_end(s["start"], s["end"], spans) for s in segs}
    speech = {id(s): s["end"] if found[id(s)] is None else found[id(s)] for s in segs}
    # The VAD closes an utterance `min_silence` after its last voiced frame (`hangover` before its end), in
    # the first chunk that holds that sample; the chunk was due when its last sample was spoken.
    from meetmem.edge.vad import VADOptions

    vad = VADOptions()
    closing = (vad.min_silence_ms - vad.hangover_ms) / 1000.0
    # A segment the next one continues from its end was cut, not closed: at the limit (inside a reference
    # utterance), or live in the middle of a short pause, once the speech after it began (as far after the
    # cut as the speech before it ended before).
    continued = {id(s) for s, following in zip(segs, segs[1:], strict=False)
                 if abs(following["start"] - s["end"]) < 0.002}
    emitted = {id(s): s["end"] + (closing if id(s) not in continued else max(0.0, s["end"] - speech[id(s)]))
               if found[id(s)] is not None else s["end"] for s in segs}
    due = {id(s): next((n / SAMPLE_RATE for n, _ in item["deliveries"] or [] if n >= emitted[id(s)] * SAMPLE_RATE),
                       item["audio_s"]) for s in segs}
    return {
        "segments": len(segs), "acknowledged": len(acked), "drained": item["drained"],
        "segments_cut_inside_a_reference_utterance": sum(1 for v in found.values() if v is None),
        "uploader_acks": item["uploader_acks"],
        "speech_end_to_outbox": latency([s["stored"] - speech[id(s)] for s in segs]),
        "speech_end_to_ack": latency([s["acked"] - speech[id(s)] for s in acked]),
        "vad_end_to_outbox": latency([s["stored"] - s["end"] for s in segs]),
        "vad_end_to_ack": latency([s["acked"] - s["end"] for s in acked]),
        "speech_end_to_recogniser": latency([s["reached_asr"] - speech[id(s)] for s in segs]),
        "of_which_silence_and_chunk_wait": latency([due[id(s)] - speech[id(s)] for s in segs]),
        "of_which_behind_earlier_utterances": latency([s["reached_asr"] - due[id(s)] for s in segs]),
        "transcription": latency([s["transcribe_s"] for s in segs]),
        "outbox_to_ack": latency([s["acked"] - s["stored"] for s in acked]),
        "speech_end_to_ack_minus_own_transcription": latency(
            [s["acked"] - speech[id(s)] - s["transcribe_s"] for s in acked]),
        "agent_reported_vad_end_to_outbox": latency(item["agent_latencies_s"]),
        "rtf_transcribe": round(item["transcribe_s"] / item["audio_s"], 4),
        "recogniser_calls": item["recogniser_calls"], "language_detections": item["language_detections"],
        "backlog_max_utterances": item["backlog_max"], "backlog_max_speech_s": item["backlog_max_s"],
        "degradations": item["degradations"],
        "partial_first_words_after_spoken": partial_figures(item["partials"] or [], reference)["first"],
        "partial_every_word_after_spoken": partial_figures(item["partials"] or [], reference)["every"],
        "partial_first_words_heard_after_spoken": partial_figures(item["partials"] or [],
                                                                  reference)["first_heard_after_spoken"],
        "partial_first_words_shown_after_heard": partial_figures(item["partials"] or [],
                                                                 reference)["first_shown_after_heard"],
        "partial_captions": len(item["partials"] or []), "partial_passes": item["partial_passes"],
        "partial_passes_alongside_a_final": item.get("partial_passes_alongside"),
        "partial_errors": item.get("partial_errors"),
        # captions a pass confirmed after its utterance's final was due: kept off the HUD, never after the final
        "partials_superseded": item.get("partials_superseded"),
        "partial_recogniser_s": item["partial_s"],
        "speculative_finals": item.get("speculations"), "speculative_finals_used": item.get("speculations_used"),
        "sentence_cuts": item.get("sentence_cuts"),
        # Places the VAD offered to cut at a short pause; decoded (the rest gave way to a newer place before the
        # recogniser was free); refused, as their words went on (the latest: where, and the words).
        "sentence_places": {"offered": item.get("sentence_places"), "decoded": item.get("sentence_places_decoded"),
                            "refused": item.get("sentence_places_refused"),
                            "refused_latest": item.get("sentence_places_refused_latest")},
        # The live words against the reference: live cuts and speculation must not cost words.
        "wer": error_rate(segments_text(reference), segments_text(segs))["rate"],
        "edge_cpu_s": item["cpu_s"], "recogniser_s": item["transcribe_s"],
        "edge_peak_rss_mb": result["peak_rss_mb"],
        "other_processes_cores": result["process"]["other_processes_cores"],
    }
