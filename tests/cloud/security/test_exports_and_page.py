"""Issue 30, the exports and the page: forged subtitle cues and Markdown minutes that carry HTML, links and
images (9), and the page's security headers (5), replayed on both stores over HTTP.

The subtitles are read back with the parsers players use (webvtt-py, the `srt` package, and a strict reading
of the structure both formats share); the minutes are rendered by a CommonMark renderer (markdown-it-py,
raw HTML enabled, as the common renderers have it). The browser's own reading of the same exports (Chromium's
WebVTT parser in a <track>) is in tests/web/test_page_hardening.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import srt
import webvtt
from markdown_it import MarkdownIt

BACKENDS = ("sqlite", "postgres")

# Ten segments, three of them trying to be cue structure: an arrow longer than "-->" (which the old filter
# turned back into "-->"), a blank line then a cue number and a timing line, and a line of digits alone.
FORGED_TEXTS = [
    "Good morning everyone.",
    "00:00:30.000 ---> 00:00:40.000",
    "The build is green.",
    "Fine.\n\n99\n00:00:50,000 --> 00:00:59,000\nforged cue",
    "42\n00:01:00,000 -- > 00:01:05,000 x",
    "We ship <b>Friday</b> & not later; 1 < 2.",
    "a ----> b --->> c -- > d",
    "Line one\r\nline two\u2028line three",
    "Nine.",
    "Ten.",
]
# Names from the speaker map go into the cues too.
FORGED_NAMES = {"S1": "Eve ---> 00:00:01,000", "S2": "Mallory <c.loud>&amp;"}
ARROW = re.compile(r"-[ -]+>")  # "-->", "--->", "-- >", "- >"; a plain "->" is no arrow to any reader


@pytest.fixture
def bm25_api(make_api: Callable[..., Any]) -> Any:
    return make_api(embedders=None)


def _post(api: Any, headers: dict[str, str], meeting: str, texts: list[str], **meta: Any) -> None:
    rows = [{"seq": i, "start": 5.0 * i, "end": 5.0 * i + 4.0, "speaker": f"S{i % 3 + 1}", "text": text}
            for i, text in enumerate(texts)]
    r = api.client.post(f"/v1/meetings/{meeting}/segments", json={"device_id": "glasses", "segments": rows, **meta},
                        headers=headers)
    assert r.status_code == 200, r.text


def _blocks(text: str) -> list[list[str]]:
    """The cue blocks of a subtitle file as a strict reader sees them: separated by blank lines."""
    return [block.split("\n") for block in re.split(r"\n[ \t]*\n", text.strip("\n")) if block.strip()]


def test_subtitles_have_one_cue_per_segment_whatever_the_text_holds(bm25_api: Any) -> None:
    api = bm25_api
    headers = api.headers(api.token("acme"))
    _post(api, headers, "forged", FORGED_TEXTS)
    r = api.client.put("/v1/meetings/forged/speakers", json={"speakers": FORGED_NAMES}, headers=headers)
    assert r.status_code == 200, r.text

    vtt = api.client.get("/v1/meetings/forged/export?format=vtt", headers=headers)
    assert vtt.status_code == 200
    captions = webvtt.from_string(vtt.text)
    assert len(captions) == len(FORGED_TEXTS)
    assert [c.start for c in captions] == [f"00:00:{5 * i:02d}.000" for i in range(len(FORGED_TEXTS))]
    blocks = _blocks(vtt.text)
    assert blocks[0] == ["WEBVTT"] and len(blocks) == len(FORGED_TEXTS) + 1
    for number, block in enumerate(blocks[1:], start=1):
        # Cue number, timing, one line of text: no arrow, no markup but the voice, "&" only as a reference.
        assert len(block) == 3 and block[0] == str(number), block
        assert not ARROW.search(block[2]), block
        assert re.fullmatch(r"<v [^<>&]*(?:&(?:amp|lt);[^<>&]*)*>[^<]*", block[2]), block
        assert not re.search(r"&(?!amp;|lt;)", block[2]), block
    assert "We ship &lt;b>Friday&lt;/b> &amp; not later; 1 &lt; 2." in vtt.text
    # A voice's name ends at ">", so the name has none; webvtt-py leaves its references as they are.
    assert {c.voice for c in captions} == {"Eve - 00:00:01,000", "Mallory &lt;c.loud&amp;amp;", "S3"}

    subrip = api.client.get("/v1/meetings/forged/export?format=srt", headers=headers)
    cues = list(srt.parse(subrip.text, ignore_errors=False))
    assert [c.index for c in cues] == list(range(1, len(FORGED_TEXTS) + 1))
    blocks = _blocks(subrip.text)
    assert len(blocks) == len(FORGED_TEXTS)
    for block, cue in zip(blocks, cues, strict=True):
        assert len(block) == 3 and not ARROW.search(block[2]), block
        assert cue.content == block[2]
    assert cues[1].content == "Mallory <c.loud>&amp;: 00:00:30.000 -> 00:00:40.000"
    assert cues[3].content == "Eve -> 00:00:01,000: Fine. 99 00:00:50,000 -> 00:00:59,000 forged cue"
    assert cues[4].content == "Mallory <c.loud>&amp;: 42 00:01:00,000 -> 00:01:05,000 x"


MINUTES_TEXTS = [
    "Welcome, let's start with the launch.",
    "We decided to use <img src=x onerror=alert(1)> for the banner.",
    "We decided to ship the [portal](javascript:alert(2)) on Friday.",
    "I will send the budget report to finance by Friday.",
    "We agreed that <script>alert(3)</script> stays out of the build.",
    "Action item: Bo books the <a href=\"https://evil.example\">room</a> ![map](https://evil.example/m.png) by Monday.",
    "The price is [4,250 dollars][ref] per unit.",
    "That's all for today.",
]


def test_minutes_carry_no_html_links_or_images_from_what_was_said(bm25_api: Any) -> None:
    api = bm25_api
    headers = api.headers(api.token("acme"))
    _post(api, headers, "minutes", MINUTES_TEXTS, title="Launch [review](javascript:alert(4)) <img src=y>",
          participants=["S1", "<script>alert(5)</script>", "![face](https://evil.example/face.png)"])
    names = {"S1": "Ana <img src=z onerror=alert(6)>", "S2": "[Bo](https://evil.example)", "S3": "Cy `code` *x*"}
    assert api.client.put("/v1/meetings/minutes/speakers", json={"speakers": names},
                          headers=headers).status_code == 200
    assert api.client.post("/v1/meetings/minutes/close", headers=headers).status_code == 200
    r = api.client.get("/v1/meetings/minutes/export?format=md", headers=headers)
    assert r.status_code == 200
    minutes = r.text
    ledger = api.client.get("/v1/meetings/minutes/ledger", headers=headers).json()
    said = [item["text"] for kind in ("decisions", "todos", "open_questions", "facts") for item in ledger[kind]]
    assert any("onerror" in text for text in said) and any("javascript:" in text for text in said), said

    renderer = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    tokens = [t for block in renderer.parse(minutes) for t in [block, *(block.children or [])]]
    kinds = {t.type for t in tokens}
    assert not kinds & {"html_inline", "html_block", "link_open", "image"}, sorted(kinds)
    assert [t.content for t in tokens if t.type == "code_inline"] == ["minutes"]  # the meeting's id alone
    html = renderer.render(minutes)
    for tag in ("<img", "<a ", "<script"):
        assert tag not in html, (tag, html)
    # Escaped, not dropped: the words and the characters stay readable as text.
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "[portal](javascript:alert(2))" in html
    assert "Launch [review](javascript:alert(4)) &lt;img src=y&gt;" in html
    assert "Ana &lt;img src=z onerror=alert(6)&gt; (S1)" in html and "&lt;script&gt;alert(5)&lt;/script&gt;" in html


def test_the_meeting_id_stays_inside_its_code_span(bm25_api: Any) -> None:
    api = bm25_api
    headers = api.headers(api.token("acme"))
    meeting = "m`<img src=x onerror=alert(1)>`"
    _post(api, headers, meeting, ["Hello there.", "Goodbye."], title="A title")
    minutes = api.client.get(f"/v1/meetings/{meeting}/export", params={"format": "md"}, headers=headers).text
    html = MarkdownIt("commonmark", {"html": True}).render(minutes)
    assert "<img" not in html
    assert "<code>m`&lt;img src=x onerror=alert(1)&gt;`</code>" in html


@pytest.mark.backends("sqlite")  # headers of static pages: no store behind them
def test_every_response_says_nosniff_and_the_pages_carry_a_strict_policy(bm25_api: Any) -> None:
    client = bm25_api.client
    token = bm25_api.token("acme")
    for path in ("/", "/app/app.js", "/app/app.css", "/app/icon.svg", "/docs", "/redoc",
                 "/docs-assets/swagger-ui.css"):
        r = client.get(path)
        assert r.status_code == 200, path
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["x-frame-options"] == "DENY", path
        assert r.headers["referrer-policy"] == "no-referrer", path
        policy = dict(part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";"))
        assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'", path
        assert policy["base-uri"] == "'none'" and policy["form-action"] == "'self'", path
        assert policy["default-src"] == "'self'", path
        assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"], path
    page = dict(part.strip().split(" ", 1) for part in client.get("/").headers["content-security-policy"].split(";"))
    assert page["script-src"] == "'self'" and page["style-src"] == "'self'" and page["media-src"] == "'self' blob:"
    # The page itself has nothing inline for the policy to refuse.
    index = client.get("/").text
    assert re.findall(r"<script[^>]*>", index) == ['<script src="/app/app.js">'] and " style=" not in index
    # The API's answers (errors, refusals and JSON alike) say nosniff too.
    for r in (client.get("/v1/meetings"), client.get("/v1/meetings", headers={"Authorization": f"Bearer {token}"}),
              client.get("/healthz"), client.get("/openapi.json"), client.get("/app/nothing.js")):
        assert r.headers["x-content-type-options"] == "nosniff", r.url
