"""Answering from one summary layer alone, for the drift figures of `meetmem eval run`.

The issue asks for "the same questions answered from raw retrieval, from L1 only and from L2 only, so the
loss per layer shows". Raw retrieval is meetmem's own answer over the log. For a layer, its lines are the
only text there is: each L1 line (or L2 line) becomes one segment of a meeting of its own in a separate
SQLite log, indexed by the product's search (`TranscriptSearch`, hybrid when the routes hold a model), and
a question's answer from the layer is its first k lines. So the three answers differ only in what they are
drawn from, never in how they are ranked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The layers a question can be answered from alone, as meeting ids in the layers' own log.
LAYER_MEETINGS = ("l1", "l2")
_DEVICE = "layer-lines"


class LayerAnswers:
    """The L1 and L2 lines of one digest, searchable on their own.

    Args:
        digest: the meeting's `MeetingDigest` (its sections' L1 lines and its L2 lines).
        db_path: a database file that does not exist yet; the lines are stored there.
        routes: the embedder routes of the evaluation (None: BM25 alone).
        lang: the meeting's language, given to every line.
    """

    def __init__(self, digest: Any, db_path: str | Path, routes: Any, *, lang: str) -> None:
        from meetmem.store.index.search import TranscriptSearch
        from meetmem.store.interchange import validate_segment
        from meetmem.store.log import DEFAULT_TENANT, TranscriptLog

        db_path = Path(db_path)
        if db_path.exists():
            raise FileExistsError(f"{db_path} exists; the layers need a fresh database")
        self._tenant = DEFAULT_TENANT
        self._log = TranscriptLog(db_path)
        self.lines: dict[str, list[Any]] = {
            "l1": [line for section in digest.sections for line in section.lines],
            "l2": list(digest.l2),
        }
        self._row_of: dict[str, dict[str, int]] = {}
        for layer in LAYER_MEETINGS:
            # One device's start times may not go backwards; L2 lines need not be in time order.
            order = sorted(range(len(self.lines[layer])), key=lambda i, layer=layer: self.lines[layer][i].source.start)
            self.lines[layer] = [self.lines[layer][i] for i in order]
            rows = [validate_segment({"start": line.source.start, "end": max(line.source.end, line.source.start),
                                      "text": line.text, "lang": lang}, seq)
                    for seq, line in enumerate(self.lines[layer])]
            if rows:
                self._log.append(layer, _DEVICE, rows, tenant=self._tenant)
                self._log.close_meeting(layer, tenant=self._tenant)
            stored = self._log.segments(layer, tenant=self._tenant) if rows else []
            self._row_of[layer] = {s.segment_id: i for i, s in enumerate(stored)}
        self._search = TranscriptSearch(self._log, routes)
        for layer in LAYER_MEETINGS:
            if self.lines[layer]:
                self._search.meeting_index(layer, tenant=self._tenant)

    def answer(self, layer: str, question: str, k: int) -> list[Any]:
        """The layer's first `k` lines for the question (`SummaryLine`s), best first; none if it is empty."""
        if layer not in LAYER_MEETINGS:
            raise ValueError(f"layer must be one of {LAYER_MEETINGS}, got {layer!r}")
        if not self.lines[layer]:
            return []
        hits = self._search.search(layer, question, tenant=self._tenant, k=k)
        rows = self._row_of[layer]
        return [self.lines[layer][rows[h.segment.segment_id]] for h in hits]

    def close(self) -> None:
        self._log.close()

    def __enter__(self) -> LayerAnswers:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
