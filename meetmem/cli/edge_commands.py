"""`meetmem edge run` and `meetmem edge ask`: the agent on the glasses' companion board.

These import only `meetmem.edge` (faster-whisper, webrtcvad, PyAV, httpx): never torch, FastAPI, faiss or
the search index, so they run on a board with the `edge` extra alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .progress import note
from .store_commands import emit_json

if TYPE_CHECKING:
    from .context import CommandContext

#: Least cosine similarity to join a known voice (edge.speakers.SpeakerOptions; tuned with `bench speakers`).
SPEAKER_THRESHOLD = 0.75
#: Cut an utterance where the voice changes inside it (edge.speaker_turns.CHANGE_THRESHOLD, not imported: the
#: module loads numpy's encoder code, which `--help` need not).
CHANGE_THRESHOLD = 0.8
EXIT_PENDING = 3  # the file is captured but the cloud has not acknowledged everything before --timeout


def _cloud_and_token(args: argparse.Namespace) -> tuple[str, str]:
    cloud = args.cloud or os.environ.get("MEETMEM_CLOUD")
    token = args.token or os.environ.get("MEETMEM_TOKEN")
    missing = [name for name, value in (("--cloud (or MEETMEM_CLOUD)", cloud),
                                        ("--token (or MEETMEM_TOKEN)", token)) if not value]
    if missing:
        from meetmem.edge.errors import EdgeError

        raise EdgeError(f"missing {' and '.join(missing)}: the edge needs the cloud's URL and a bearer token "
                        "(`meetmem token create --tenant NAME` on the cloud)")
    assert cloud is not None and token is not None
    return cloud, token


def _asr(args: argparse.Namespace) -> Any:
    from meetmem.edge.asr import ASROptions, WhisperASR

    language = None if args.language in (None, "auto") else args.language
    return WhisperASR(ASROptions(model=args.model, cpu_threads=args.threads, beam_size=args.beam,
                                 language=language))


def _glossary(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(t.strip() for t in (args.glossary or "").split(",") if t.strip())


class StatusLine:
    """One status line on stderr: audio time, segments, outbox pending, real-time factor."""

    def __init__(self, outbox: Any, uploader: Any, *, enabled: bool, interval: float = 1.0) -> None:
        self.outbox = outbox
        self.uploader = uploader
        self.enabled = enabled
        self.interval = interval
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, status: Any, *, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self._last < self.interval):
            return
        self._last = now
        stats = self.outbox.stats()
        cloud = "cloud ok" if self.uploader.last_error is None else f"cloud: {self.uploader.last_error}"[:60]
        minutes, seconds = divmod(int(status.audio_time), 60)
        line = (f"audio {minutes:02d}:{seconds:02d}  segments {status.segments}  outbox {stats.pending} pending"
                f"  RTF {status.real_time_factor:.2f}  {cloud}")
        sys.stderr.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


def _with_cloud_glossary(client: Any, meeting_id: str, glossary: tuple[str, ...], *, quiet: bool) -> tuple[str, ...]:
    """Add the names and terms the cloud's ledger already holds for this meeting (a device joining late or
    resuming); offline, the agent records with what it has."""
    from meetmem.edge.errors import CloudError

    try:
        terms = client.glossary(meeting_id)
    except CloudError as exc:
        if not quiet:
            note(f"no glossary from the cloud ({exc}); recording without it")
        return glossary
    merged = tuple(dict.fromkeys(glossary + tuple(terms[:50])))
    if terms and not quiet:
        note(f"{len(terms)} glossary terms from the cloud's ledger as hotwords")
    return merged


def cmd_edge_run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.edge import audio
    from meetmem.edge.agent import CaptureAgent, CaptureOptions, default_outbox_path, source_id
    from meetmem.edge.outbox import Outbox
    from meetmem.edge.sync import CloudClient, SyncOptions, Uploader

    cloud, token = _cloud_and_token(args)
    stream = args.input == "ws" or args.input.startswith(("ws://", "wss://"))
    ws_input = glasses = None
    if stream:
        ws_input = _websocket_input(args, quiet=ctx.quiet)  # parsed now; listening once the model is loaded
        chunks = ws_input.chunks()
    elif args.input == "frame":
        from meetmem.edge.frame_glasses import frame_chunks

        glasses = _frame_glasses(args)  # connected once the model is loaded
        chunks = frame_chunks(glasses)
    elif args.input == "mic":
        from meetmem.edge.microphone import read_microphone

        chunks = read_microphone(device=_mic_device(args))
    elif args.input == "-":
        chunks = audio.read_pcm_stream(sys.stdin.buffer)
    else:
        chunks = audio.read_file(args.input)  # checks the file at once: a bad one fails before any model loads
        if args.realtime:
            chunks = audio.paced(chunks)
    source = source_id(args.input)
    live = source.startswith("live:")  # a source that cannot be replayed: a restart continues its clock
    outbox = Outbox(Path(args.outbox) if args.outbox else default_outbox_path(),
                    max_bytes=args.outbox_max_mb * 1024 * 1024, device_id=args.device_id)
    if not ctx.quiet:
        note(f"loading the Whisper {args.model} model ...")
    asr = _asr(args)
    client = CloudClient(cloud, token)
    glossary = _glossary(args)
    if args.cloud_glossary:
        glossary = _with_cloud_glossary(client, args.meeting, glossary, quiet=ctx.quiet)
    keeper = None
    if args.keep_audio:
        from meetmem.edge.recording import AudioKeeper

        folder = Path(args.audio_dir) if args.audio_dir else outbox.path.with_name(outbox.path.name + ".audio")
        keeper = AudioKeeper(folder, args.meeting, chunk_seconds=args.audio_chunk_seconds,
                             retention_days=args.audio_retention_days)
        keeper.prune()
    uploader = Uploader(outbox, client, SyncOptions(batch=args.batch), audio=keeper)
    status_line = StatusLine(outbox, uploader, enabled=not ctx.quiet)
    caption, sender = _partials(args, asr, glossary, cloud, token, outbox.device_id, live or args.realtime,
                                quiet=ctx.quiet)

    def on_partial(partial: Any) -> None:
        sender.offer(partial)
        if glasses is not None:
            glasses.show_caption(partial.text)

    agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id=args.meeting, language=asr.options.language,
                                                     glossary=glossary, speaker=args.speaker),
                         on_segment=lambda segment: _stored(segment, uploader, glasses), on_status=status_line,
                         on_audio=keeper.feed if keeper is not None else None,
                         partials=caption, on_partial=on_partial if caption is not None else None,
                         speakers=_speaker_tracker(args, quiet=ctx.quiet))
    try:
        if glasses is not None:
            if not ctx.quiet:
                note(f"connecting to the Frame glasses{' ' + repr(args.frame_name) if args.frame_name else ''} ...")
            glasses.connect()
        if ws_input is not None:
            ws_input.start()
            if not ctx.quiet:
                note(f"listening for an audio stream on {ws_input.url} (the message {{\"end\": true}} ends the "
                     "meeting; Ctrl-C stops)")
        uploader.start()
        if sender is not None:
            sender.start()
        # A stream's first audio may come long after the start: no wall-clock anchor for its latencies.
        status = agent.run(chunks, source=source, live=live,
                           anchor=time.time() if (args.input in ("-", "mic") or args.realtime) else None)
        status_line(status, force=True)
        if keeper is not None:
            keeper.close()  # the last chunk, cut where the input ended
        drained = uploader.drain(timeout=args.timeout)
        status_line(status, force=True)
        audio_report = _send_kept_audio(keeper, uploader, client, outbox.device_id, quiet=ctx.quiet)
    finally:
        if keeper is not None:
            keeper.close()  # an interrupted capture keeps what it heard so far
        if ws_input is not None:
            ws_input.close()
        if glasses is not None:
            glasses.wait_displayed(2.0)
            glasses.close()
            if glasses.disconnected.is_set() and not ctx.quiet:
                note("the glasses disconnected; capture stopped")
        status_line.done()
        if sender is not None:
            sender.stop()
        uploader.stop()
        client.close()
    stats = outbox.stats()
    report = {"meeting_id": args.meeting, "device_id": outbox.device_id,
              "audio_seconds": round(status.audio_time, 2), "segments": status.segments,
              "dropped_utterances": status.dropped, "sent": uploader.sent, "pending": stats.pending,
              "rejected": stats.rejected, "real_time_factor": round(status.real_time_factor, 3),
              "language_detections": status.language_detections, "backlog_max_utterances": status.backlog_max,
              "degradations": status.degradations,
              "partial_captions_sent": sender.sent if sender is not None else None,
              "outbox": str(outbox.path)}
    if audio_report is not None:
        report["audio"] = audio_report
    if agent.speakers is not None:
        tracker = agent.speakers
        report["speakers"] = {"labels": [v.label for v in tracker.voices],
                              "wearer_enrolled": tracker.wearer is not None, "utterances": tracker.utterances,
                              "utterances_cut_at_voice_change": status.speaker_turns_split,
                              "embed_cpu_seconds": round(tracker.embed_time, 2)}
    outbox.close()
    if args.json:
        emit_json(report)
    if uploader.fatal is not None:
        sys.stderr.write(f"meetmem: error: {uploader.fatal}; {stats.pending} segments are safe in {report['outbox']}\n")
        return 1
    if not drained:
        sys.stderr.write(f"meetmem: the cloud did not acknowledge {stats.pending} segments within {args.timeout:g} s "
                         f"({uploader.last_error or 'no answer'}); they are safe in {report['outbox']}: run the "
                         "same command again to send them\n")
        return EXIT_PENDING
    if not ctx.quiet and not args.json:
        note(f"{status.segments} segments captured and acknowledged by the cloud")
    return 0


def _send_kept_audio(keeper: Any, uploader: Any, client: Any, device_id: str, *, quiet: bool) -> dict | None:
    """Once the segments are sent: the kept audio's last chunks go up where the cloud keeps audio."""
    if keeper is None:
        return None
    from meetmem.edge.errors import CloudError
    from meetmem.edge.recording import upload_pending

    uploader.stop()  # one sender at a time from here
    try:
        upload_pending(keeper, client, device_id)
    except CloudError as exc:
        if not quiet:
            note(f"audio not uploaded yet ({exc}); it stays in {keeper.folder} and goes up on the next run")
    counts: dict[str, int] = {}
    for chunk in keeper.chunks():
        counts[chunk.state] = counts.get(chunk.state, 0) + 1
    report = {"folder": str(keeper.folder), "chunks": counts, "bytes": keeper.disk_bytes()}
    keeper.shutdown()
    return report
