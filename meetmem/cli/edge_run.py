"""`meetmem edge run`: capture a meeting on the glasses' companion board and sync it to the cloud.

The capture (meetmem.edge.agent) stores every segment in a durable outbox first; an uploader sends the outbox
to the cloud beside it. This module puts the parts together from the command line, shows one status line on
stderr while it runs, and reports what happened (`--json`). It imports only `meetmem.edge`, inside functions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .edge_commands import EXIT_PENDING
from .edge_inputs import CaptureInput, capture_input, cloud_and_token, glossary, whisper
from .options import meeting_id
from .output import emit_json
from .progress import note

if TYPE_CHECKING:
    from .context import CommandContext

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


class EdgeRun(NamedTuple):
    """The parts of one `edge run`, from the input to the cloud, started and stopped together."""

    args: argparse.Namespace
    quiet: bool
    meeting: str
    capture: CaptureInput
    outbox: Any
    client: Any
    uploader: Any
    keeper: Any  # the kept audio (edge.recording.AudioKeeper), or None with --no-keep-audio
    sender: Any  # the partial captions' sender, or None
    status_line: StatusLine
    agent: Any

    def run(self) -> tuple[Any, bool, dict[str, Any] | None]:
        """Capture until the input ends, wait up to --timeout for the cloud, send the kept audio; returns the
        capture's status, whether every segment was acknowledged, and the kept audio's report."""
        try:
            self._start()
            status = self.agent.run(self.capture.chunks, source=self.capture.source, live=self.capture.live,
                                    anchor=time.time() if self.capture.wall_clock else None)
            self.status_line(status, force=True)
            if self.keeper is not None:
                self.keeper.close()  # the last chunk, cut where the input ended
            drained = self.uploader.drain(timeout=self.args.timeout)
            self.status_line(status, force=True)
            audio_report = _send_kept_audio(self.keeper, self.uploader, self.client, self.outbox.device_id,
                                            quiet=self.quiet)
        finally:
            self._stop()
        return status, drained, audio_report

    def _start(self) -> None:
        glasses, ws_input = self.capture.glasses, self.capture.ws_input
        if glasses is not None:
            if not self.quiet:
                name = self.args.frame_name
                note(f"connecting to the Frame glasses{' ' + repr(name) if name else ''} ...")
            glasses.connect()
        if ws_input is not None:
            ws_input.start()
            if not self.quiet:
                note(f"listening for an audio stream on {ws_input.url} (the message {{\"end\": true}} ends the "
                     "meeting; Ctrl-C stops)")
        self.uploader.start()
        if self.sender is not None:
            self.sender.start()

    def _stop(self) -> None:
        glasses = self.capture.glasses
        if self.keeper is not None:
            self.keeper.close()  # an interrupted capture keeps what it heard so far
        if self.capture.ws_input is not None:
            self.capture.ws_input.close()
        if glasses is not None:
            glasses.wait_displayed(2.0)
            glasses.close()
            if glasses.disconnected.is_set() and not self.quiet:
                note("the glasses disconnected; capture stopped")
        self.status_line.done()
        if self.sender is not None:
            self.sender.stop()
        self.uploader.stop()
        self.client.close()

    def report(self, status: Any, audio_report: dict[str, Any] | None) -> dict[str, Any]:
        """What `--json` prints: the capture's figures, what was sent, what waits in the outbox."""
        stats = self.outbox.stats()
        report = {"meeting_id": self.meeting, "device_id": self.outbox.device_id,
                  "audio_seconds": round(status.audio_time, 2), "segments": status.segments,
                  "dropped_utterances": status.dropped, "sent": self.uploader.sent, "pending": stats.pending,
                  "rejected": stats.rejected, "real_time_factor": round(status.real_time_factor, 3),
                  "language_detections": status.language_detections,
                  "backlog_max_utterances": status.backlog_max, "degradations": status.degradations,
                  "partial_captions_sent": self.sender.sent if self.sender is not None else None,
                  "outbox": str(self.outbox.path)}
        if audio_report is not None:
            report["audio"] = audio_report
        tracker = self.agent.speakers
        if tracker is not None:
            report["speakers"] = {"labels": [v.label for v in tracker.voices],
                                  "wearer_enrolled": tracker.wearer is not None, "utterances": tracker.utterances,
                                  "utterances_cut_at_voice_change": status.speaker_turns_split,
                                  "embed_cpu_seconds": round(tracker.embed_time, 2)}
        return report


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    """`meetmem edge run`."""
    edge_run = _assemble(args, ctx)
    status, drained, audio_report = edge_run.run()
    report = edge_run.report(status, audio_report)
    edge_run.outbox.close()
    if args.json:
        emit_json(report)
    uploader = edge_run.uploader
    if uploader.fatal is not None:
        sys.stderr.write(f"meetmem: error: {uploader.fatal}; {report['pending']} segments are safe in "
                         f"{report['outbox']}\n")
        return 1
    if not drained:
        sys.stderr.write(f"meetmem: the cloud did not acknowledge {report['pending']} segments within "
                         f"{args.timeout:g} s ({uploader.last_error or 'no answer'}); they are safe in "
                         f"{report['outbox']}: run the same command again to send them\n")
        return EXIT_PENDING
    if not ctx.quiet and not args.json:
        note(f"{status.segments} segments captured and acknowledged by the cloud")
    return 0


