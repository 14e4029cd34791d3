"""The text of recognised pieces: joining them, and whether they end a sentence."""

from __future__ import annotations

from .asr import TranscriptPiece

_CJK = ("\u3400", "\u9fff")
#: What ends a sentence in Whisper's words (a trailing "..." is speech that trails off, not an end).
SENTENCE_ENDS = (".", "?", "!", "\u3002", "\uff1f", "\uff01")


def ends_sentence(text: str) -> bool:
    """Whether Whisper's words end a sentence: a full stop, question or exclamation mark (Chinese ones too),
    but not the "..." of speech that trails off."""
    text = text.rstrip()
    return text.endswith(SENTENCE_ENDS) and not text.endswith(("..", "\u2026"))


def join_pieces(pieces: list[TranscriptPiece]) -> str:
    """The text of an utterance's recognised pieces, in order."""
    parts = [p.text.strip() for p in pieces if p.text.strip()]
    if not parts:
        return ""
    text = parts[0]
    for part in parts[1:]:
        # No space between two CJK pieces ("我们明天" + "发货"), one between anything else.
        joiner = "" if (_CJK[0] <= text[-1] <= _CJK[1] and _CJK[0] <= part[0] <= _CJK[1]) else " "
        text += joiner + part
    return text
