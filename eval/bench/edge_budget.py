"""`meetmem bench edge --parts budget`: the edge's resource budget, measured on x86 as a Pi-class proxy (issue 8).

For each model (tiny.en, base) and thread setting (1 thread pinned to one core, as `taskset -c 0` does, by
`sched_setaffinity` in the child; 2 threads on 2 cores), in a fresh process (`edge_process`):

* 5 minutes of speech (the generated sample meeting, looped to 300 s) and 5 minutes of near-silence (white
  noise at -60 dBFS RMS: a quiet room through a microphone's noise floor, never digital zeros) read as fast
  as they decode, each utterance transcribed alone as live input is (`pack_seconds=0`): RTF (wall / audio),
  CPU seconds per audio second (CPU % of one core while live: the battery's figure, since the work per
  utterance is the same whether it arrives at speaking pace or faster), peak RSS, VmPeak, and the outbox
  file left after capture with nothing acknowledged (no cloud), scaled to an hour.
* One paced 5-minute speech run (base on 2 threads) checks that CPU % at speaking pace matches the
  unpaced CPU seconds per audio second.
* The smallest address-space cap (RLIMIT_AS, as `prlimit --as`) at which the model still loads and
  transcribes a 30 s excerpt, found by bisection in 64 MB steps. RLIMIT_AS counts virtual memory (thread
  stacks, malloc arenas, the mapped model), so it is larger than the peak RSS; both are reported.

The pure parts (the cap search, the aggregation, the projection to a board, the table) take their inputs
as values and are tested without a model.
"""

from __future__ import annotations

import logging
import math
import tempfile
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..harness import num, table

log = logging.getLogger(__name__)

MODELS = ("tiny.en", "base")
THREADS = (1, 2)
SAMPLE_RATE = 16000
SPEECH_SECONDS = 300.0
NOISE_DBFS = -60.0
CAP_EXCERPT_SECONDS = 30.0
CAP_STEP = 64 * 1024 * 1024
#: Beyond this a cap search gives up (no board of the class has more memory).
CAP_CEILING = 16 * 1024 * 1024 * 1024
MB = 1024 * 1024
#: A model is the default on a board when its projected RTF (live, one utterance per call) is at most this:
#: half the board's time left for the VAD, the uploader and catching up after dense talk.
DEFAULT_MODEL_RTF = 0.5
#: Public single-core figures of the boards: sysbench 1.0.20 `cpu --threads=1 --time=60 run`, events per
#: second (primes up to 10,000), 64-bit OS, from leoncode.co.uk/articles/raspberry-pi-benchmarks. The same
#: command runs here (`sysbench_single_core`) so the ratio compares like with like.
PUBLIC_SINGLE_CORE = {"raspberry_pi_4": 1477.83, "raspberry_pi_5": 2737.49}
SINGLE_CORE_SOURCE = ("sysbench 1.0.20 `cpu --threads=1 --time=60 run` events/s: Raspberry Pi 4 1477.83, "
                      "Raspberry Pi 5 2737.49 (leoncode.co.uk/articles/raspberry-pi-benchmarks)")


# ------------------------------------------------------------------------------------------------------
# The pure parts.
# ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapSearch:
    """The result of `smallest_cap`: the smallest cap that fits (None: none up to the ceiling), and every
    probe in the order it ran, as (cap bytes, fitted)."""

    cap: int | None
    probes: tuple[tuple[int, bool], ...]


