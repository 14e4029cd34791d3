"""`meetmem edge ...`: the parser of the agent on the glasses' companion board (`edge run`: edge_run.py;
`edge ask`, `enroll`, `receipts`: edge_ask.py; their inputs: edge_inputs.py).

These import only `meetmem.edge` (faster-whisper, webrtcvad, PyAV, httpx): never torch, FastAPI, faiss or
the search index, so they run on a board with the `edge` extra alone.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .options import JSON, QUIET, add_meeting_id, flags

if TYPE_CHECKING:
    from .context import CommandContext

#: Least cosine similarity to join a known voice (edge.speakers.SpeakerOptions; tuned with `bench speakers`).
SPEAKER_THRESHOLD = 0.75
#: Cut an utterance where the voice changes inside it (edge.speaker_turns.CHANGE_THRESHOLD, not imported: the
#: module loads numpy's encoder code, which `--help` need not).
CHANGE_THRESHOLD = 0.8
#: Exit status of `edge run` when the input is captured but the cloud has not acknowledged everything before
#: --timeout.
EXIT_PENDING = 3


# The handlers load their modules when they run: `meetmem --help` reads none of them.
def cmd_edge_run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from .edge_run import run

    return run(args, ctx)


def cmd_edge_ask(args: argparse.Namespace, ctx: CommandContext) -> int:
    from .edge_ask import ask

    return ask(args, ctx)


def cmd_edge_enroll(args: argparse.Namespace, ctx: CommandContext) -> int:
    from .edge_ask import enroll

    return enroll(args, ctx)


def cmd_edge_receipts(args: argparse.Namespace, ctx: CommandContext) -> int:
    from .edge_ask import receipts

    return receipts(args, ctx)


def add_edge_commands(sub: argparse._SubParsersAction) -> None:
    """`meetmem edge run|enroll|ask|receipts`. None opens a database or acts as a tenant: the cloud's token says
    whose meetings they reach."""
    edge = sub.add_parser("edge", help="the edge agent: speech to the cloud, questions by voice",
                          description="The edge agent for the glasses' companion board (needs only the "
                          "`edge` extra: no torch).")
    edge_sub = edge.add_subparsers(dest="edge_command", metavar="ACTION", required=True)

    asr = argparse.ArgumentParser(add_help=False)
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

    p = edge_sub.add_parser("run", parents=[*flags(JSON, QUIET), asr],
                            help="capture a meeting and sync it to the cloud",
                            description="Capture speech from a file, the microphone (`mic`), raw 16 kHz 16-bit "
                            "mono PCM on stdin (`-`), Frame glasses (`frame`) or a phone app's WebSocket stream "
                            "(`ws://HOST:PORT`: PCM or Opus, see meetmem.edge.websocket_input for the protocol), "
                            "transcribe it, keep every "
                            "segment in a durable outbox and sync it to the cloud. For a file it returns once the "
                            f"cloud acknowledged every segment, or exits {EXIT_PENDING} after --timeout with them "
                            "safe in the outbox.")
    add_meeting_id(p, old="--meeting")
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

    p = edge_sub.add_parser("enroll", parents=flags(JSON, QUIET), help="enroll the wearer's voice for speaker labels",
                            description="Record the wearer speaking (or read a recording) and store the voice's "
                            "embedding, so `edge run` labels the wearer's segments `wearer`.")
    p.add_argument("--audio", default="mic", help="a recording of the wearer, or `mic` to record now (default mic)")
    p.add_argument("--seconds", type=float, default=15.0, help="seconds to record from the microphone (default 15)")
    p.add_argument("--min-seconds", type=float, default=5.0, help="least speech needed (default 5)")
    p.add_argument("--mic-device", default=None, metavar="NAME", help="the microphone (default: the system's)")
    p.add_argument("--out", default=None, help="where to store it (default: the user data directory)")
    p.set_defaults(func=cmd_edge_enroll)

    p = edge_sub.add_parser("ask", parents=[*flags(JSON, QUIET), asr], help="ask the cloud a spoken question",
                            description="Transcribe a spoken question on the device and ask the cloud; prints "
                            "the answer with `transcribed_question`.")
    add_meeting_id(p, old="--meeting")
    p.add_argument("--audio", required=True,
                   help="the question as an audio file, `mic`: push-to-talk (speak, then press Enter), or `frame`: "
                   "tap the Frame glasses, speak, tap again; the answer shows on their display")
    p.add_argument("--explain", action="store_true", help="also return the manifest of the context used")
    p.set_defaults(func=cmd_edge_ask)

    p = edge_sub.add_parser("receipts", parents=flags(JSON), help="the cloud's signed receipts this device keeps",
                            description="Print the cloud's latest signed receipt of every meeting this device "
                            "sent to (JSON Lines with --json), for `meetmem verify MEETING --receipt FILE`.")
    p.add_argument("--outbox", default=None, help="the outbox file (default: the user data directory)")
    p.set_defaults(func=cmd_edge_receipts)
