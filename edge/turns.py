"""Speaker turns in the capture: an utterance holding several voices becomes one per turn, before recognition.

The VAD cuts at pauses, not at a change of voice: one speaker answering another without a pause gives one
utterance. `TurnCutter` cuts each utterance wherever the voice changes inside it (`SpeakerTracker.turns`), labels
each turn as it is found, and the capture recognises the turns as utterances of their own, so each segment's
words and times are its speaker's. Nothing stored is ever rewritten.
"""

from __future__ import annotations

import dataclasses

from .speakers import SpeakerTracker
from .vad import Utterance


class TurnCutter:
    """Cuts utterances at voice changes and remembers the label of each turn until its segment is stored.

    Args:
        speakers: the meeting's speaker tracker.
    """

    def __init__(self, speakers: SpeakerTracker) -> None:
        self.speakers = speakers
        self.splits = 0  # utterances cut in two (or more) where the voice changed inside them
        self._labels: dict[tuple[int, int], str] = {}  # the latest flush's turns' labels, by their samples

    def cut(self, utterances: list[Utterance]) -> list[Utterance]:
        """The utterances cut where the voice changes inside them, each turn labelled as it is found (in
        order, so a file's pack is cut with the voices heard before each of its utterances)."""
        self._labels.clear()  # a flush labels its own turns; a group Whisper joined is labelled again
        return [turn for utterance in utterances for turn in self._turns(utterance)]

    def label(self, utterance: Utterance) -> str:
        """The speaker label of an utterance about to be stored: its turn's, else its own voice's."""
        label = self._labels.pop((utterance.start_sample, utterance.end_sample), None)
        return label if label is not None else self.speakers.label(utterance.audio)

    def speaker_of(self, utterance: Utterance) -> str | None:
        """The label this flush gave an utterance's turn, left in place for `label` (None: not one of them)."""
        return self._labels.get((utterance.start_sample, utterance.end_sample))

    def _turns(self, utterance: Utterance) -> list[Utterance]:
        if utterance.audio.size == 0:
            return [utterance]
        turns = self.speakers.turns(utterance.audio)
        parts = [utterance] if len(turns) == 1 else [
            dataclasses.replace(utterance, start_sample=utterance.start_sample + turn.start,
                                end_sample=utterance.start_sample + turn.end,
                                audio=utterance.audio[turn.start:turn.end],
                                forced=utterance.forced and turn is turns[-1])
            for turn in turns]
        for part, turn in zip(parts, turns, strict=True):
            self.speakers.utterances += 1
            self._labels[(part.start_sample, part.end_sample)] = self.speakers.assign(turn.embedding, part.duration)
        if len(parts) > 1:
            self.splits += 1
        return parts