def smallest_cap(fits: Callable[[int], bool], *, low: int, high: int, step: int = CAP_STEP,
                 ceiling: int = CAP_CEILING) -> CapSearch:
    """The smallest multiple of `step` at which `fits(cap)` holds, assuming a larger cap never fails where a
    smaller one fitted.

    `low` and `high` are guesses (rounded to `step`): `high` is checked, and doubled until it fits; `low` is
    checked, and halved until it fails (0 fails by definition); then the bracket is bisected. Each cap is
    probed at most once.
    """
    if step <= 0:
        raise ValueError("step must be positive")
    seen: dict[int, bool] = {}

    def probe(cap: int) -> bool:
        if cap <= 0:
            return False
        if cap not in seen:
            seen[cap] = bool(fits(cap))
        return seen[cap]

    high = max(step, math.ceil(high / step) * step)
    low = max(0, min(math.floor(low / step) * step, high - step))
    while not probe(high):
        low, high = high, high * 2
        if high > ceiling:
            return CapSearch(None, tuple(seen.items()))
    while probe(low):
        high, low = low, (low // 2) // step * step
    while high - low > step:
        mid = (low + high) // 2 // step * step
        if probe(mid):
            high = mid
        else:
            low = mid
    return CapSearch(high, tuple(seen.items()))


def per_hour(amount: float, seconds: float) -> float | None:
    """`amount` over `seconds` of audio, scaled to an hour."""
    return amount * 3600.0 / seconds if seconds > 0 else None


def budget_row(model: str, threads: int, speech: dict[str, Any], silence: dict[str, Any], *, process: dict[str, Any],
               empty_outbox_bytes: int, cap: CapSearch | None) -> dict[str, Any]:
    """One model × threads row from the speech and silence inputs of one `edge_process` run.

    Args:
        speech, silence: the run's `inputs` entries (audio_s, wall_s, cpu_s, outbox_bytes, ...).
        process: the run's top level (peak_rss_mb, peak_vm_mb, load_s).
        empty_outbox_bytes: the size of a new, empty outbox file: growth is measured above it.
        cap: the address-space search for this configuration, if one ran.
    """

    def pct(item: dict[str, Any]) -> float:
        return round(100.0 * item["cpu_s"] / item["audio_s"], 2)

    def growth(amount: float, item: dict[str, Any]) -> float | None:
        grown = per_hour(amount, item["audio_s"])
        return None if grown is None else round(grown / MB, 3)

    return {
        "model": model, "threads": threads,
        "speech_audio_s": speech["audio_s"], "silence_audio_s": silence["audio_s"],
        "rtf": round(speech["wall_s"] / speech["audio_s"], 4),
        "rtf_transcribe": round(speech["transcribe_s"] / speech["audio_s"], 4),
        "cpu_pct_speech": pct(speech), "cpu_pct_silence": pct(silence),
        "rtf_silence": round(silence["wall_s"] / silence["audio_s"], 4),
        "recogniser_calls_speech": speech["recogniser_calls"], "recogniser_calls_silence": silence["recogniser_calls"],
        "segments_speech": len(speech["segments"]), "segments_silence": len(silence["segments"]),
        "peak_rss_mb": process.get("peak_rss_mb"), "peak_vm_mb": process.get("peak_vm_mb"),
        "load_s": process.get("load_s"),
        "transcribe_s_per_call": round(speech["transcribe_s"] / speech["recogniser_calls"], 3)
        if speech["recogniser_calls"] else None,
        "audio_s_per_call": round(sum(speech["call_audio_s"]) / len(speech["call_audio_s"]), 2)
        if speech["call_audio_s"] else None,
        "smallest_as_cap_mb": cap.cap // MB if cap is not None and cap.cap is not None else None,
        "as_cap_probes_mb": [[c // MB, ok] for c, ok in cap.probes] if cap is not None else None,
        "outbox_bytes_speech": speech["outbox_bytes"], "outbox_bytes_silence": silence["outbox_bytes"],
        "outbox_text_bytes_speech": speech["outbox_text_bytes"],
        "outbox_mb_per_hour_speech": growth(speech["outbox_bytes"] - empty_outbox_bytes, speech),
        "outbox_mb_per_hour_silence": growth(silence["outbox_bytes"] - empty_outbox_bytes, silence),
        # What the outbox's bound (`Outbox(max_bytes=...)`, 256 MB by default) counts: the segments' text.
        "outbox_text_mb_per_hour_speech": growth(speech["outbox_text_bytes"], speech),
    }


def project(rows: Sequence[dict[str, Any]], boards: dict[str, float]) -> dict[str, Any]:
    """What the rows imply for each board: its CPU seconds per x86 CPU second (`boards[name]`) times the
    measured RTF and CPU %, and the default model: base where its best projected RTF is at most
    `DEFAULT_MODEL_RTF`, else tiny.en where that fits, else none.

    A board's slowdown factor scales CPU work: projected RTF = RTF × factor, a first-order estimate that
    ignores memory bandwidth and the different int8 kernels of x86 and Arm.
    """
    out: dict[str, Any] = {}
    for board, factor in boards.items():
        projected = [{"model": r["model"], "threads": r["threads"], "rtf": round(r["rtf"] * factor, 3),
                      "cpu_pct_speech": round(r["cpu_pct_speech"] * factor, 1),
                      "cpu_pct_silence": round(r["cpu_pct_silence"] * factor, 1)} for r in rows]
        best = {m: min((p["rtf"] for p in projected if p["model"] == m), default=math.inf) for m in MODELS}
        default = next((m for m in ("base", "tiny.en") if best.get(m, math.inf) <= DEFAULT_MODEL_RTF), None)
        out[board] = {"factor": factor, "rows": projected, "default_model": default}
    return out


def board_factors(local_events_per_s: float, public: dict[str, float] | None = None) -> dict[str, float]:
    """Each board's slowdown against this machine on one core: this machine's sysbench events per second over
    the board's published figure."""
    return {board: round(local_events_per_s / events, 2) for board, events in (public or PUBLIC_SINGLE_CORE).items()}


def parse_sysbench(text: str) -> float | None:
    """The `events per second:` figure of a `sysbench cpu` report."""
    for line in text.splitlines():
        if line.strip().startswith("events per second:"):
            return float(line.split(":", 1)[1])
    return None


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The README's table: model × threads."""
    header = ("model", "threads", "RTF (live, unpaced)", "CPU % of one core: speech / silence", "peak RSS MB",
              "VmPeak MB", "smallest `--as` cap MB", "outbox per hour of speech: file / text MB",
              "outbox per hour of silence: file MB")
    body = [(f"`{r['model']}`", str(r["threads"]), num(r["rtf"], 3),
             f"{num(r['cpu_pct_speech'], 1)} / {num(r['cpu_pct_silence'], 2)}", num(r["peak_rss_mb"], 0),
             num(r["peak_vm_mb"], 0), num(r["smallest_as_cap_mb"], 0),
             f"{num(r['outbox_mb_per_hour_speech'], 2)} / {num(r['outbox_text_mb_per_hour_speech'], 2)}",
             num(r["outbox_mb_per_hour_silence"], 3)) for r in rows]
    return "\n".join(table(header, body))


# ------------------------------------------------------------------------------------------------------
# The audio and the runs.
# ------------------------------------------------------------------------------------------------------


def write_wav(path: Path, samples: Any) -> None:
    """16 kHz mono 16-bit PCM."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(samples.astype("<i2").tobytes())


def looped_speech(source: Path, seconds: float) -> Any:
    """The recording repeated end to end and cut at `seconds` (int16)."""
    import numpy as np

    from meetmem.edge.audio import read_file

    once = np.concatenate(list(read_file(source, chunk_seconds=5.0)))
    n = int(round(seconds * SAMPLE_RATE))
    return np.tile(once, -(-n // len(once)))[:n]


def room_noise(seconds: float, dbfs: float = NOISE_DBFS, seed: int = 8) -> Any:
    """Gaussian white noise at `dbfs` RMS relative to full scale (int16)."""
    import numpy as np

    rms = 32768.0 * 10 ** (dbfs / 20.0)
    noise = np.random.default_rng(seed).normal(0.0, rms, int(round(seconds * SAMPLE_RATE)))
    return np.clip(np.round(noise), -32768, 32767).astype(np.int16)


def sysbench_single_core(seconds: int = 20) -> float | None:
    """This machine's `sysbench cpu --threads=1` events per second (None when sysbench is not installed)."""
    import shutil
    import subprocess

    exe = shutil.which("sysbench")
    if exe is None:
        return None
    proc = subprocess.run([exe, "cpu", "--threads=1", f"--time={seconds}", "run"], capture_output=True, text=True,
                          timeout=seconds + 60)
    return parse_sysbench(proc.stdout) if proc.returncode == 0 else None


def empty_outbox_bytes(folder: Path) -> int:
    """The size of a new outbox file with nothing in it."""
    from meetmem.edge.outbox import Outbox

    from ..harness import db_bytes

    path = folder / "empty-outbox.db"
    Outbox(path).close()
    return db_bytes(path)


def budget_part(note: Callable[[str], None], audio: Path, *, quick: bool = False) -> dict[str, Any]:
    """Measure the budget (see the module docstring) and project it onto the boards by their single-core
    speed. `quick`: 60 s of each, tiny.en on 2 threads, no paced run, a coarse cap search."""
    from .edge_process import run_edge
    from .serve_process import ServeBenchError

    seconds = 60.0 if quick else SPEECH_SECONDS
    configs = [("tiny.en", 2)] if quick else [(m, t) for m in MODELS for t in THREADS]
    step = 4 * CAP_STEP if quick else CAP_STEP
    rows: list[dict[str, Any]] = []
    out: dict[str, Any] = {"config": {
        "speech": f"{str(audio)!r} looped to {seconds:g} s", "silence": f"white noise at {NOISE_DBFS:g} dBFS RMS, "
        f"{seconds:g} s", "packing": "none: one utterance per recogniser call, as live input",
        "language": "base: detected per utterance among en|zh (the edge default); tiny.en: English",
        "one_thread": "cpu_threads=1, the process pinned to one core (sched_setaffinity, as taskset -c 0)",
        "two_threads": "cpu_threads=2 on 2 cores", "cap_excerpt_s": CAP_EXCERPT_SECONDS, "cap_step_mb": step // MB,
        "cap": "RLIMIT_AS set in the child before Python starts (as prlimit --as); fits = exit 0 and >= 1 segment",
        "outbox": "the outbox file after capture and close, nothing acknowledged (no cloud), minus an empty one's "
                  "size, scaled to an hour"}}
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-budget-") as tmp:
        folder = Path(tmp)
        speech_wav, silence_wav = folder / "speech.wav", folder / "silence.wav"
        write_wav(speech_wav, looped_speech(audio, seconds))
        write_wav(silence_wav, room_noise(seconds))
        empty = empty_outbox_bytes(folder)
        out["empty_outbox_bytes"] = empty
        for model, threads in configs:
            job = {"model": model, "beam": 1, "threads": threads, "pin_cores": threads, "pack_seconds": 0,
                   "language": None}
            note(f"budget: {model} on {threads} thread(s): {seconds:g} s of silence, then of speech ...")
            result = run_edge({**job, "inputs": [{"path": str(silence_wav), "meeting": "silence"},
                                                 {"path": str(speech_wav), "meeting": "speech"}]})
            silence, speech = result["inputs"]

            def fits(cap: int, job: dict[str, Any] = job) -> bool:
                try:
                    item = run_edge({**job, "inputs": [{"path": str(speech_wav), "meeting": "cap",
                                                        "seconds": CAP_EXCERPT_SECONDS}]},
                                    address_space=cap)["inputs"][0]
                except ServeBenchError:
                    fitted = False
                else:
                    fitted = bool(item["segments"])
                note(f"  address-space cap {cap // MB} MB: {'fits' if fitted else 'fails'}")
                return fitted

            cap = smallest_cap(fits, low=int((result["peak_rss_mb"] or 0) * MB),
                               high=int((result["peak_vm_mb"] or 1024) * MB), step=step)
            rows.append(budget_row(model, threads, speech, silence, process=result, empty_outbox_bytes=empty,
                                   cap=cap))
            r = rows[-1]
            note(f"  RTF {r['rtf']}, CPU {r['cpu_pct_speech']} % (speech) / {r['cpu_pct_silence']} % (silence), "
                 f"peak RSS {r['peak_rss_mb']} MB, smallest cap {r['smallest_as_cap_mb']} MB")
        if not quick:
            note(f"budget: base on 2 threads, {seconds:g} s of speech at speaking pace (takes {seconds:g} s) ...")
            paced = run_edge({"model": "base", "beam": 1, "threads": 2, "pin_cores": 2, "pack_seconds": 0,
                              "language": None, "paced": True,
                              "inputs": [{"path": str(speech_wav), "meeting": "paced"}]})
            item = paced["inputs"][0]
            unpaced = next(r for r in rows if r["model"] == "base" and r["threads"] == 2)
            out["paced_check"] = {
                "model": "base", "threads": 2, "audio_s": item["audio_s"], "wall_s": item["wall_s"],
                "cpu_pct_paced": round(100.0 * item["cpu_s"] / item["audio_s"], 2),
                "cpu_pct_unpaced": unpaced["cpu_pct_speech"],
                "recogniser_calls_paced": item["recogniser_calls"],
                "recogniser_calls_unpaced": unpaced["recogniser_calls_speech"],
                "peak_rss_mb": paced["peak_rss_mb"]}
            note(f"  CPU {out['paced_check']['cpu_pct_paced']} % paced vs {unpaced['cpu_pct_speech']} % unpaced")
    out["rows"] = rows
    note("budget: sysbench cpu on one thread, 20 s ...")
    local = sysbench_single_core(20)
    out["single_core"] = {"this_machine_sysbench_events_per_s": local, "public": PUBLIC_SINGLE_CORE,
                          "source": SINGLE_CORE_SOURCE}
    if local is not None:
        out["boards"] = project(rows, board_factors(local))
    else:
        out["boards"] = {"skipped": "sysbench is not installed (apt-get install sysbench)"}
    out["table_markdown"] = markdown(rows)
    return out
