"""The meeting app in chromium: sign in, open the demo meeting, jump from the ledger to the transcript and
the audio, live captions, search, ask, export; screenshots at phone and desktop widths.

Playwright launches Debian's chromium by path (no browser download) against a real `meetmem serve` on a
loopback port holding the demo meeting and its audio. Where no chromium is installed (scripts/test.sh
installs it with apt-get), the tests skip and say so. Screenshots go to `test-artifacts/` (or
`MEETMEM_TEST_ARTIFACTS`).
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import icalendar
import pytest
import srt
import webvtt
from meeting_page import (
    CHROMIUM_FLAGS,
    DEMO_MEETING,
    App,
    artifact,
    open_demo,
    sign_in,
    wait_playing_near,
)

pytestmark = pytest.mark.model  # the server loads the real MiniLM model


def _panel_shows(page: Any, selector: str) -> bool:
    """Whether the element lies inside the visible part of the transcript column."""
    return page.evaluate(
        """(sel) => { const el = document.querySelector(sel); const panel = el.closest('.transcript-col');
            const a = el.getBoundingClientRect(), b = panel.getBoundingClientRect();
            return a.top >= b.top - 1 && a.bottom <= b.bottom + 1 && a.top >= 0 && a.bottom <= innerHeight; }""",
        selector)


def test_sign_in_and_the_meetings_list(page: Any, app: App) -> None:
    page.goto(app.url + "/")
    assert page.is_visible("#signin-view")
    page.fill("#token-input", "mm_not_a_real_token")
    page.press("#token-input", "Enter")
    page.wait_for_function("() => document.getElementById('signin-error').textContent.length > 0")
    assert "not accepted" in page.text_content("#signin-error")
    assert page.is_visible("#signin-view")
    sign_in(page, app)
    row = page.locator("#meetings tbody tr", has_text=DEMO_MEETING)
    page.wait_for_function("() => [...document.querySelectorAll('#meetings td')].every(td => td.textContent !== '…')")
    cells = [c.strip() for c in row.locator("td").all_text_contents()]
    assert cells[1] == "4 min" and cells[3] == "closed" and cells[4] == "6"
    assert set(cells[2].split(", ")) == {"Alice", "Bob", "Dana", "Chen Wei"}
    # The token stays in this tab only, and a reload keeps the session.
    assert page.evaluate("sessionStorage.getItem('meetmem.token')") == app.token
    assert page.evaluate("localStorage.length") == 0
    page.reload()
    page.wait_for_selector("#meetings tbody tr")
    page.click("#signout")
    assert page.is_visible("#signin-view")
    assert page.evaluate("sessionStorage.getItem('meetmem.token')") is None
    # The link `meetmem demo --serve` prints signs in at once, and the token leaves the address bar.
    page.goto(f"{app.url}/#token={app.token}")
    page.wait_for_selector("#meetings tbody tr")
    assert page.evaluate("location.hash") == "#/" and app.token not in page.url


def test_a_ledger_item_jumps_to_its_segment_and_plays_from_there(page: Any, app: App) -> None:
    with app.client() as client:
        ledger = client.get(f"/v1/meetings/{DEMO_MEETING}/ledger").json()
    todo = ledger["todos"][-1]  # the last: the transcript must scroll to reach it
    segment_id = todo["source"]["segment_ids"][0]
    open_demo(page, app)
    assert not _panel_shows(page, f"#seg-{segment_id}")
    page.click(f"#ledger button[data-item='{todo['id']}']")
    page.wait_for_selector(f"#seg-{segment_id}.current")
    assert _panel_shows(page, f"#seg-{segment_id}")
    wait_playing_near(page, todo["source"]["start"])
    # The same with the keyboard: a decision, focused and activated with Enter.
    decision = ledger["decisions"][0]
    page.focus(f"#ledger button[data-item='{decision['id']}']")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#seg-{decision['source']['segment_ids'][0]}.current")
    assert _panel_shows(page, f"#seg-{decision['source']['segment_ids'][0]}")
    wait_playing_near(page, decision["source"]["start"])
    # A summary line jumps too.
    page.locator("#summary ul.l2 button.time").first.click()
    page.wait_for_selector("#transcript li.current")
    assert page.errors == []


def test_live_captions_arrive_while_segments_are_posted(page: Any, app: App) -> None:
    meeting = "live-standup"
    lines = ["Morning all, quick standup today.", "The build is green again since last night.",
             "Dana will send the budget to finance by Friday.", "We decided to ship the beta on March 3rd."]
    with app.client() as client:
        first = {"device_id": "glasses-1", "segments": [{"seq": 0, "start": 0.0, "end": 2.5, "speaker": "Alice",
                                                         "text": lines[0]}]}
        assert client.post(f"/v1/meetings/{meeting}/segments", json=first).status_code == 200
        sign_in(page, app)
        page.click(f"#meetings a:has-text('{meeting}')")
        page.wait_for_selector("#transcript li.segment")
        assert page.is_visible("#live-badge")
        assert page.text_content("#audio-note") == "No audio is kept for this meeting."
        for seq, text in enumerate(lines[1:], start=1):
            body = {"device_id": "glasses-1", "segments": [{"seq": seq, "start": seq * 3.0, "end": seq * 3.0 + 2.5,
                                                            "speaker": "Bob" if seq % 2 else "Dana", "text": text}]}
            assert client.post(f"/v1/meetings/{meeting}/segments", json=body).status_code == 200
            page.wait_for_selector(f"#transcript li.segment:has-text('{text}')")
        # A correction arrives: the corrected segment is struck through, with the correction beside it.
        wrong = client.get(f"/v1/meetings/{meeting}/segments").json()[3]["segment_id"]
        fix = {"device_id": "glasses-1", "segments": [{"seq": 4, "start": 9.0, "end": 11.5, "speaker": "Dana",
                                                       "text": "We decided to ship the beta on March 13th.",
                                                       "supersedes": wrong}]}
        assert client.post(f"/v1/meetings/{meeting}/segments", json=fix).status_code == 200
        page.wait_for_selector(f"#seg-{wrong}.superseded del:has-text('March 3rd')")
        assert "March 13th" in page.text_content(f"#seg-{wrong} ins")
        # The correction stands beside what it corrects, not as a row of its own.
        assert page.locator("#transcript li.segment").count() == 4
        # A hit on the correction jumps to the row that shows it.
        page.fill("#search-input", "ship the beta March 13th")
        page.press("#search-input", "Enter")
        page.locator("#search-results button.item", has_text="13th").first.click()
        page.wait_for_selector(f"#seg-{wrong}.current")
        # The owner changes: the ledger keeps both todos, the first one superseded.
        change = {"device_id": "glasses-1", "segments": [{"seq": 5, "start": 15.0, "end": 17.5, "speaker": "Bob",
                                                          "text": "Actually Priya takes it, Dana is away."}]}
        assert client.post(f"/v1/meetings/{meeting}/segments", json=change).status_code == 200
        # The meeting ends; its ledger appears without a reload.
        assert client.post(f"/v1/meetings/{meeting}/close").status_code == 200
    page.wait_for_selector("#ledger ul.todos li.superseded del:has-text('send the budget to finance')",
                           timeout=60_000)
    assert page.locator("#ledger ul.todos li:not(.superseded)", has_text="Priya").count() == 1
    page.wait_for_function("() => document.getElementById('live-badge').hidden")
    assert page.errors == []


def test_search_highlights_hits(page: Any, app: App) -> None:
    open_demo(page, app)
    page.fill("#search-input", "hinge drop tests")
    page.press("#search-input", "Enter")
    page.wait_for_selector("#search-results mark")
    marks = {m.lower() for m in page.locator("#search-results mark").all_text_contents()}
    assert {"hinge", "drop"} <= marks
    assert page.locator("#transcript li.segment.hit").count() >= 1
    first = page.locator("#search-results button.item").first
    first.click()
    page.wait_for_selector("#transcript li.segment.current.hit")


def test_ask_by_typing_shows_citations_and_the_manifest(page: Any, app: App) -> None:
    open_demo(page, app)
    page.fill("#ask-input", "When is the revised quote due?")
    page.press("#ask-input", "Enter")
    page.wait_for_selector("#answer .answer-text")
    assert "March 12th" in page.text_content("#answer .answer-text")
    citation = page.locator("#answer ol.citations button").first
    assert "March 12th" in citation.text_content()
    citation.click()
    page.wait_for_selector("#transcript li.segment.current:has-text('March 12th')")
    assert 114.0 <= wait_playing_near(page, 114.0, within=2.0) <= 116.0
    assert not page.is_visible("#answer details.manifest table")
    page.click("#answer details.manifest summary")
    assert page.locator("#answer details.manifest tbody tr").count() >= 1
    # Nothing of the page's own making leaks into the text (an unset value, an object printed whole).
    text = page.text_content("#meeting-view")
    assert "null" not in text and "undefined" not in text and "[object" not in text


def test_every_export_downloads_and_parses(page: Any, app: App, tmp_path: Path) -> None:
    open_demo(page, app)
    files: dict[str, str] = {}
    for fmt in ("md", "srt", "vtt", "json", "ics", "csv"):
        with page.expect_download() as info:
            page.click(f"[data-export='{fmt}']")
        download = info.value
        assert download.suggested_filename == f"{DEMO_MEETING}.{fmt}"
        target = tmp_path / download.suggested_filename
        download.save_as(target)
        files[fmt] = target.read_text(encoding="utf-8")
    cues = list(srt.parse(files["srt"], ignore_errors=False))
    captions = webvtt.from_string(files["vtt"])
    doc = json.loads(files["json"])
    assert len(cues) == len(captions) == len(doc["segments"]) == 52
    assert cues[0].content.startswith("Alice: ") and captions[0].voice == "Alice"
    md = files["md"]
    assert md.startswith(f"# {DEMO_MEETING}\n")
    assert re.search(r"^\| \[01:54\] \| Bob \| send the revised quote to the supplier \| March 12th", md, re.M)
    # The minutes list the ledger's decisions, each with its time (the JSON export carries the same ledger).
    decisions = doc["ledger"]["decisions"]
    listed = re.findall(r"^- \[\d\d:\d\d\] ", md.split("## Decisions")[1].split("## To do")[0], re.M)
    assert len(decisions) >= 3 and len(listed) == len(decisions)
    # The open todos as calendar tasks and tracker rows: each todo of the ledger that still stands, once.
    standing = [t for t in doc["ledger"]["todos"] if t["status"] == "current"]
    tasks = icalendar.Calendar.from_ical(files["ics"]).walk("VTODO")
    rows = list(csv.DictReader(io.StringIO(files["csv"])))
    assert standing and len(tasks) == len(rows) == len(standing)
    assert "send the revised quote to the supplier" in {str(t["SUMMARY"]) for t in tasks}
    assert all(r["link"].startswith(app.url) and f"#/m/{DEMO_MEETING}?t=" in r["link"] for r in rows)


def test_hold_to_speak_asks_aloud(playwright: Any, app: App, tmp_path: Path) -> None:
    """The browser's microphone is a WAV of the question (chromium's fake capture device); the page records
    it with MediaRecorder while the button is held and sends it to /ask/voice."""
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        pytest.skip("needs espeak-ng and sox to speak the question (apt-get install espeak-ng sox)")
    spoken = tmp_path / "spoken.wav"
    question = tmp_path / "question.wav"
    subprocess.run(["espeak-ng", "-s", "140", "-w", str(spoken), "When is the revised quote due?"], check=True)
    # 16 kHz 16-bit mono with a second of silence after it: the fake device loops the file.
    subprocess.run(["sox", str(spoken), "-r", "16000", "-b", "16", "-c", "1", str(question), "pad", "0.3", "1.0"],
                   check=True)
    seconds = float(subprocess.run(["soxi", "-D", str(question)], capture_output=True, text=True,
                                   check=True).stdout)
    flags = [*CHROMIUM_FLAGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
             f"--use-file-for-fake-audio-capture={question}"]
    browser = playwright.chromium.launch(executable_path=playwright.executable, args=flags)
    try:
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        context.grant_permissions(["microphone"], origin=app.url)
        page = context.new_page()
        open_demo(page, app)
        page.locator("#hold-to-speak").focus()
        page.keyboard.down(" ")  # held with the keyboard: Space down ... Space up
        page.wait_for_function(f"() => Number(document.getElementById('hold-to-speak').dataset.recordedMs) >= "
                               f"{int(seconds * 1000)}", timeout=30_000)
        page.keyboard.up(" ")
        page.wait_for_selector("#answer .answer-text", timeout=120_000)
        heard = page.text_content("#answer .heard").lower()
        assert "quote" in heard, heard
        assert "March 12th" in page.text_content("#answer .answer-text")
        page.locator("#answer ol.citations button").first.click()
        page.wait_for_selector("#transcript li.segment.current:has-text('March 12th')")
    finally:
        browser.close()


@pytest.mark.parametrize(("name", "viewport"), [("desktop", {"width": 1366, "height": 900}),
                                                ("phone", {"width": 390, "height": 844})])
def test_screenshots_at_phone_and_desktop_widths(browser: Any, app: App, name: str, viewport: dict) -> None:
    context = browser.new_context(viewport=viewport, device_scale_factor=1, is_mobile=name == "phone",
                                  has_touch=name == "phone")
    page = context.new_page()
    try:
        open_demo(page, app)
        # Nothing sticks out sideways on a phone: the page is as wide as the screen.
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.click("#ledger ul.todos li:first-child button")
        page.wait_for_selector("#transcript li.current")
        page.evaluate("document.getElementById('player').pause()")
        if name == "desktop":  # an answer beside the transcript, its citations ready to play
            page.fill("#ask-input", "When is the revised quote due?")
            page.press("#ask-input", "Enter")
            page.wait_for_selector("#answer .answer-text")
            page.evaluate("document.querySelector('.side').scrollTop = 0")
        page.mouse.move(0, 0)  # no hover highlight in the picture
        path = artifact(f"meeting-{name}.png")
        page.screenshot(path=str(path))
        assert path.stat().st_size > 10_000
    finally:
        context.close()


def test_speakers_show_by_their_names(page: Any, app: App) -> None:
    """The transcript and an answer's citations show the speaker map's names, the label on hover."""
    meeting = "named-speakers"
    lines = [("S1", "Let's look at the casing first."), ("S2", "Hi, I'm Priya from finance."),
             ("S2", "The casing budget is forty thousand euros and we are not using titanium."),
             ("S3", "I will book the meeting room.")]
    with app.client() as client:
        rows = [{"seq": i, "start": 4.0 * i, "end": 4.0 * i + 3.0, "speaker": who, "text": text}
                for i, (who, text) in enumerate(lines)]
        assert client.post(f"/v1/meetings/{meeting}/segments",
                           json={"device_id": "glasses-1", "segments": rows}).status_code == 200
        assert client.put(f"/v1/meetings/{meeting}/speakers", json={"speakers": {"S1": "Ana"}}).status_code == 200
    sign_in(page, app)
    page.click(f"#meetings a:has-text('{meeting}')")
    page.wait_for_selector("#transcript li.segment")
    shown = page.locator("#transcript li.segment .speaker").all_text_contents()
    assert shown == ["Ana", "Priya", "Priya", "S3"], shown
    assert page.get_attribute("#transcript li.segment .speaker >> nth=1", "title") == "speaker S2"
    page.fill("#ask-input", "How much is the casing budget?")
    page.press("#ask-input", "Enter")
    page.wait_for_selector("#answer ol.citations li")
    assert "(Priya, 00:08)" in page.text_content("#answer .answer-text")
    assert page.locator("#answer ol.citations li", has_text="forty thousand").first.text_content().count("Priya: ") == 1
    assert page.errors == []
