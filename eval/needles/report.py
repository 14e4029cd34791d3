"""`meetmem eval report`: the needle evaluation over a grid of generated meetings, as JSON, Markdown and plots.

The grid (`grid`): one seeded needle meeting per (language, hours) from text; the same generator with
ASR-like noise at the `noisy_hours`; and an English meeting rendered to audio and recognised by the edge
pipeline. Each is written under `OUT/meetings/` and put through `needle_eval.evaluate` (the audio one
through `needle_audio.evaluate_audio`). Then `OUT/report.json` holds every result (and the real corpora's,
when `--data` was given), `OUT/report.md` the side-by-side summary (`needle_report_md`), and four PNG plots
(`needle_report_plots`). The Markdown and the plots are made from the results alone, so a saved
`report.json` can be redrawn without evaluating again.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .evaluation import DEFAULT_BUDGET, DEFAULT_K, evaluate
from .generator import generate
from .report_md import markdown
from .report_plots import PLOTS, plot

__all__ = ["PLOTS", "MeetingSpec", "evaluate_grid", "grid", "write_report"]

#: ASR-like noise of the noisy meetings: a share of words disturbed (fillers, homophones, dropped words).
DEFAULT_NOISE = 0.1
#: The lengths of the clean English meetings also asked "who said ...?" (`speakers`): one index more each.
DEFAULT_SPEAKER_HOURS = (1.0,)


@dataclass(frozen=True, slots=True)
class MeetingSpec:
    """One meeting of the grid: its language and length, noise rate, and whether it is heard (`audio`)."""

    lang: str
    hours: float
    noise: float = 0.0
    source: str = "text"

    @property
    def label(self) -> str:
        label = f"{self.lang} {self.hours:g} h"
        if self.noise:
            label += f" noise {self.noise:g}"
        return label + (f" {self.source}" if self.source != "text" else "")

    @property
    def folder(self) -> str:
        name = f"{self.lang}-{self.hours:g}h"
        if self.noise:
            name += f"-noise{self.noise:g}"
        return name + (f"-{self.source}" if self.source != "text" else "")


def grid(*, hours: Sequence[float], langs: Sequence[str], noisy_hours: Sequence[float] = (),
         noise: float = DEFAULT_NOISE, audio_hours: float | None = None) -> list[MeetingSpec]:
    """The meetings of a report, languages outermost: clean text at every length, noisy text at
    `noisy_hours`, then one English audio meeting of `audio_hours` (None: none)."""
    specs = [MeetingSpec(lang, h) for lang in langs for h in hours]
    specs += [MeetingSpec(lang, h, noise) for lang in langs for h in noisy_hours if noise > 0]
    if audio_hours:
        specs.append(MeetingSpec("en", audio_hours, source="audio"))
    return specs


def evaluate_grid(out: Path, specs: Sequence[MeetingSpec], *, seed: int = 7, k: int = DEFAULT_K,
                  budget: int = DEFAULT_BUDGET, routes: Any = None, audio_model: str = "base",
                  progress: Callable[[str], None] | None = None,
                  bar: Callable[[str], Callable[[int, int], None]] | None = None,
                  speaker_hours: Sequence[float] = DEFAULT_SPEAKER_HOURS) -> list[dict[str, Any]]:
    """Generate, write and evaluate every meeting of `specs`, in order.

    Each meeting goes to `out/meetings/<spec.folder>/`; its database is temporary, so a report can be
    made again into the same folder. `bar(label)` gives a progress callback for one meeting's questions.
    The clean English text meetings of `speaker_hours` are also asked "who said ...?" of their needles,
    stored again the way the edge labels speakers (`needle_speakers.evaluate`): `speaker_needles`.
    Returns the results in order, each with `meeting_folder`.
    """
    say = progress or (lambda _line: None)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    for number, spec in enumerate(specs, start=1):
        say(f"meeting {number}/{len(specs)}: {spec.label} (seed {seed}), {time.perf_counter() - started:.1f} s elapsed")
        meeting = generate(spec.hours, lang=spec.lang, seed=seed, noise=spec.noise)
        folder = out / "meetings" / spec.folder
        meeting.write(folder)
        def lines(line: str, label: str = spec.label) -> None:
            say(f"  {label}: {line}")

        on_question = bar(f"  {spec.label}: questions") if bar is not None else None
        began = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="meetmem-report-") as tmp:
            if spec.source == "audio":
                from .audio import evaluate_audio

                result = evaluate_audio(meeting, folder, routes=routes, model=audio_model, k=k, budget=budget,
                                        progress=lines, on_question=on_question)
            else:
                result = evaluate(meeting, db_path=Path(tmp) / "needles.db", routes=routes, k=k, budget=budget,
                                  progress=lines, on_question=on_question)
                if spec.lang == "en" and not spec.noise and spec.hours in speaker_hours:
                    from .speakers import evaluate as evaluate_speakers

                    lines("who said it: the speaker needles, stored with edge labels named in the speaker map")
                    result["speaker_needles"] = evaluate_speakers(meeting, db_path=Path(tmp) / "speakers.db",
                                                                  routes=routes, k=k)
        results.append({"meeting_folder": str(folder), **result})
        say(f"meeting {number}/{len(specs)}: {spec.label} done in {time.perf_counter() - began:.1f} s, "
            f"{time.perf_counter() - started:.1f} s elapsed")
    return results


def write_report(out: Path, results: Sequence[dict[str, Any]], header: dict[str, Any] | None = None, *,
                 corpora: dict[str, Any] | None = None, corpora_lines: Sequence[str] = ()) -> list[Path]:
    """Write `report.json` (header, every result, the corpora's figures), the plots and `report.md` into
    `out`; returns them."""
    out.mkdir(parents=True, exist_ok=True)
    report_json = out / "report.json"
    body = {**(header or {}), "results": list(results)}
    if corpora is not None:
        body["corpora"] = corpora
    report_json.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    plots = plot(results, out) if results else []
    report_md = out / "report.md"
    report_md.write_text(markdown(results, [p.name for p in plots], plot_titles=PLOTS, corpora=corpora_lines),
                         encoding="utf-8")
    return [report_json, report_md, *plots]