def _partials(args: argparse.Namespace, asr: Any, glossary: tuple[str, ...], cloud: str, token: str, device_id: str,
              live: bool, *, quiet: bool) -> tuple[Any, Any]:
    """The partial-caption policy and its sender for `--partials`, or (None, None).

    `auto` makes the passes with the finals' own model: one model in memory (base for both peaks at about
    430 MB, base beside tiny.en at 540-620 MB, docs/BENCHMARKS.md "Issue 19: latency"); only live or paced
    input has an utterance in progress to caption."""
    if args.partials == "off":
        return None, None
    if not args.partial_every > 0:
        from meetmem.edge.errors import EdgeError

        raise EdgeError(f"--partial-every must be a positive number of seconds, not {args.partial_every:g}")
    if not live:
        if not quiet:
            note("--partials needs live input (a microphone, a stream or --realtime); a file read at full speed "
                 "has no utterance in progress")
        return None, None
    from meetmem.edge.asr import ASROptions, WhisperASR
    from meetmem.edge.partial_sender import PartialSender
    from meetmem.edge.partials import AUDIO_CONTEXT_S, PartialCaption, PartialOptions, partial_model_threads

    model = args.partials if args.partials != "auto" else args.model
    if model == args.model:
        partial_asr = asr.with_options(audio_context_s=AUDIO_CONTEXT_S, beam_size=1)
    else:
        if not quiet:
            note(f"loading the Whisper {model} model for partial captions ...")
        partial_asr = WhisperASR(ASROptions(model=model, cpu_threads=partial_model_threads(args.threads), beam_size=1,
                                            language=asr.options.language, audio_context_s=AUDIO_CONTEXT_S))
    caption = PartialCaption(partial_asr, PartialOptions(cadence_s=args.partial_every), language=asr.options.language,
                             glossary=glossary)
    return caption, PartialSender(cloud, token, args.meeting, device_id)


