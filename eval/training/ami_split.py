"""AMI dev cut in two halves by meeting series: what is trained and chosen on, and what is reported once.

The four phases of one scenario series (ES2002a-d) share their team, their product and much of their
talk, so a series is never split: a meeting's half is its series'. The 34 series of AMI dev, sorted, go
alternately to `report` and `tune`, starting with `report`; ES2005 and ES2006 then trade places, so that
ES2002 and ES2006, on which `meetmem bench questions`' questions were written, are both in the report
half and no question's meeting is ever trained on. Fixed here, before any result was seen.
"""

from __future__ import annotations

#: The report half: 17 series (62 meetings). Everything else in AMI dev (17 series, 60 meetings) is the tune half.
REPORT_SERIES = frozenset({
    "ES2002", "ES2006", "ES2007", "ES2009", "ES2012", "ES2014", "ES2016", "IB4005", "IB4011", "IS1001", "IS1004",
    "IS1006", "IS1008", "TS3003", "TS3006", "TS3008", "TS3010",
})
HALVES = ("tune", "report", "all")


def series(meeting_id: str) -> str:
    """The meeting's scenario series: its id less the phase letter (ES2002a -> ES2002)."""
    return meeting_id.rstrip("abcdefghijklmnopqrstuvwxyz")


def half(meeting_id: str) -> str:
    """`report` or `tune`."""
    return "report" if series(meeting_id) in REPORT_SERIES else "tune"


def in_half(meeting_id: str, wanted: str) -> bool:
    if wanted not in HALVES:
        raise ValueError(f"unknown half {wanted!r}: choose one of {', '.join(HALVES)}")
    return wanted == "all" or half(meeting_id) == wanted
