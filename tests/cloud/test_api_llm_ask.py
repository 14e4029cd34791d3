"""Ask over HTTP and the CLI with a language model configured (a scripted one over loopback HTTP): the
answer's citations verified, `session_id` making questions one conversation, settings checked up front."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from fakes.chat_server import ScriptedChatServer

from meetmem.cloud.app import create_app
from meetmem.settings import Settings
from meetmem.store.records import SegmentInput
from meetmem.summarizers.errors import SummarizerError

#: Every test here runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

Api = Any  # tests/cloud/conftest.py

MEETING = "launch"
QUESTIONS = ["By when does Bob owe the supplier the revised quote?", "Which sensor board are we ordering?"]


@pytest.fixture
def embedder() -> None:
    """These tests run on BM25 alone (`embedders=None`): `make_api` need not load the MiniLM model."""
    return None


def cite_line(request: Any) -> str:
    """Cite the first transcript line of the question's evidence, quoting its first three words."""
    user = request["messages"][-1]["content"]
    match = re.search(r"^\[#(\d+) [^\]]*\] (\S+ \S+ \S+)", user, re.MULTILINE)
    assert match, user
    return f'They said "{match.group(2)}" [#{match.group(1)}].'


def flat(messages: list[dict[str, Any]]) -> str:
    return "\x00".join(m["role"] + "\x01" + str(m["content"]) for m in messages)


def load(api: Api, segments: list[SegmentInput]) -> dict[str, str]:
    headers = api.headers(api.token("local"))
    body = {"device_id": "glasses", "segments": [{k: v for k, v in asdict(s).items() if v is not None}
                                                 for s in segments]}
    assert api.client.post(f"/v1/meetings/{MEETING}/segments", json=body, headers=headers).status_code == 200
    assert api.service.scheduler.indexer.wait_idle(60) and api.service.scheduler.summaries.wait_idle(60)
    return headers


def test_http_ask_with_a_model_and_a_session(make_api: Callable[..., Api], sample_segments: list[SegmentInput]
                                             ) -> None:
    with ScriptedChatServer(cite_line) as server:
        api = make_api(embedders=None, answerer="llm", llm_url=server.url, llm_model="scripted")
        headers = load(api, sample_segments)
        answers = []
        for question in QUESTIONS:
            r = api.client.post(f"/v1/meetings/{MEETING}/ask", headers=headers,
                                json={"question": question, "explain": True, "session_id": "glasses-1.a_b"})
            assert r.status_code == 200, r.text
            answers.append(r.json())
        r = api.client.post(f"/v1/meetings/{MEETING}/ask", headers=headers, json={"question": QUESTIONS[1]})
        assert r.status_code == 200
    stored = {s["segment_id"]: s["text"] for s in api.client.get(f"/v1/meetings/{MEETING}/segments",
                                                                 headers=headers).json()}
    for got in answers:
        assert set(got) == {"question", "kind", "answer", "citations", "manifest", "route", "plan"}
        assert got["answer"].startswith("They said") and "#" not in got["answer"]
        assert got["citations"] and all(stored[c["segment_id"]] == c["text"] for c in got["citations"])
        assert got["manifest"][0] == {"block": "instructions", "tokens": got["manifest"][0]["tokens"],
                                      "reason": "pinned"}
    first, second, alone = (r.json["messages"] for r in server.requests)
    assert flat(second).startswith(flat(first))  # one session: the first prompt is the second's prefix
    assert len(alone) == 2  # no session id: no history
    assert len(api.service.sessions) == 1


@pytest.mark.parametrize("session_id", ["", "a b", "x" * 65, "naïve", "../etc", 7])
def test_a_bad_session_id_is_a_422(api_without_model: tuple[Api, dict[str, str]], session_id: Any) -> None:
    api, headers = api_without_model
    r = api.client.post(f"/v1/meetings/{MEETING}/ask", headers=headers,
                        json={"question": QUESTIONS[0], "session_id": session_id})
    assert r.status_code == 422, r.text
    assert "session_id" in r.json()["detail"]


@pytest.fixture
def api_without_model(make_api: Callable[..., Api], sample_segments: list[SegmentInput]
                      ) -> tuple[Api, dict[str, str]]:
    api = make_api(embedders=None)
    return api, load(api, sample_segments)


