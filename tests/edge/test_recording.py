"""The edge keeps what it heard as Ogg Opus chunks beside the outbox, prunes them after the retention, and
uploads them (idempotently, resuming after a network loss) where the cloud's policy keeps audio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from meetmem.edge import audio
from meetmem.edge.errors import CloudError
from meetmem.edge.recording import AudioKeeper, OggOpusWriter, upload_pending
from meetmem.edge.sync import CloudClient
from meetmem.store.audio import ogg_info

DEMO_AUDIO = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    """The first 130 s of the demo meeting's recording (espeak-ng voices), 16 kHz int16."""
    return np.concatenate(list(audio.read_file(DEMO_AUDIO)))[: 130 * 16000]


def _feed(keeper: AudioKeeper, samples: np.ndarray, start: float = 0.0, block: int = 16000) -> None:
    for i in range(0, len(samples), block):
        keeper.feed(samples[i : i + block], start + i / 16000)


def test_chunks_cover_what_was_heard_on_the_meetings_clock(speech: np.ndarray, tmp_path: Path) -> None:
    keeper = AudioKeeper(tmp_path / "audio", "m", chunk_seconds=60)
    _feed(keeper, speech)
    keeper.close()
    chunks = keeper.chunks()
    assert [(c.chunk_seq, c.start, c.duration) for c in chunks] == [(0, 0.0, 60.0), (1, 60.0, 60.0), (2, 120.0, 10.0)]
    decoded = []
    for chunk in chunks:
        info = ogg_info(chunk.path.read_bytes())
        assert info.codec == "opus" and info.duration == pytest.approx(chunk.duration, abs=0.03)
        assert chunk.state == "pending" and chunk.sha256 and not list(tmp_path.glob("audio/*.part"))
        decoded.append(np.concatenate(list(audio.read_file(chunk.path))))
    joined = np.concatenate(decoded)
    assert abs(len(joined) - len(speech)) < 16000 * 0.05
    # Lossy, but the same speech: the loudness envelope of every second matches the original closely.
    n = min(len(joined), len(speech)) // 16000
    env = lambda x: np.sqrt((x[: n * 16000].astype(np.float64).reshape(n, 16000) ** 2).mean(axis=1))  # noqa: E731
    assert np.corrcoef(env(joined), env(speech))[0, 1] > 0.98
    # Opus at 24 kbit/s: about 3 kB a second, a tenth of 16-bit PCM's 32 kB.
    assert keeper.disk_bytes() < 130 * 4000
    keeper.shutdown()


def test_a_clock_jump_starts_a_new_chunk_and_numbers_go_on(speech: np.ndarray, tmp_path: Path) -> None:
    keeper = AudioKeeper(tmp_path / "a", "m", chunk_seconds=60)
    _feed(keeper, speech[: 5 * 16000], start=0.0)
    _feed(keeper, speech[: 3 * 16000], start=40.0)  # a resumed input: the clock jumped ahead
    keeper.shutdown()
    again = AudioKeeper(tmp_path / "a", "m", chunk_seconds=60)  # a restart continues the numbering
    _feed(again, speech[: 2 * 16000], start=50.0)
    again.close()
    assert [(c.chunk_seq, c.start, c.duration) for c in again.chunks()] == [(0, 0.0, 5.0), (1, 40.0, 3.0),
                                                                           (2, 50.0, 2.0)]
    again.shutdown()


def test_retention_removes_old_chunks_uploaded_or_not(speech: np.ndarray, tmp_path: Path) -> None:
    now = [1_000_000.0]
    keeper = AudioKeeper(tmp_path / "a", "m", chunk_seconds=2, retention_days=7, clock=lambda: now[0])
    _feed(keeper, speech[: 4 * 16000])
    now[0] += 3 * 86400
    _feed(keeper, speech[: 2 * 16000], start=4.0)
    keeper.close()
    old = keeper.chunks()[:2]
    keeper.mark(old[0], "uploaded")
    now[0] += 4 * 86400 + 1  # the first two are now older than 7 days, the last is 4 days old
    assert keeper.prune() == 2
    assert [c.chunk_seq for c in keeper.chunks()] == [2]
    assert not any(c.path.exists() for c in old)
    keeper.shutdown()


def test_upload_follows_the_policy_is_idempotent_and_resumes(speech: np.ndarray, tmp_path: Path,
                                                             serve_factory: Any, token_maker: Any) -> None:
    serve = serve_factory()
    serve.start()
    token = token_maker(serve.db, "acme")
    api = httpx.Client(base_url=serve.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    body = {"device_id": "glasses", "segments": [{"seq": 0, "start": 0.5, "end": 5.6, "text": "Good morning"}]}
    assert api.post("/v1/meetings/m/segments", json=body).status_code == 200
    keeper = AudioKeeper(tmp_path / "a", "m", chunk_seconds=10)
    _feed(keeper, speech[: 25 * 16000])
    keeper.close()

    # The cloud is away: the chunks stay pending and the error says so.
    away = CloudClient("http://127.0.0.1:9", token, timeout=2)
    with pytest.raises(CloudError):
        upload_pending(keeper, away, "glasses")
    assert len(keeper.chunks("pending")) == 3

    client = CloudClient(serve.url, token)
    # Off by default on the cloud: the audio stays on the device, and is not offered again.
    assert upload_pending(keeper, client, "glasses") == 0
    assert [c.state for c in keeper.chunks()] == ["kept-local"] * 3
    assert api.get("/v1/meetings/m/audio").status_code == 404

    assert api.put("/v1/meetings/m/audio/policy", json={"keep": True}).status_code == 200
    for chunk in keeper.chunks():
        keeper.mark(chunk, "pending")
    # A network loss after the first chunk went up: the rest stays pending and goes up on the next try.
    flaky = _FailAfter(client, 1)
    with pytest.raises(CloudError):
        upload_pending(keeper, flaky, "glasses")
    assert [c.state for c in keeper.chunks()] == ["uploaded", "pending", "pending"]
    assert upload_pending(keeper, client, "glasses") == 2
    # A lost acknowledgement: the same chunk again adds nothing.
    first = keeper.chunks()[0]
    again = client.put_audio_chunk("m", "glasses", 0, first.start, first.path.read_bytes())
    assert again["new"] is False
    stored = api.get("/v1/meetings/m/audio/chunks").json()
    assert [(c["chunk_seq"], c["start"], c["sha256"]) for c in stored] == [
        (c.chunk_seq, c.start, c.sha256) for c in keeper.chunks()]
    whole = api.get("/v1/meetings/m/audio")
    assert whole.status_code == 200 and ogg_info(whole.content).duration == pytest.approx(25.0, abs=0.1)
    client.close()
    away.close()
    api.close()
    keeper.shutdown()


class _FailAfter:
    """A cloud client whose network goes away after `n` uploads (the real client underneath)."""

    def __init__(self, client: CloudClient, n: int) -> None:
        self.client = client
        self.left = n

    def put_audio_chunk(self, *args: Any) -> Any:
        if self.left == 0:
            raise CloudError(None, "ConnectError: the network went away")
        self.left -= 1
        return self.client.put_audio_chunk(*args)


def test_the_writer_pads_a_partial_frame(tmp_path: Path) -> None:
    path = tmp_path / "short.ogg"
    with OggOpusWriter(path) as writer:
        writer.write(np.zeros(100, np.int16))
    assert ogg_info(path.read_bytes()).duration == pytest.approx(0.02, abs=0.001)
