"""`meetmem edge ask`, `edge enroll` and `edge receipts`: the edge's commands besides the capture (`edge run`).

A spoken question transcribed on the device and put to the cloud; the wearer's voice enrolled for speaker
labels; the cloud's signed receipts the outbox keeps. Like `edge run`, these import only `meetmem.edge`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .edge_inputs import cloud_and_token, frame_glasses, glossary, mic_device, push_to_talk, whisper
from .options import meeting_id
from .output import emit_json, emit_json_lines
from .progress import note

if TYPE_CHECKING:
    from .context import CommandContext


def ask(args: argparse.Namespace, ctx: CommandContext) -> int:
    """`meetmem edge ask`: a spoken question, transcribed here, answered by the cloud."""
    from meetmem.edge import audio

    meeting = meeting_id(args, "edge ask")
    cloud, token = cloud_and_token(args, ctx.settings)
    glasses = None
    if args.audio == "mic":
        samples = push_to_talk(mic_device(args, ctx.settings))
    elif args.audio == "frame":
        from meetmem.edge.frame_glasses import record_question

        glasses = frame_glasses(args).connect()
        try:
            samples = record_question(glasses)  # tap, speak, tap
        except BaseException:
            glasses.close()
            raise
    else:
        samples = audio.decode_file(args.audio)
    try:
        return _answer_spoken_question(args, ctx, meeting, samples, (cloud, token), glasses)
    finally:
        if glasses is not None:
            glasses.close()


def _answer_spoken_question(args: argparse.Namespace, ctx: CommandContext, meeting: str, samples: Any,
                            cloud: tuple[str, str], glasses: Any) -> int:
    from meetmem.edge.sync import CloudClient
    from meetmem.edge.transcript_text import join_pieces

    if not ctx.quiet:
        note(f"loading the Whisper {args.model} model ...")
    question = join_pieces(whisper(args).transcribe(samples, glossary=glossary(args)))
    if not question:
        from meetmem.edge.errors import AudioError

        raise AudioError(args.audio, "no speech recognised in the question")
    client = CloudClient(*cloud)
    try:
        answer = client.ask(meeting, question, explain=args.explain)
    finally:
        client.close()
    answer["transcribed_question"] = question
    if glasses is not None:
        glasses.show_answer(answer["answer"])
        glasses.wait_displayed()
    if args.json:
        emit_json(answer)
    else:
        print(f"Q: {question}\n{answer['answer']}")
    return 0


def enroll(args: argparse.Namespace, ctx: CommandContext) -> int:
    """`meetmem edge enroll`: record (or read) the wearer's voice and store its embedding where `edge run`
    finds it."""
    from meetmem.edge import speakers, voice_encoder
    from meetmem.edge.errors import EdgeError

    samples, source = _wearer_speaking(args, ctx)
    import numpy as np

    from meetmem.edge.vad import SAMPLE_RATE, segment

    voiced = [u.audio for u in segment(samples)]  # the speech alone: pauses say nothing of a voice
    speech = np.concatenate(voiced).astype(np.float32) if voiced else np.zeros(0, dtype=np.float32)
    seconds = len(speech) / SAMPLE_RATE
    if seconds < args.min_seconds:
        raise EdgeError(f"only {seconds:.1f} s of speech heard in {source}; enrolling needs at least "
                        f"{args.min_seconds:g} s: speak (or give a recording) for longer")
    try:
        encoder = voice_encoder.VoiceEncoder()
    except voice_encoder.SpeakerModelMissing as exc:
        raise EdgeError(str(exc)) from exc
    embedding = encoder.embed(speech)
    path = Path(args.out) if args.out else speakers.default_enrollment_path()
    speakers.save_enrollment(path, embedding, seconds=seconds, source=source)
    if args.json:
        emit_json({"enrollment": str(path), "speech_seconds": round(seconds, 1), "source": source})
    else:
        print(f"enrolled the wearer's voice from {round(seconds, 1):g} s of speech ({source}) in {path}")
    return 0


def _wearer_speaking(args: argparse.Namespace, ctx: CommandContext) -> tuple[Any, str]:
    """The enrollment's audio (`--audio FILE`, or `--seconds` from the microphone) and where it came from."""
    from meetmem.edge import audio

    if args.audio != "mic":
        return audio.decode_file(args.audio), str(Path(args.audio).name)
    import threading

    from meetmem.edge.microphone import record_until

    if not ctx.quiet:
        note(f"speak in your normal voice for {args.seconds:g} seconds ...")
    stop = threading.Event()
    timer = threading.Timer(args.seconds, stop.set)
    timer.start()
    try:
        samples = record_until(stop, max_seconds=args.seconds + 1, device=mic_device(args, ctx.settings))
    finally:
        timer.cancel()
    return samples, "microphone"


def receipts(args: argparse.Namespace, ctx: CommandContext) -> int:
    """`meetmem edge receipts`: the cloud's latest signed receipt of each meeting the outbox sent to."""
    from meetmem.edge.agent import default_outbox_path
    from meetmem.edge.errors import OutboxError
    from meetmem.edge.outbox import Outbox

    path = Path(args.outbox) if args.outbox else default_outbox_path()
    if not path.is_file():
        raise OutboxError(f"no outbox at {path}")
    with Outbox(path) as outbox:
        kept = outbox.receipts()
    if args.json:
        emit_json_lines(kept)
        return 0
    for receipt in kept:
        sys.stdout.write(f"{receipt.get('meeting_id')}  position {receipt.get('pos')}  head "
                         f"{str(receipt.get('head'))[:16]}...  key {receipt.get('key_id')}\n")
    return 0