def _speaker_tracker(args: argparse.Namespace, *, quiet: bool) -> Any:
    """The voice labeller `--speakers` asks for (None: every segment gets `--speaker`)."""
    from meetmem.edge import speakers, voice_encoder
    from meetmem.edge.errors import EdgeError

    mode = "off" if args.speaker else args.speakers
    if mode == "off":
        return None
    try:
        encoder = voice_encoder.VoiceEncoder()
    except voice_encoder.SpeakerModelMissing as exc:
        if mode == "on":
            raise EdgeError(str(exc)) from exc
        if not quiet:
            note(f"no speaker labels: {exc}")
        return None
    path = Path(args.enrollment) if args.enrollment else speakers.default_enrollment_path()
    wearer = None
    if path.exists():
        try:
            wearer = speakers.load_enrollment(path)
        except ValueError as exc:
            raise EdgeError(str(exc)) from exc
    elif args.enrollment:
        raise EdgeError(f"no wearer enrollment at {path}: run `meetmem edge enroll --out {path}` first")
    if not quiet:
        note("speaker labels on" + ("" if wearer is not None else
                                    " (no wearer enrolled: `meetmem edge enroll` tells the wearer apart)"))
    threshold = args.speaker_threshold
    change = args.speaker_change_threshold or None
    return speakers.SpeakerTracker(encoder, speakers.SpeakerOptions(threshold=threshold, wearer_threshold=threshold,
                                                                    change_threshold=change), wearer=wearer)


