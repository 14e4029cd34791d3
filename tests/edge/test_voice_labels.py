"""Speaker labels on real espeak-ng voices with the real voice-encoder weights (read from the resemblyzer
package without torch): the numpy network matches torch's own LSTM, voices keep their labels through a
meeting, the enrolled wearer is told apart, and the capture agent labels each segment."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.edge import audio, speakers, voice_encoder
from meetmem.edge.agent import CaptureAgent, CaptureOptions
from meetmem.edge.outbox import Outbox

pytestmark = pytest.mark.model

#: Four espeak-ng voices this encoder tells apart (cross-voice similarity <= 0.84, same voice >= 0.93).
VOICES = ("en-us", "en+f2", "en+Andy", "en-us+klatt")
LINES = ("Please send the quote to the supplier before Friday, and check the battery numbers again.",
         "We decided to use the aluminium casing for the first batch of glasses.",
         "The budget for the pilot is forty thousand euros, with a review in March.")
OPTIONS = speakers.SpeakerOptions(threshold=0.88, wearer_threshold=0.88)


@pytest.fixture(scope="module")
def encoder() -> voice_encoder.VoiceEncoder:
    return voice_encoder.VoiceEncoder()


def _float(clip: Any) -> np.ndarray:
    return clip.samples.astype(np.float32) / 32768.0


def test_numpy_encoder_matches_torch(encoder: voice_encoder.VoiceEncoder, make_speech: Callable[..., Any]) -> None:
    torch = pytest.importorskip("torch")
    state = torch.load(voice_encoder.weights_path(), map_location="cpu", weights_only=False)["model_state"]
    lstm = torch.nn.LSTM(40, 256, 3, batch_first=True)
    lstm.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("lstm.")})
    linear = torch.nn.Linear(256, 256)
    linear.load_state_dict({"weight": state["linear.weight"], "bias": state["linear.bias"]})
    mels = encoder.mel_frames(_float(make_speech(LINES[0])))[None, :160]
    with torch.no_grad():
        _, (hidden, _) = lstm(torch.from_numpy(mels))
        raw = torch.relu(linear(hidden[-1]))
        expected = (raw / raw.norm(dim=1, keepdim=True)).numpy()
    np.testing.assert_allclose(encoder.forward(mels), expected, atol=1e-4)


def test_mel_filters_are_slaney_triangles() -> None:
    filters = voice_encoder.mel_filterbank()
    assert filters.shape == (40, 201)
    assert (filters >= 0).all() and (filters.sum(axis=1) > 0).all()
    # Slaney area normalisation: each triangle's peak is 2 / its width in Hz (the first: 0 to ~ 2 * 52 Hz).
    peaks = filters.argmax(axis=1)
    assert (np.diff(peaks) >= 0).all()


def test_a_file_that_is_not_a_checkpoint_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(Exception, match="."):
        voice_encoder.load_legacy_checkpoint(bad)
    import pickle

    bad.write_bytes(pickle.dumps(12345))
    with pytest.raises(ValueError, match="not a legacy PyTorch checkpoint"):
        voice_encoder.load_legacy_checkpoint(bad)


def test_voices_keep_their_labels_through_a_meeting(encoder: voice_encoder.VoiceEncoder,
                                                     make_speech: Callable[..., Any]) -> None:
    tracker = speakers.SpeakerTracker(encoder, OPTIONS)
    turns = [(voice, line) for line in LINES for voice in VOICES]
    labels = [tracker.label(_float(make_speech(line, voice=voice))) for voice, line in turns]
    by_voice: dict[str, set[str]] = {}
    for (voice, _), label in zip(turns, labels, strict=True):
        by_voice.setdefault(voice, set()).add(label)
    assert all(len(found) == 1 for found in by_voice.values()), by_voice
    assert labels[:4] == ["S1", "S2", "S3", "S4"]  # in order of first speech
    assert tracker.utterances == len(turns) and tracker.embed_time > 0


def test_a_short_reply_of_a_known_voice_joins_it_rather_than_starting_a_voice(
        encoder: voice_encoder.VoiceEncoder, make_speech: Callable[..., Any]) -> None:
    """Replies of 1.5 s ("No, not yet.") are 0.72-0.82 alike to their own voice's long sentence here, below the
    0.88 threshold: at one threshold for every length each started a voice of its own (6 labels for 3 people).
    A turn shorter than `new_voice_seconds` joins at less (0.64 at 1.5 s), and each joins its own voice; a long
    sentence of a fourth voice still starts one."""
    known = ("en-us", "en+f2", "en+Andy")
    long_turns = [_float(make_speech(LINES[0], voice=voice)) for voice in known]
    replies = [_float(make_speech("No, not yet.", voice=voice)) for voice in known]
    assert all(1.0 < len(r) / 16000 < 2.0 for r in replies)
    labels = {}
    for rule in ({}, {"new_voice_seconds": 0.0}):  # the edge's rule, then one threshold for every length
        tracker = speakers.SpeakerTracker(encoder, speakers.SpeakerOptions(threshold=0.88, wearer_threshold=0.88,
                                                                           **rule))
        assert [tracker.label(audio) for audio in long_turns] == ["S1", "S2", "S3"]
        labels[bool(rule)] = [tracker.label(audio) for audio in replies]
        if not rule:
            assert tracker.label(_float(make_speech(LINES[1], voice="en+f4"))) == "S4"
            assert tracker.join_threshold(1.5) == pytest.approx(0.88 - 0.33 * 1.5 / 2)
            assert tracker.join_threshold(0.5) == pytest.approx(0.55) and tracker.join_threshold(3.0) == 0.88
            needs = [tracker.join_threshold(seconds / 10) for seconds in range(0, 60)]
            assert needs == sorted(needs) and max(needs) == 0.88  # never more than a long turn needs
    low = speakers.SpeakerTracker(encoder, speakers.SpeakerOptions(threshold=0.5))
    assert {low.join_threshold(seconds) for seconds in (0.5, 1.5, 2.5, 4.0)} == {0.5}  # below 0.55: one threshold
    assert labels[False] == ["S1", "S2", "S3"]
    assert labels[True] == ["S4", "S5", "S6"]


def test_the_enrolled_wearer_is_told_apart(encoder: voice_encoder.VoiceEncoder, make_speech: Callable[..., Any],
                                           join_speech: Callable[..., Any], blocked_cli: list[str],
                                           tmp_path: Path) -> None:
    import subprocess

    wearer_voice = "en+f2"
    enrollment = join_speech([make_speech(line, voice=wearer_voice) for line in LINES[:2]], name="enroll")
    out = tmp_path / "voice.json"
    proc = subprocess.run([*blocked_cli, "edge", "enroll", "--audio", str(enrollment.path), "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["enrollment"] == str(out) and report["speech_seconds"] > 5
    tracker = speakers.SpeakerTracker(encoder, OPTIONS, wearer=speakers.load_enrollment(out))
    labels = {voice: tracker.label(_float(make_speech(LINES[2], voice=voice))) for voice in VOICES}
    assert labels[wearer_voice] == speakers.WEARER_LABEL
    assert sorted(label for voice, label in labels.items() if voice != wearer_voice) == ["S1", "S2", "S3"]


def test_enrolling_too_little_speech_or_a_broken_file_says_what_to_do(make_speech: Callable[..., Any],
                                                                      blocked_cli: list[str],
                                                                      tmp_path: Path) -> None:
    import subprocess

    short = make_speech("Hello.", voice="en-us")
    proc = subprocess.run([*blocked_cli, "edge", "enroll", "--audio", str(short.path), "--out",
                           str(tmp_path / "v.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "enrolling needs at least 5 s" in proc.stderr
    assert not (tmp_path / "v.json").exists()
    broken = tmp_path / "broken.json"
    broken.write_text('{"embedding": [1, 2]}')
    with pytest.raises(ValueError, match="run `meetmem edge enroll` again"):
        speakers.load_enrollment(broken)


def test_the_agent_labels_each_segment_by_its_voice(tiny_asr: Any, encoder: voice_encoder.VoiceEncoder,
                                                     make_speech: Callable[..., Any], join_speech: Callable[..., Any],
                                                     tmp_path: Path) -> None:
    voices = ("en-us", "en+f2", "en-us", "en+f2")
    meeting = join_speech([make_speech(LINES[i % 3], voice=v) for i, v in enumerate(voices)], gap=1.2,
                          name="two_voices")
    tracker = speakers.SpeakerTracker(encoder, OPTIONS)
    with Outbox(tmp_path / "o.db") as outbox:
        agent = CaptureAgent(tiny_asr, outbox, CaptureOptions(meeting_id="m", language="en"), speakers=tracker)
        agent.run(audio.read_file(meeting.path), source="file:two")
        stored = outbox.pending(100)
    assert [s.speaker for s in stored] == ["S1", "S2", "S1", "S2"]


def test_edge_run_labels_segments_for_the_cloud_and_the_map_names_them(
        server: Any, make_speech: Callable[..., Any], join_speech: Callable[..., Any], blocked_cli: list[str],
        tmp_path: Path) -> None:
    """`edge enroll` then `edge run` (cloud packages blocked) on two voices, to a real server on loopback."""
    import subprocess

    import httpx

    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    enrollment = join_speech([make_speech(line, voice="en+f2") for line in LINES[1:]], name="enroll_f2")
    voice = tmp_path / "voice.json"
    subprocess.run([*blocked_cli, "edge", "enroll", "--audio", str(enrollment.path), "--out", str(voice)],
                   check=True, capture_output=True, text=True, env=env, timeout=300)
    voices = ("en-us", "en+f2", "en-us", "en+f2")
    meeting = join_speech([make_speech(LINES[i % 3], voice=v) for i, v in enumerate(voices)], gap=1.2,
                          name="enrolled_meeting")
    token = server.token("acme")
    run = subprocess.run([*blocked_cli, "edge", "run", "labelled", "--input", str(meeting.path),
                          "--cloud", server.url, "--token", token, "--outbox", str(tmp_path / "o.db"), "--json",
                          "-q", "--model", "tiny.en", "--language", "en", "--speaker-threshold", "0.88",
                          "--enrollment", str(voice), "--no-keep-audio"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["speakers"]["labels"] == ["S1"] and report["speakers"]["wearer_enrolled"]
    headers = {"Authorization": f"Bearer {token}"}
    rows = httpx.get(f"{server.url}/v1/meetings/labelled/segments", headers=headers, timeout=30).json()
    assert [r["speaker"] for r in rows] == ["S1", "wearer", "S1", "wearer"]
    r = httpx.put(f"{server.url}/v1/meetings/labelled/speakers", json={"speakers": {"S1": "Tom", "wearer": "Ana"}},
                  headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert {s["label"]: s["name"] for s in r.json()["speakers"]} == {"S1": "Tom", "wearer": "Ana"}
    # A missing enrollment file named on the command line is an error that says what to run.
    bad = subprocess.run([*blocked_cli, "edge", "run", "x", "--input", str(meeting.path), "--cloud",
                          server.url, "--token", token, "--outbox", str(tmp_path / "o2.db"), "--model", "tiny.en",
                          "--enrollment", str(tmp_path / "none.json")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode != 0 and "meetmem edge enroll" in bad.stderr
