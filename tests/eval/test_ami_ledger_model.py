"""`meetmem bench ledger --llm-url`: rules alone vs rules + the vetted model pass, in one run, on fixed windows.

The endpoint is a scripted OpenAI-compatible server on a loopback port (the real client and the real
`LLMLedger` vetting run against it); the local model's own run is `--model local-qwen`, measured in
docs/BENCHMARKS.md, not here.
"""

from __future__ import annotations

import json
from pathlib import Path

from fakes.chat_server import ErrorReply, ScriptedChatServer

from meetmem.eval.corpora.ami_ledger import _gold, ami_segments, model_window

CHATTER = ["okay so um", "right", "yeah", "mm-hmm", "so the buttons", "hmm"]


def _meeting(meeting_id: str, texts: list[str], actions=(), decisions=()) -> dict:
    acts = [{"id": f"{meeting_id}.{n}", "start": 10.0 * n, "end": 10.0 * n + 8, "text": text, "speaker": "A"}
            for n, text in enumerate(texts)]
    return {"meeting_id": meeting_id, "dialogue_acts": acts,
            "abstractive_summary": {"actions": [{"text": t, "evidence_da_ids": e} for t, e in actions],
                                    "decisions": [{"text": t, "evidence_da_ids": e} for t, e in decisions]}}


def _data(tmp_path: Path) -> Path:
    (tmp_path / "ami" / "dev").mkdir(parents=True)
    first = _meeting("XX0001a", [*CHATTER[:4], "so the buttons", "the remote should be yellow I think",
                                 "hmm", "right"],
                     decisions=[("The remote will be yellow.", ["XX0001a.5"])])
    second = _meeting("XX0002a", CHATTER[:4], actions=[("NA.", [])])
    for meeting in (first, second):
        (tmp_path / "ami" / "dev" / f"{meeting['meeting_id']}.json").write_text(json.dumps(meeting))
    return tmp_path / "ami"


def test_the_window_is_the_tile_with_the_most_gold_evidence(tmp_path):
    meeting = json.loads((_data(tmp_path) / "dev" / "XX0001a.json").read_text())
    window = model_window(ami_segments(meeting), _gold(meeting), 4)
    assert [s.segment_id for s in window] == ["XX0001a.4", "XX0001a.5", "XX0001a.6", "XX0001a.7"]


def test_bench_scores_rules_alone_and_with_the_model_in_one_run(tmp_path, run_cli):
    data = _data(tmp_path)

    def answer(request) -> str:
        user = request["messages"][-1]["content"]
        if "yellow" not in user:
            return '{"items": []}'
        return json.dumps({"items": [
            {"kind": "decision", "text": "The remote should be yellow", "cite": [2]},
            {"kind": "todo", "text": "Draw the remote", "owner": "Mary", "task": "draw it", "cite": [9]},
        ]})

    with ScriptedChatServer(answer) as server:
        result = run_cli("bench", "ledger", "--data", str(data), "--llm-url", server.url, "--llm-model", "m",
                         "--meetings", "XX0001a,XX0002a", "--window", "4", "--json", db=None)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["benchmark"] == "ami_ledger_model"
    assert [w["first_act"] for w in report["windows"]] == ["XX0001a.4", "XX0002a.0"]
    assert report["rules"]["decisions"]["counts"]["extracted"] == 0
    assert report["rules"]["decisions"]["evidence"]["recall"] == 0.0
    plus = report["rules_plus_model"]["decisions"]
    assert plus["evidence"] == {"precision": 1.0, "recall": 1.0, "recall_of_gold_with_evidence": 1.0}
    assert plus["text"] == {"precision": 1.0, "recall": 1.0}
    assert report["model_beats_rules_on_precision_and_recall"]["decisions"] == {"evidence": True, "text": True}
    # the todo citing a segment it was not given is rejected by the vetting, not scored
    assert report["model_items_kept"] == 1 and report["model_items_rejected"] == 1
    assert report["model_calls"] == 2
    assert report["speech_hours"] == round((38 + 38) / 3600, 4)
    assert report["model_seconds_per_meeting_hour"] is not None


def test_a_failing_endpoint_ends_the_bench_with_the_reason(tmp_path, run_cli):
    data = _data(tmp_path)
    with ScriptedChatServer([ErrorReply(500, "overloaded")]) as server:
        result = run_cli("bench", "ledger", "--data", str(data), "--llm-url", server.url, "--llm-model", "m",
                         "--meetings", "XX0001a", "--window", "4", db=None)
    assert result.returncode == 2
    assert "the model pass failed on XX0001a" in result.stderr and "500" in result.stderr
    assert result.stdout == ""


def test_an_unknown_meeting_is_named(tmp_path, run_cli):
    result = run_cli("bench", "ledger", "--data", str(_data(tmp_path)), "--llm-url", "http://127.0.0.1:9/v1",
                     "--llm-model", "m", "--meetings", "XX0009z", db=None)
    assert result.returncode == 2
    assert "no meeting XX0009z" in result.stderr