def cmd_edge_enroll(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Record (or read) the wearer's voice and store its embedding where `edge run` finds it."""
    from meetmem.edge import audio, speakers, voice_encoder
    from meetmem.edge.errors import EdgeError

    if args.audio == "mic":
        import threading

        from meetmem.edge.microphone import record_until

        if not ctx.quiet:
            note(f"speak in your normal voice for {args.seconds:g} seconds ...")
        stop = threading.Event()
        timer = threading.Timer(args.seconds, stop.set)
        timer.start()
        try:
            samples = record_until(stop, max_seconds=args.seconds + 1, device=_mic_device(args))
        finally:
            timer.cancel()
        source = "microphone"
    else:
        samples = audio.decode_file(args.audio)
        source = str(Path(args.audio).name)
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
    emit_json({"enrollment": str(path), "speech_seconds": round(seconds, 1), "source": source})
    return 0


def _stored(segment: Any, uploader: Any, glasses: Any) -> None:
    """After each stored segment: nudge the uploader, and show the line on the glasses when they are the input."""
    uploader.notify()
    if glasses is not None:
        glasses.show_caption(segment.text)


def _mic_device(args: argparse.Namespace) -> int | str | None:
    """--mic-device, else MEETMEM_MIC_DEVICE, else PortAudio's default input; digits are a device index."""
    device = getattr(args, "mic_device", None) or os.environ.get("MEETMEM_MIC_DEVICE") or None
    return int(device) if device is not None and device.isdigit() else device


def _frame_glasses(args: argparse.Namespace) -> Any:
    """The Brilliant Labs Frame glasses `--input frame` / `--audio frame` name (not connected yet)."""
    from meetmem.edge.frame_glasses import FrameGlasses, FrameOptions

    return FrameGlasses(FrameOptions(name=args.frame_name, sample_rate=args.frame_rate))


def _websocket_input(args: argparse.Namespace, *, quiet: bool) -> Any:
    """The WebSocket input `--input ws://HOST:PORT` names (not listening yet)."""
    from meetmem.edge.websocket_input import WebSocketInput, WebSocketOptions, parse_ws_address

    host, port = parse_ws_address(args.input)
    ws_token = args.ws_token or os.environ.get("MEETMEM_WS_TOKEN") or None
    if not ws_token and host not in ("127.0.0.1", "localhost", "::1") and not quiet:
        note(f"warning: anyone who can reach {host}:{port} can stream audio into this meeting; set --ws-token "
             "(or MEETMEM_WS_TOKEN) and give the phone app the same token")
    return WebSocketInput(WebSocketOptions(host=host, port=port, token=ws_token))


def cmd_edge_ask(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.edge import audio

    cloud, token = _cloud_and_token(args)
    glasses = None
    if args.audio == "mic":
        samples = _push_to_talk(_mic_device(args))
    elif args.audio == "frame":
        from meetmem.edge.frame_glasses import record_question

        glasses = _frame_glasses(args).connect()
        try:
            samples = record_question(glasses)  # tap, speak, tap
        except BaseException:
            glasses.close()
            raise
    else:
        samples = audio.decode_file(args.audio)
    try:
        return _answer_spoken_question(args, ctx, samples, cloud, token, glasses)
    finally:
        if glasses is not None:
            glasses.close()


def _answer_spoken_question(args: argparse.Namespace, ctx: CommandContext, samples: Any, cloud: str, token: str,
                            glasses: Any) -> int:
    from meetmem.edge.sync import CloudClient

    if not ctx.quiet:
        note(f"loading the Whisper {args.model} model ...")
    asr = _asr(args)
    pieces = asr.transcribe(samples, glossary=_glossary(args))
    from meetmem.edge.transcript_text import join_pieces

    question = join_pieces(pieces)
    if not question:
        from meetmem.edge.errors import AudioError

        raise AudioError(args.audio, "no speech recognised in the question")
    client = CloudClient(cloud, token)
    try:
        answer = client.ask(args.meeting, question, explain=args.explain)
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


def _push_to_talk(device: int | str | None = None) -> Any:
    """Record from the microphone from now until Enter is pressed (at most 30 s)."""
    import threading

    from meetmem.edge.microphone import record_until

    stop = threading.Event()

    def wait_for_enter() -> None:
        sys.stdin.readline()
        stop.set()

    note("recording your question: press Enter when you have finished speaking")
    threading.Thread(target=wait_for_enter, name="push-to-talk", daemon=True).start()
    return record_until(stop, device=device)


def cmd_edge_receipts(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.edge.agent import default_outbox_path
    from meetmem.edge.errors import OutboxError
    from meetmem.edge.outbox import Outbox

    path = Path(args.outbox) if args.outbox else default_outbox_path()
    if not path.is_file():
        raise OutboxError(f"no outbox at {path}")
    with Outbox(path) as outbox:
        receipts = outbox.receipts()
    for receipt in receipts:
        if args.json:
            sys.stdout.write(json.dumps(receipt, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(f"{receipt.get('meeting_id')}  position {receipt.get('pos')}  head "
                             f"{str(receipt.get('head'))[:16]}...  key {receipt.get('key_id')}\n")
    return 0


def add_edge_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    edge = sub.add_parser("edge", help="the edge agent: speech to the cloud, questions by voice",
                          description="The edge agent for the glasses' companion board (needs only the "
                          "`edge` extra: no torch).")
    edge_sub = edge.add_subparsers(dest="edge_command", metavar="ACTION", required=True)

    asr = argparse.ArgumentParser(add_help=False)
    asr.add_argument("--meeting", required=True, help="the meeting id")
    asr.add_argument("--cloud", default=None, help="the cloud's URL (env MEETMEM_CLOUD)")
    asr.add_argument("--token", default=None, help="a bearer token for the cloud (env MEETMEM_TOKEN)")
    asr.add_argument("--model", default="base", help="Whisper model: base (multilingual) or tiny.en (default base)")
    asr.add_argument("--language", default="auto", help="en, zh or auto (detected per speaker with speaker labels, "
                     "else once a minute; default)")
    asr.add_argument("--beam", type=int, default=1, help="beam size (1: greedy, fastest; default 1)")
    asr.add_argument("--threads", type=int, default=2, help="CPU threads for the recogniser (default 2)")
    asr.add_argument("--glossary", default=None, help="comma-separated names and terms to spell right")
    asr.add_argument("--mic-device", default=None, metavar="NAME",
                     help="the microphone for `mic`: an input device name as PortAudio lists it, or its number "
                     "(env MEETMEM_MIC_DEVICE; default: the system's default input)")
    asr.add_argument("--frame-name", default=None, metavar="NAME",
                     help="the Frame glasses for `frame`, by Bluetooth name such as 'Frame 4F' (default: the "
                     "first found)")
    asr.add_argument("--frame-rate", type=int, choices=(8000, 16000), default=8000,
                     help="the Frame microphone's sample rate (default 8000; 16000 may stutter over Bluetooth)")

    p = edge_sub.add_parser("run", parents=[common, asr], help="capture a meeting and sync it to the cloud",
                            description="Capture speech from a file, the microphone (`mic`), raw 16 kHz 16-bit "
                            "mono PCM on stdin (`-`), Frame glasses (`frame`) or a phone app's WebSocket stream "
                            "(`ws://HOST:PORT`: PCM or Opus, see meetmem.edge.websocket_input for the protocol), "
                            "transcribe it, keep every "
                            "segment in a durable outbox and sync it to the cloud. For a file it returns once the "
                            f"cloud acknowledged every segment, or exits {EXIT_PENDING} after --timeout with them "
                            "safe in the outbox.")
    p.add_argument("--input", required=True,
                   help="an audio file (WAV, FLAC, Ogg, ...), `mic`, `-`, `frame` (Brilliant Labs Frame glasses over "
                   "Bluetooth: their microphone, live captions on their display; extra `frame`), or "
                   "`ws://HOST:PORT` to take a stream from a phone app (`ws`: ws://127.0.0.1:8765; bind 0.0.0.0 "
                   "for a phone on the LAN, with --ws-token)")
    p.add_argument("--ws-token", default=None,
                   help="a shared secret a WebSocket client must send (`Authorization: Bearer TOKEN` or "
                   "`?token=TOKEN`; env MEETMEM_WS_TOKEN)")
    p.add_argument("--outbox", default=None, help="the outbox file (default: the user data directory)")
    p.add_argument("--outbox-max-mb", type=int, default=256, help="the outbox's size bound (default 256 MB)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds to wait for the cloud after the input ends (default 120)")
    p.add_argument("--realtime", action="store_true", help="replay a file at speaking pace, as a microphone would")
    p.add_argument("--speaker", default=None, help="a speaker label for every segment (the wearer)")
    p.add_argument("--speakers", default="auto", choices=("auto", "on", "off"),
                   help="label each segment by its voice: `wearer` (enrolled with `edge enroll`), S1, S2, ... "
                        "stable through the meeting; auto: on when the voice encoder's weights are installed "
                        "(pip install --no-deps resemblyzer==0.1.4); ignored with --speaker (default auto)")
    p.add_argument("--speaker-threshold", type=float, default=SPEAKER_THRESHOLD, metavar="COSINE",
                   help=f"least voice similarity to join a known speaker, or to be the enrolled wearer "
                        f"(default {SPEAKER_THRESHOLD})")
    p.add_argument("--speaker-change-threshold", type=float, default=CHANGE_THRESHOLD, metavar="COSINE",
                   help="cut an utterance in two where the voices before and after a pause are less alike than "
                        "this, and label each part (two people answering each other without a pause the VAD "
                        f"waits for); 0 never cuts (default {CHANGE_THRESHOLD})")
    p.add_argument("--enrollment", default=None, metavar="PATH",
                   help="the wearer's enrolled voice (default: the one `edge enroll` stored in the user data "
                        "directory, when there is one)")
    p.add_argument("--partials", default="off", choices=("off", "auto", "tiny.en", "base"),
                   help="partial captions of the utterance in progress, live input only: re-transcribed every "
                        "--partial-every seconds, a word shown once two passes agree, sent to the cloud's live "
                        "stream (never stored) and to the glasses; auto: the finals' own model, no second one in "
                        "memory (default off: the passes take about as much CPU again as the finals)")
    p.add_argument("--partial-every", type=float, default=0.4, metavar="SECONDS",
                   help="seconds of new speech between two partial passes (default 0.4)")
    p.add_argument("--device-id", default=None, help="the device id of a new outbox (default: random)")
    p.add_argument("--batch", type=int, default=50, help="segments per request (default 50)")
    p.add_argument("--no-keep-audio", dest="keep_audio", action="store_false",
                   help="do not keep what was heard (by default it is kept as Ogg Opus chunks beside the outbox "
                   "and uploaded where the cloud's policy keeps audio)")
    p.add_argument("--audio-dir", default=None, help="where kept audio goes (default: OUTBOX.audio beside the outbox)")
    p.add_argument("--audio-retention-days", type=float, default=7.0,
                   help="days kept audio stays on the device, uploaded or not (default 7)")
    p.add_argument("--audio-chunk-seconds", type=float, default=60.0,
                   help="seconds of audio per chunk, the unit of upload (default 60)")
    p.add_argument("--no-cloud-glossary", dest="cloud_glossary", action="store_false",
                   help="do not add the glossary the cloud's ledger holds for the meeting to the hotwords")
    p.set_defaults(func=cmd_edge_run)

    p = edge_sub.add_parser("enroll", parents=[common], help="enroll the wearer's voice for speaker labels",
                            description="Record the wearer speaking (or read a recording) and store the voice's "
                            "embedding, so `edge run` labels the wearer's segments `wearer`.")
    p.add_argument("--audio", default="mic", help="a recording of the wearer, or `mic` to record now (default mic)")
    p.add_argument("--seconds", type=float, default=15.0, help="seconds to record from the microphone (default 15)")
    p.add_argument("--min-seconds", type=float, default=5.0, help="least speech needed (default 5)")
    p.add_argument("--mic-device", default=None, metavar="NAME", help="the microphone (default: the system's)")
    p.add_argument("--out", default=None, help="where to store it (default: the user data directory)")
    p.set_defaults(func=cmd_edge_enroll)

    p = edge_sub.add_parser("ask", parents=[common, asr], help="ask the cloud a spoken question",
                            description="Transcribe a spoken question on the device and ask the cloud; prints "
                            "the answer with `transcribed_question`.")
    p.add_argument("--audio", required=True,
                   help="the question as an audio file, `mic`: push-to-talk (speak, then press Enter), or `frame`: "
                   "tap the Frame glasses, speak, tap again; the answer shows on their display")
    p.add_argument("--explain", action="store_true", help="also return the manifest of the context used")
    p.set_defaults(func=cmd_edge_ask)

    p = edge_sub.add_parser("receipts", parents=[common], help="the cloud's signed receipts this device keeps",
                            description="Print the cloud's latest signed receipt of every meeting this device "
                            "sent to (JSON Lines with --json), for `meetmem verify MEETING --receipt FILE`.")
    p.add_argument("--outbox", default=None, help="the outbox file (default: the user data directory)")
    p.set_defaults(func=cmd_edge_receipts)
