"""Text layout for the Brilliant Labs Frame display: captions and answers as short lines that fit.

Frame's display is 640x400 pixels and its firmware font is variable width, with no wrapping of its own
(`frame.display.text` draws one line where it is told). So the host measures and wraps: these are pure
functions, fed text, returning lines.

The glyph widths are the firmware font's advance widths as Brilliant Labs' own `frame-sdk` (MIT) measures
them in `frame_sdk/display.py` (`char_width_mapping`, 25 px for a character it does not list), and each
character is followed by the text `spacing` (4 px, the default of `frame.display.text` and of
`frame_msg.TxPlainText`). Lines are 60 px apart, as the frame-sdk and Brilliant's examples draw them: six
lines fit the 400 px height.
"""

from __future__ import annotations

from dataclasses import dataclass

DISPLAY_WIDTH = 640
DISPLAY_HEIGHT = 400
LINE_HEIGHT = 60
SPACING = 4
#: Width of a character the table does not hold (frame-sdk's default).
UNKNOWN_WIDTH = 25

# Advance widths (px) of the printable ASCII characters 0x20 (space) .. 0x7E (~), from frame-sdk's table
# ('/' is missing there and measured as the default).
_ASCII_WIDTHS = (
    13, 5, 13, 19, 17, 34, 20, 5, 10, 11, 21, 19, 8, 17, 6, 25, 18, 16, 16, 15, 18, 15, 17, 15, 18, 17, 6, 8,
    19, 19, 19, 14, 31, 22, 18, 16, 19, 17, 17, 18, 19, 12, 14, 19, 16, 23, 19, 20, 18, 22, 20, 17, 20, 19, 21,
    23, 21, 23, 17, 9, 15, 10, 20, 25, 11, 19, 18, 13, 18, 16, 15, 20, 18, 5, 11, 18, 8, 28, 18, 18, 18, 18, 11,
    15, 14, 17, 19, 30, 20, 20, 16, 12, 5, 12, 17,
)
_CJK = ("\u2e80", "\u9fff")  # CJK scripts break between any two characters; other scripts at spaces


@dataclass(frozen=True, slots=True)
class DisplayLayout:
    """Where text goes on the display.

    Args:
        width: pixels a line may take.
        lines: lines on one screen.
        spacing: pixels after each character (TxPlainText's `spacing`).
        caption_lines: lines the live caption keeps (its latest words).
    """

    width: int = DISPLAY_WIDTH
    lines: int = DISPLAY_HEIGHT // LINE_HEIGHT
    spacing: int = SPACING
    caption_lines: int = 2


def text_width(text: str, *, spacing: int = SPACING) -> int:
    """Pixels `text` takes on one line of Frame's display."""
    total = 0
    for char in text:
        code = ord(char)
        total += (_ASCII_WIDTHS[code - 0x20] if 0x20 <= code <= 0x7E else UNKNOWN_WIDTH) + spacing
    return total


def wrap_lines(text: str, *, width: int = DISPLAY_WIDTH, spacing: int = SPACING) -> list[str]:
    """Greedy word wrap to `width` pixels; whitespace collapses, line breaks in `text` are kept.

    Words are split at spaces; a CJK character is a word of its own (Chinese has no spaces); a word wider
    than a whole line is cut between characters rather than run off the display.
    """
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line, spaced = "", False
        for token in _tokens(paragraph):
            if token == " ":
                spaced = True
                continue
            for piece in _fit(token, width, spacing):
                joiner = " " if (line and spaced) else ""
                if line and text_width(line + joiner + piece, spacing=spacing) > width:
                    lines.append(line)
                    line = piece
                else:
                    line += joiner + piece
                spaced = False  # the pieces of a cut word were written together
        if line:
            lines.append(line)
    return lines


def caption_screen(text: str, layout: DisplayLayout = DisplayLayout()) -> list[str]:
    """The live caption: the last `caption_lines` wrapped lines of what was just said."""
    return wrap_lines(text, width=layout.width, spacing=layout.spacing)[-layout.caption_lines:]


def answer_screen(text: str, layout: DisplayLayout = DisplayLayout()) -> list[str]:
    """An answer: as many wrapped lines as fit one screen, the last ending in `…` when some were cut."""
    lines = wrap_lines(text, width=layout.width, spacing=layout.spacing)
    if len(lines) <= layout.lines:
        return lines
    kept = lines[: layout.lines]
    last = kept[-1]
    while last and text_width(last + "...", spacing=layout.spacing) > layout.width:
        last = last[:-1].rstrip()
    kept[-1] = last + "..."
    return kept


def _is_cjk(char: str) -> bool:
    return _CJK[0] <= char <= _CJK[1]


def _tokens(paragraph: str) -> list[str]:
    """Words and single CJK characters, in order (a space token marks where a space was)."""
    tokens: list[str] = []
    word = ""
    for char in paragraph:
        if char.isspace() or _is_cjk(char):
            if word:
                tokens.append(word)
                word = ""
            tokens.append(" " if char.isspace() else char)
        else:
            word += char
    if word:
        tokens.append(word)
    return tokens


def _fit(word: str, width: int, spacing: int) -> list[str]:
    """A word as pieces no wider than a line (the word itself when it fits)."""
    pieces: list[str] = []
    piece = ""
    for char in word:
        if piece and text_width(piece + char, spacing=spacing) > width:
            pieces.append(piece)
            piece = ""
        piece += char
    if piece:
        pieces.append(piece)
    return pieces