def test_without_a_model_a_session_id_changes_nothing(api_without_model: tuple[Api, dict[str, str]]) -> None:
    api, headers = api_without_model
    plain = api.client.post(f"/v1/meetings/{MEETING}/ask", headers=headers,
                            json={"question": QUESTIONS[0], "explain": True})
    with_session = api.client.post(f"/v1/meetings/{MEETING}/ask", headers=headers,
                                   json={"question": QUESTIONS[0], "explain": True, "session_id": "s1"})
    assert plain.status_code == with_session.status_code == 200
    assert plain.json() == with_session.json()
    assert "March 12th" in plain.json()["answer"]
    assert len(api.service.sessions) == 0


@pytest.mark.parametrize(("overrides", "named"), [
    ({"answerer": "llm"}, "MEETMEM_LLM_MODEL"),
    ({"answerer": "llm", "llm_model": "m"}, "MEETMEM_LLM_URL"),
    ({"answerer": "llm", "llm_model": "m", "llm_provider": "anthropic"}, "MEETMEM_LLM_API_KEY"),
    ({"answerer": "llm", "llm_model": "m", "llm_provider": "gemini"}, "MEETMEM_LLM_PROVIDER"),
    ({"answerer": "oracle"}, "MEETMEM_ANSWERER"),
])
def test_an_incomplete_model_configuration_is_named_at_once(tmp_path: Path, overrides: dict[str, Any],
                                                            named: str) -> None:
    with pytest.raises(SummarizerError, match=named):
        create_app(Settings(db=tmp_path / "x.db", **overrides), embedders=None)


def test_cli_questions_file_is_one_session(run_cli: Callable[..., Any], sample_meeting_path: Path,
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("ingest", MEETING, str(sample_meeting_path)).returncode == 0
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"question": q}) + "\n" for q in QUESTIONS), encoding="utf-8")
    with ScriptedChatServer(cite_line) as server:
        monkeypatch.setenv("MEETMEM_ANSWERER", "llm")
        monkeypatch.setenv("MEETMEM_LLM_URL", server.url)
        monkeypatch.setenv("MEETMEM_LLM_MODEL", "scripted")
        result = run_cli("ask", MEETING, "--questions", str(questions), "--json")
    assert result.returncode == 0, result.stderr
    lines = result.json_lines()
    assert [line["question"] for line in lines] == QUESTIONS
    assert all(line["answer"].startswith("They said") and line["citations"] for line in lines)
    first, second = (r.json["messages"] for r in server.requests)
    assert flat(second).startswith(flat(first))


def test_cli_names_a_missing_model_setting(run_cli: Callable[..., Any], sample_meeting_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("ingest", MEETING, str(sample_meeting_path)).returncode == 0
    monkeypatch.setenv("MEETMEM_ANSWERER", "llm")
    monkeypatch.delenv("MEETMEM_LLM_URL", raising=False)
    monkeypatch.delenv("MEETMEM_LLM_MODEL", raising=False)
    result = run_cli("ask", MEETING, QUESTIONS[0], "--json")
    assert result.returncode == 1 and result.stdout == ""
    assert "MEETMEM_LLM_MODEL" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.backends("postgres")
def test_a_session_begun_on_one_api_process_continues_on_another(make_api: Callable[..., Api],
                                                                 sample_segments: list[SegmentInput]) -> None:
    """On PostgreSQL the rounds live in the database: a second app on the same database (another API process)
    shows the first app's round in its prompt. (On SQLite, one process per file, they stay in memory.)"""
    with ScriptedChatServer(cite_line) as server:
        one = make_api(embedders=None, answerer="llm", llm_url=server.url, llm_model="scripted")
        headers = load(one, sample_segments)
        two = make_api(embedders=None, answerer="llm", llm_url=server.url, llm_model="scripted")
        for api, question in zip((one, two), QUESTIONS, strict=True):
            r = api.client.post(f"/v1/meetings/{MEETING}/ask", headers=headers,
                                json={"question": question, "explain": True, "session_id": "shared"})
            assert r.status_code == 200, r.text
    first, second = (r.json["messages"] for r in server.requests)
    assert flat(second).startswith(flat(first))  # the second process continued the first one's conversation
    assert len(one.service.sessions) == len(two.service.sessions) == 1
    # Deleting the meeting removes its sessions from the database.
    assert two.client.delete(f"/v1/meetings/{MEETING}", headers=headers).status_code == 200
    assert len(one.service.sessions) == 0
