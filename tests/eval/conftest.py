"""Tiny corpora in the published formats of ../shared/data (QMSum, LoCoMo, AMI), written into tmp_path.

The real data is never needed: a fresh clone has no ../shared. Each fixture's wording is chosen so that the
figures can be worked out by hand (a question's evidence turn is the only one holding its rare words).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

#: QMSum: (speaker, content) per turn; turn 4 is markers alone and is never stored.
QMSUM_TURNS = [
    ("Chair", "Good morning everyone, let us begin the session."),
    ("Member A", "Thank you chair. I want to raise the library opening hours."),
    ("Member B", "The weather has been fine all week."),
    ("Member C", "Our cycling lanes on Harbour Street need repainting before winter."),
    ("Chair", "{vocalsound} {disfmarker}"),
    ("Member A", "The ferry timetable should add a late sailing on Fridays."),
    ("Member B", "Yes, a later ferry sailing would help shift workers."),
    ("Chair", "Let us move on to any other business."),
    ("Member C", "Nothing from me."),
]
#: (query, inclusive turn spans): each query's rare words sit only inside its spans.
QMSUM_QUERIES = [
    ("What did Member C say about the cycling lanes on Harbour Street?", [[3, 3]]),
    ("What was proposed for the ferry timetable and a late sailing?", [[5, 6]]),
]


def write_qmsum(folder: Path, meeting_id: str = "council_1") -> Path:
    """A one-meeting QMSum folder (`val/<id>.json`, `queries_val.jsonl`), committee domain (no turn times)."""
    (folder / "val").mkdir(parents=True)
    meeting = {"meeting_transcripts": [{"speaker": s, "content": c} for s, c in QMSUM_TURNS],
               "specific_query_list": [{"query": q, "answer": "", "relevant_text_span": [[str(a), str(b)]
                                                                                        for a, b in spans]}
                                       for q, spans in QMSUM_QUERIES],
               "general_query_list": [{"query": "Summarize the meeting.", "answer": ""}], "topic_list": []}
    (folder / "val" / f"{meeting_id}.json").write_text(json.dumps(meeting), encoding="utf-8")
    rows = [{"qid": f"{meeting_id}-s{i}", "meeting_id": meeting_id, "domain": "committee", "type": "specific",
             "query": q, "answer": "", "relevant_turn_spans_inclusive": spans, "n_turns": len(QMSUM_TURNS)}
            for i, (q, spans) in enumerate(QMSUM_QUERIES)]
    rows.append({"qid": f"{meeting_id}-g0", "meeting_id": meeting_id, "domain": "committee", "type": "general",
                 "query": "Summarize the meeting.", "answer": "", "relevant_turn_spans_inclusive": None,
                 "n_turns": len(QMSUM_TURNS)})
    (folder / "queries_val.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


#: LoCoMo: two sessions, listed out of order in the file on purpose (session 2 first).
LOCOMO_SESSION_1 = [
    ("Ana", "Hi Ben! How have you been lately?"),
    ("Ben", "Pretty good, thanks. Work has been busy."),
    ("Ana", "I finally bought a tangerine kayak for the lake."),
    ("Ben", "That sounds fun. I have been learning the cello on weekends."),
    ("Ana", "Nice. How is your sister doing?"),
    ("Ben", "She moved to Lisbon for a job at an aquarium."),
    ("Ana", "Wow, that is a big change."),
    ("Ben", "Yes, she loves it there."),
]
LOCOMO_SESSION_2 = [
    ("Ben", "Hey Ana, long time no see!"),
    ("Ana", "Hi! I went paddling at dawn yesterday."),
    ("Ben", "Look at this photo from my recital."),
    ("Ana", "Great picture. Did the audience enjoy it?"),
    ("Ben", "They did, we played a sonata by Brahms."),
    ("Ana", "I should come to the next recital."),
    ("Ben", "Definitely, it is in the spring."),
    ("Ana", "Talk soon!"),
]
LOCOMO_CAPTION = {"D2:3": "a man playing a cello on a stage"}
#: (question, evidence as published, category)
LOCOMO_QA = [
    ("What colour is the kayak Ana bought?", ["D1:3"], 4),  # "kayak" only in D1:3
    ("Where did the sister move for the aquarium job?", ["D1:6"], 4),  # "sister": D1:5 and D1:6
    ("Which composer's sonata did Ben play at his recital, and which instrument?", ["D2:5; D1:4"], 1),
    ("What did Ben say about the Brahms recital photo?", ["D2:3", "D9:9"], 2),  # D9:9 names no turn
    ("What did Ana think of the submarine?", ["D1:3"], 5),  # unanswerable, evidence recalled anyway
    ("Is Ana an ally of Ben?", [], 3),  # no evidence: not scored
]
LOCOMO_DATES = {1: "11:01 am on 17 December, 2022", 2: "1:56 pm on 8 May, 2023"}


def locomo_conversation(sample_id: str = "conv-t1") -> dict[str, Any]:
    def session(number: int, turns: list[tuple[str, str]]) -> list[dict[str, Any]]:
        out = []
        for i, (speaker, text) in enumerate(turns, start=1):
            turn = {"speaker": speaker, "dia_id": f"D{number}:{i}", "text": text}
            if turn["dia_id"] in LOCOMO_CAPTION:
                turn["blip_caption"] = LOCOMO_CAPTION[turn["dia_id"]]
                turn["img_url"] = ["https://example.invalid/photo.jpg"]
            out.append(turn)
        return out

    conversation = {"speaker_a": "Ana", "speaker_b": "Ben",
                    "session_2_date_time": LOCOMO_DATES[2], "session_2": session(2, LOCOMO_SESSION_2),
                    "session_1_date_time": LOCOMO_DATES[1], "session_1": session(1, LOCOMO_SESSION_1),
                    "session_3_date_time": "2:00 pm on 9 May, 2023", "session_3": []}
    qa = [{"question": q, "answer": "x", "evidence": ev, "category": c} if c != 5 else
          {"question": q, "adversarial_answer": "x", "evidence": ev, "category": c} for q, ev, c in LOCOMO_QA]
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa, "event_summary": {},
            "observation": {}, "session_summary": {}}


def write_locomo(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "locomo10_dev.json").write_text(json.dumps([locomo_conversation()]), encoding="utf-8")
    return folder


AMI_ACTS = [
    ("M1.A.1", "A", 0.0, 3.0, "Okay so let's get started with the kickoff."),
    ("M1.B.2", "B", 3.0, 6.0, "I will send the revised budget to the finance team by Friday."),
    ("M1.A.3", "A", 6.0, 9.0, "We decided to go with the rubber casing for the remote."),
    ("M1.C.4", "C", 9.0, 12.0, "The weather was lovely this morning."),
    ("M1.C.5", "C", 12.0, 14.0, "Yeah."),
]


def write_ami(folder: Path) -> Path:
    """One AMI meeting: the rules find one todo (M1.B.2) and one decision (M1.A.3); the gold holds two action
    items (one of them on M1.B.2) and one decision on M1.A.3 plus an "NA." sentence that is skipped."""
    (folder / "dev").mkdir(parents=True)
    meeting = {"meeting_id": "M1",
               "dialogue_acts": [{"id": i, "speaker": s, "start": a, "end": b, "da_type": "inf", "text": t}
                                 for i, s, a, b, t in AMI_ACTS],
               "abstractive_summary": {
                   "abstract": [],
                   "actions": [{"id": "g1", "text": "B will send the budget to finance.",
                                "evidence_da_ids": ["M1.B.2"]},
                               {"id": "g2", "text": "C will check the weather forecast.",
                                "evidence_da_ids": ["M1.C.4"]}],
                   "decisions": [{"id": "g3", "text": "The team chose a rubber casing.", "evidence_da_ids": ["M1.A.3"]},
                                 {"id": "g4", "text": "NA.", "evidence_da_ids": []}],
                   "problems": []},
               "extractive_summary_da_ids": []}
    (folder / "dev" / "M1.json").write_text(json.dumps(meeting), encoding="utf-8")
    return folder


@pytest.fixture
def qmsum_folder(tmp_path: Path) -> Path:
    return write_qmsum(tmp_path / "qmsum")


@pytest.fixture
def locomo_folder(tmp_path: Path) -> Path:
    return write_locomo(tmp_path / "locomo")


@pytest.fixture
def ami_folder(tmp_path: Path) -> Path:
    return write_ami(tmp_path / "ami")


@pytest.fixture
def corpora_folder(tmp_path: Path) -> Path:
    """A shared-data folder with qmsum/, locomo/ and ami/ (no audio/)."""
    data = tmp_path / "data"
    write_qmsum(data / "qmsum")
    write_locomo(data / "locomo")
    write_ami(data / "ami")
    return data


@pytest.fixture(scope="session")
def locomo_turns() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (speaker, text) turns of the LoCoMo fixture's sessions 1 and 2."""
    return LOCOMO_SESSION_1, LOCOMO_SESSION_2
