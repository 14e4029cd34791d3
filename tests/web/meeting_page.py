"""What the browser tests of the meeting app share: the running server's address and token, signing in,
opening the demo meeting, where the player is on the meeting's clock, and where screenshots go."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

DEMO_MEETING = "demo-launch-review"
DEMO_DATA = Path(str(resources.files("meetmem.demo_data").joinpath("sample_meeting.jsonl"))).parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  # The page plays audio on a click; headless chromium has no one to click for it.
                  "--autoplay-policy=no-user-gesture-required"]
ARTIFACTS = Path(os.environ.get("MEETMEM_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"))


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class App:
    """A running `meetmem serve` with the demo meeting: its URL, database and a token of its tenant."""

    url: str
    db: Path
    token: str

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token or self.token}"},
                            timeout=60)


def sign_in(page: Any, app: App) -> None:
    page.goto(app.url + "/")
    page.fill("#token-input", app.token)
    page.press("#token-input", "Enter")
    page.wait_for_selector("#meetings tbody tr")


def open_demo(page: Any, app: App) -> None:
    sign_in(page, app)
    page.click(f"#meetings a:has-text('{DEMO_MEETING}')")
    page.wait_for_selector("#transcript li.segment")
    page.wait_for_selector("#ledger ul.todos li")
    # The page knows where the meeting has audio (its chunks' listing); it fetches none until asked to play.
    page.wait_for_function("() => document.getElementById('player').dataset.audio === 'ready'")


def wait_playing_near(page: Any, at: float, within: float = 1.5) -> float:
    """Wait until the player plays within `within` s after `at` on the meeting's clock; returns where it is.

    The player holds one stretch of the meeting's audio: its position 0 is the stretch's start
    (`data-offset`, from the response's X-Audio-Start)."""
    page.wait_for_function(
        """([at, within]) => { const p = document.getElementById('player');
            if (p.dataset.offset === undefined || p.readyState < 1) return false;
            const t = Number(p.dataset.offset) + p.currentTime; return t >= at - 0.05 && t <= at + within; }""",
        arg=[at, within], timeout=30_000)
    return meeting_time(page)


def meeting_time(page: Any) -> float:
    return page.evaluate("(() => { const p = document.getElementById('player'); "
                         "return Number(p.dataset.offset) + p.currentTime; })()")


def artifact(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / name