def _assemble(args: argparse.Namespace, ctx: CommandContext) -> EdgeRun:
    """The parts of the run, in the order that fails fastest: the meeting, the cloud's settings and the input
    (a bad file) before any model loads."""
    from meetmem.edge.agent import CaptureAgent, CaptureOptions, default_outbox_path
    from meetmem.edge.outbox import Outbox
    from meetmem.edge.sync import CloudClient, SyncOptions, Uploader

    meeting = meeting_id(args, "edge run")
    cloud, token = cloud_and_token(args, ctx.settings)
    capture = capture_input(args, ctx.settings, quiet=ctx.quiet)
    outbox = Outbox(Path(args.outbox) if args.outbox else default_outbox_path(),
                    max_bytes=args.outbox_max_mb * 1024 * 1024, device_id=args.device_id)
    if not ctx.quiet:
        note(f"loading the Whisper {args.model} model ...")
    asr = whisper(args)
    client = CloudClient(cloud, token)
    terms = glossary(args)
    if args.cloud_glossary:
        terms = _with_cloud_glossary(client, meeting, terms, quiet=ctx.quiet)
    keeper = _audio_keeper(args, meeting, outbox)
    uploader = Uploader(outbox, client, SyncOptions(batch=args.batch), audio=keeper)
    caption, sender = _partials(args, meeting, asr, terms, (cloud, token), outbox.device_id,
                                capture.live or args.realtime, quiet=ctx.quiet)
    glasses = capture.glasses

    def on_partial(partial: Any) -> None:
        sender.offer(partial)
        if glasses is not None:
            glasses.show_caption(partial.text)

    def on_segment(segment: Any) -> None:  # nudge the uploader; show the line on the glasses when they listen
        uploader.notify()
        if glasses is not None:
            glasses.show_caption(segment.text)

    status_line = StatusLine(outbox, uploader, enabled=not ctx.quiet)
    agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id=meeting, language=asr.options.language,
                                                     glossary=terms, speaker=args.speaker),
                         on_segment=on_segment, on_status=status_line,
                         on_audio=keeper.feed if keeper is not None else None,
                         partials=caption, on_partial=on_partial if caption is not None else None,
                         speakers=_speaker_tracker(args, quiet=ctx.quiet))
    return EdgeRun(args, ctx.quiet, meeting, capture, outbox, client, uploader, keeper, sender, status_line, agent)


def _with_cloud_glossary(client: Any, meeting: str, terms: tuple[str, ...], *, quiet: bool) -> tuple[str, ...]:
    """Add the names and terms the cloud's ledger already holds for this meeting (a device joining late or
    resuming); offline, the agent records with what it has."""
    from meetmem.edge.errors import CloudError

    try:
        known = client.glossary(meeting)
    except CloudError as exc:
        if not quiet:
            note(f"no glossary from the cloud ({exc}); recording without it")
        return terms
    merged = tuple(dict.fromkeys(terms + tuple(known[:50])))
    if known and not quiet:
        note(f"{len(known)} glossary terms from the cloud's ledger as hotwords")
    return merged


def _audio_keeper(args: argparse.Namespace, meeting: str, outbox: Any) -> Any:
    """Where what was heard is kept as Ogg Opus chunks beside the outbox (None with --no-keep-audio)."""
    if not args.keep_audio:
        return None
    from meetmem.edge.recording import AudioKeeper

    folder = Path(args.audio_dir) if args.audio_dir else outbox.path.with_name(outbox.path.name + ".audio")
    keeper = AudioKeeper(folder, meeting, chunk_seconds=args.audio_chunk_seconds,
                         retention_days=args.audio_retention_days)
    keeper.prune()
    return keeper


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


def _partials(args: argparse.Namespace, meeting: str, asr: Any, terms: tuple[str, ...], cloud: tuple[str, str],
              device_id: str, live: bool, *, quiet: bool) -> tuple[Any, Any]:
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
                             glossary=terms)
    url, token = cloud
    return caption, PartialSender(url, token, meeting, device_id)


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
