"""Issue 30 in the browser: the page's Content-Security-Policy and frame refusal (5), a token in the link that
differs from the signed-in one (6), partial captions (7), subtitles as Chromium's own WebVTT parser reads
them (9), and audio fetched by the stretch around the time played, never the whole meeting.

Each runs the real page in chromium against the real `meetmem serve` of conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from meeting_page import DEMO_MEETING, App, artifact, meeting_time, open_demo, sign_in, wait_playing_near

from meetmem.edge.recording import OggOpusWriter

pytestmark = [pytest.mark.model, pytest.mark.security]

FOREIGN = "http://foreign.example"


def _csp_violations(page: Any) -> list[str]:
    return [line for line in page.console if "Content Security Policy" in line]


def test_the_page_refuses_foreign_frames_and_injected_scripts(page: Any, app: App) -> None:
    sign_in(page, app)
    # A script that found its way into the page does not run, nor does an inline handler.
    page.evaluate("""() => { const s = document.createElement('script'); s.textContent = 'window.injected = 1';
        document.body.append(s); const img = document.createElement('img'); img.setAttribute('src', 'data:,x');
        img.setAttribute('onerror', 'window.injected = 2'); document.body.append(img); }""")
    page.wait_for_timeout(300)  # the image's load attempt happens on the next tasks
    assert page.evaluate("() => window.injected") is None
    assert any("script-src" in line for line in _csp_violations(page))

    # Another site frames the page: the browser refuses to show it there.
    page.route(f"{FOREIGN}/**", lambda route: route.fulfill(
        content_type="text/html", body=f'<h1>Win a prize</h1><iframe id="f" src="{app.url}/"></iframe>'))
    page.goto(f"{FOREIGN}/prize")
    page.wait_for_timeout(1000)
    framed = [f for f in page.frames if f is not page.main_frame]
    # Chromium shows its own error page in the frame in place of the app.
    assert framed and all(not f.url.startswith(app.url) for f in framed), [f.url for f in framed]
    assert all(f.query_selector("#signin-form") is None for f in framed)


def test_the_page_does_all_it_does_within_its_policy(page: Any, app: App) -> None:
    open_demo(page, app)
    page.click("#ledger ul.todos li:first-child button")
    wait_playing_near(page, page.evaluate(
        "() => Number(document.querySelector('#transcript li.current').dataset.start)"))
    page.evaluate("() => document.getElementById('player').pause()")
    # Sign in, list, transcript, ledger, and audio played from a blob: URL.
    assert _csp_violations(page) == [] and page.errors == []


def test_the_api_pages_work_under_their_policy(page: Any, app: App) -> None:
    page.goto(app.url + "/docs")
    page.wait_for_selector(".opblock-tag", timeout=30_000)
    assert page.locator(".opblock").count() > 20
    page.goto(app.url + "/redoc")
    page.locator("h2", has_text="Is the service ready to answer?").wait_for(timeout=30_000)
    assert page.locator("li[data-item-id]").count() > 10  # the menu of tags and routes
    # ReDoc's remote logo is refused (no internet is needed, nor asked for); nothing of the pages' own.
    violations = [line for line in _csp_violations(page) if "cdn.redoc.ly" not in line]
    assert violations == [] and page.errors == [], (violations, page.errors)


def _other_token(app: App, meetmem_cli: Callable[..., Any], tenant: str) -> str:
    made = meetmem_cli("token", "create", "--tenant", tenant, db=app.db)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_a_link_with_another_token_asks_before_switching(page: Any, app: App,
                                                        meetmem_cli: Callable[..., Any]) -> None:
    other = _other_token(app, meetmem_cli, "someone-else")
    sent_with_other: list[str] = []
    page.on("request", lambda r: sent_with_other.append(r.url)
            if r.headers.get("authorization") == f"Bearer {other}" else None)
    sign_in(page, app)
    page.goto(f"{app.url}/#token={other}")
    page.wait_for_selector("#switch-view:not([hidden])")
    # Read and gone from the address bar; this tab's sign-in unchanged; nothing sent with the link's token.
    assert page.evaluate("() => location.hash") == "#/" and other not in page.url
    assert page.evaluate("() => sessionStorage.getItem('meetmem.token')") == app.token
    assert sent_with_other == []
    assert page.text_content("#switch-offered") == f"…{other[-6:]}"
    assert page.text_content("#switch-current") == f"…{app.token[-6:]}"
    page.screenshot(path=str(artifact("switch-tokens.png")))
    page.click("#switch-keep")
    page.wait_for_selector(f"#meetings a:has-text('{DEMO_MEETING}')")
    assert page.evaluate("() => sessionStorage.getItem('meetmem.token')") == app.token and sent_with_other == []

    # Asked again, the user takes the link's token: the other tenant's (empty) list.
    page.goto(f"{app.url}/#token={other}")
    page.wait_for_selector("#switch-view:not([hidden])")
    page.click("#switch-use")
    page.wait_for_selector("#list-empty:not([hidden])")
    assert page.evaluate("() => sessionStorage.getItem('meetmem.token')") == other
    assert page.evaluate("() => location.hash") == "#/" and page.errors == []

    # The same token again, or a link in a tab signed in with nothing, asks nothing.
    page.goto(f"{app.url}/#token={other}")
    page.wait_for_selector("#list-empty:not([hidden])")
    assert page.is_hidden("#switch-view")


def test_a_partial_caption_is_a_passing_line_the_segment_replaces(page: Any, app: App) -> None:
    meeting = "partial-captions"
    with app.client() as client:
        first = {"device_id": "glasses-1", "segments": [{"seq": 0, "start": 0.0, "end": 2.0, "speaker": "Ana",
                                                         "text": "Let's begin."}]}
        assert client.post(f"/v1/meetings/{meeting}/segments", json=first).status_code == 200
        sign_in(page, app)
        page.click(f"#meetings a:has-text('{meeting}')")
        page.wait_for_selector("#transcript li.segment")
        # The stream is open once the server counts a follower for the meeting.
        partial = {"device_id": "glasses-1", "start": 3.0, "heard_until": 4.0, "text": "The budget is"}
        for _ in range(100):
            r = client.post(f"/v1/meetings/{meeting}/partials", json=partial)
            assert r.status_code == 202, r.text
            if r.json()["followers"]:
                break
            page.wait_for_timeout(100)
        page.wait_for_selector("#live-caption:not([hidden]):has-text('The budget is')")
        partial = {**partial, "heard_until": 5.5, "text": "The budget is forty thousand"}
        assert client.post(f"/v1/meetings/{meeting}/partials", json=partial).status_code == 202
        page.wait_for_selector("#live-caption:has-text('forty thousand')")
        page.locator(".meeting-head").screenshot(path=str(artifact("partial-caption-head.png")))
        page.locator("#transcript-section").screenshot(path=str(artifact("partial-caption.png")))
        assert page.locator("#transcript > li").count() == 1
        assert page.locator("#seg-undefined").count() == 0
        final = {"device_id": "glasses-1", "segments": [{"seq": 1, "start": 3.0, "end": 6.0, "speaker": "Ana",
                                                         "text": "The budget is forty thousand euros."}]}
        assert client.post(f"/v1/meetings/{meeting}/segments", json=final).status_code == 200
    page.wait_for_selector("#transcript li.segment:has-text('forty thousand euros')")
    page.wait_for_selector("#live-caption", state="hidden")
    assert page.locator("#transcript > li").count() == 2
    assert page.locator("#seg-undefined").count() == 0 and page.errors == []


FORGED_TEXTS = ["Good morning everyone.", "00:00:30.000 ---> 00:00:40.000", "The build is green.",
                "Fine.\n\n99\n00:00:50.000 --> 00:00:59.000\nforged cue", "42\n00:01:00.000 -- > 00:01:05.000 x",
                "We ship <b>Friday</b> & not later.", "a ----> b --->> c", "Eight.", "Nine.", "Ten."]


def test_chromium_reads_one_subtitle_cue_per_segment(page: Any, app: App) -> None:
    meeting = "forged-subtitles"
    rows = [{"seq": i, "start": 5.0 * i, "end": 5.0 * i + 4.0, "speaker": "S1", "text": text}
            for i, text in enumerate(FORGED_TEXTS)]
    with app.client() as client:
        assert client.post(f"/v1/meetings/{meeting}/segments",
                           json={"device_id": "glasses-1", "segments": rows}).status_code == 200
        assert client.put(f"/v1/meetings/{meeting}/speakers",
                          json={"speakers": {"S1": "Eve ---> 00:00:01.000"}}).status_code == 200
    sign_in(page, app)
    # The export, fetched with the token as the page does, read by chromium's WebVTT parser in a <track>.
    cues = page.evaluate("""async (meeting) => {
        const token = sessionStorage.getItem('meetmem.token');
        const response = await fetch(`/v1/meetings/${meeting}/export?format=vtt`,
                                     { headers: { Authorization: `Bearer ${token}` } });
        const url = URL.createObjectURL(await response.blob());
        const video = document.createElement('video');
        const track = document.createElement('track');
        track.kind = 'subtitles'; track.default = true; track.src = url;
        video.append(track); document.body.append(video);
        await new Promise((resolve, reject) => { track.onload = resolve; track.onerror = reject; });
        return [...track.track.cues].map((c) => ({ start: c.startTime, text: c.getCueAsHTML().textContent }));
    }""", meeting)
    assert len(cues) == len(FORGED_TEXTS), cues
    assert [c["start"] for c in cues] == [5.0 * i for i in range(len(FORGED_TEXTS))]
    assert cues[1]["text"] == "00:00:30.000 -> 00:00:40.000"
    assert cues[5]["text"] == "We ship <b>Friday</b> & not later."
    assert _csp_violations(page) == []


def _tone(path: Path, seconds: float, freq: float) -> bytes:
    t = np.arange(int(seconds * 16000)) / 16000
    with OggOpusWriter(path) as writer:
        writer.write((np.sin(2 * np.pi * freq * t) * 8000).astype(np.int16))
    return path.read_bytes()


def _audio_requests(page: Any) -> list[str]:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/audio" in urlsplit(r.url).path else None)
    return requests


def _stretches(requests: list[str]) -> list[tuple[float, float]]:
    out = []
    for url in requests:
        parts = urlsplit(url)
        if parts.path.endswith("/audio"):
            query = parse_qs(parts.query)
            assert "start" in query and "end" in query, f"the whole meeting's audio was asked for: {url}"
            out.append((float(query["start"][0]), float(query["end"][0])))
    return out


def test_audio_is_fetched_by_the_stretch_around_the_time_played(page: Any, app: App) -> None:
    requests = _audio_requests(page)
    sign_in(page, app)
    page.click(f"#meetings a:has-text('{DEMO_MEETING}')")
    page.wait_for_selector("#ledger ul.todos li")
    page.wait_for_timeout(1000)
    assert _stretches(requests) == [], "audio was fetched before anything was played"
    page.wait_for_function("() => document.getElementById('player').dataset.audio === 'ready'")
    page.locator(".meeting-head").screenshot(path=str(artifact("audio-not-yet-played.png")))
    with app.client() as client:
        ledger = client.get(f"/v1/meetings/{DEMO_MEETING}/ledger").json()
    todo = ledger["todos"][-1]
    cited = todo["source"]["start"]
    page.click(f"#ledger button[data-item='{todo['id']}']")
    wait_playing_near(page, cited)
    [(start, end)] = _stretches(requests)
    assert start <= cited < end and cited - start <= 5 and end - start <= 600
    # A jump inside the stretch plays from what is already here.
    page.locator("#transcript li.segment button.time").nth(30).click()
    at = float(page.get_attribute("#transcript li.segment >> nth=30", "data-start"))
    if start <= at < end:
        wait_playing_near(page, at)
        assert len(_stretches(requests)) == 1
    assert page.errors == []


def test_playback_goes_on_to_the_next_recording_across_a_gap_of_days(page: Any, app: App, tmp_path: Path) -> None:
    meeting = "three-days-apart"
    later = 3 * 24 * 3600.0
    with app.client() as client:
        rows = [{"seq": 0, "start": 2.0, "end": 6.0, "text": "Day one: the kickoff."},
                {"seq": 1, "start": 14.0, "end": 19.0, "text": "We stop here for today."},
                {"seq": 2, "start": later + 1.0, "end": later + 5.0, "text": "Day four: picking up again."}]
        assert client.post(f"/v1/meetings/{meeting}/segments",
                           json={"device_id": "glasses-1", "segments": rows}).status_code == 200
        assert client.put(f"/v1/meetings/{meeting}/audio/policy", json={"keep": True}).status_code == 200
        for seq, (at, freq) in enumerate(((0.0, 440.0), (later, 660.0))):
            data = _tone(tmp_path / f"{seq}.ogg", 20.0, freq)
            r = client.put(f"/v1/meetings/{meeting}/audio/chunks/glasses-1/{seq}", params={"start": at},
                           content=data, headers={"Content-Type": "application/octet-stream"})
            assert r.status_code == 200, r.text
    requests = _audio_requests(page)
    sign_in(page, app)
    page.click(f"#meetings a:has-text('{meeting}')")
    page.wait_for_function("() => document.getElementById('player').dataset.audio === 'ready'")
    page.locator("#transcript li.segment button.time").nth(1).click()
    wait_playing_near(page, 14.0)
    # The first recording ends at 20 s; the page goes on to the next, three days on, and asks for no silence.
    wait_playing_near(page, later, within=3.0)
    stretches = _stretches(requests)
    assert stretches[0][0] == 11.0 and 19.5 <= stretches[0][1] <= 20.5, stretches
    assert stretches[1][0] == later and stretches[1][1] - later <= 600, stretches
    assert len(stretches) == 2 and meeting_time(page) >= later
    assert "of the meeting" in page.text_content("#audio-note") and page.errors == []
