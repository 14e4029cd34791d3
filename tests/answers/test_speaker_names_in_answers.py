"""Quotes, citations and exports name a speaker label by the meeting's speaker map, against `meetmem serve`
on a loopback port, on each store: `speaker` stays the transcript's label and `speaker_name` is added beside
it; the documents (subtitles, minutes) state only a name a user set, the JSON carries suggestions too."""

from __future__ import annotations

from typing import Any

from meetmem.answers.speaker_names import named_quotes

#: `server` runs on a SQLite file and on a PostgreSQL database.
BACKENDS = ("sqlite", "postgres")

MEETING = "casing-names"
LINES = [
    ("S1", "Good morning everyone, let's start with the casing."),
    ("S2", "Hi, I'm Priya from finance."),
    ("S2", "The budget for the casing is forty thousand euros and we are not using titanium."),
    ("S1", "Thanks. Tom, what do you think about the hinge?"),
    ("S3", "The hinge needs a second supplier, and the hinge quote arrives on the ninth of May."),
    ("S4", "I will book the meeting room."),
]


def test_named_quotes_touch_only_an_attribution() -> None:
    names = {"S2": "Priya", "S1": "Ana"}
    text = '"We are not using titanium." (S2, 00:12)\n"S1 is late" (S1, 1:02:03) (S2 said)'
    assert named_quotes(text, names) == ('"We are not using titanium." (Priya, 00:12)\n'
                                         '"S1 is late" (Ana, 1:02:03) (S2 said)')
    assert named_quotes("(S22, 00:12)", {"S2": "Priya"}) == "(S22, 00:12)"


def _cited(answer: dict[str, Any], text: str) -> dict[str, Any]:
    return next(c for c in answer["citations"] if text in c["text"])


def test_answers_citations_and_exports_name_the_labels(server: Any) -> None:
    token = server.token("names")
    with server.client(token, timeout=120) as client:
        rows = [{"seq": i, "start": 6.0 * i, "end": 6.0 * i + 5.0, "speaker": speaker, "text": text}
                for i, (speaker, text) in enumerate(LINES)]
        r = client.post(f"/v1/meetings/{MEETING}/segments", json={"device_id": "glasses", "segments": rows})
        assert r.status_code == 200, r.text
        r = client.put(f"/v1/meetings/{MEETING}/speakers", json={"speakers": {"S3": "Thomas"}})
        assert r.status_code == 200, r.text

        # S2 is Priya by her introduction (a suggestion), S3 Thomas by a user; S4 has no name.
        got = client.post(f"/v1/meetings/{MEETING}/ask", json={"question": "How much is the casing budget?"}).json()
        assert "forty thousand euros" in got["answer"] and "(Priya, 00:12)" in got["answer"], got["answer"]
        budget = _cited(got, "forty thousand")
        assert budget["speaker"] == "S2" and budget["speaker_name"] == "Priya"
        got = client.post(f"/v1/meetings/{MEETING}/ask", json={"question": "When does the hinge quote arrive?"}).json()
        assert "(Thomas, 00:24)" in got["answer"], got["answer"]
        assert _cited(got, "hinge quote")["speaker"] == "S3" and _cited(got, "hinge quote")["speaker_name"] == "Thomas"
        got = client.post(f"/v1/meetings/{MEETING}/ask", json={"question": "Who will book the meeting room?"}).json()
        room = _cited(got, "meeting room")
        assert room["speaker"] == "S4" and "speaker_name" not in room and "(S4, 00:30)" in got["answer"]
        # Across meetings too.
        across = client.post("/v1/ask", json={"question": "When does the hinge quote arrive?"}).json()
        assert _cited(across, "hinge quote")["speaker_name"] == "Thomas"

        # The JSON export's segments add the name now (a suggestion too); the subtitles state a user's only.
        doc = client.get(f"/v1/meetings/{MEETING}/export?format=json").json()
        named = {s["speaker"]: s["speaker_name"] for s in doc["segments"]}
        assert named == {"S1": None, "S2": "Priya", "S3": "Thomas", "S4": None}
        srt = client.get(f"/v1/meetings/{MEETING}/export?format=srt").text
        assert "Thomas: The hinge needs" in srt and "S2: The budget" in srt and "S4: I will book" in srt
        vtt = client.get(f"/v1/meetings/{MEETING}/export?format=vtt").text
        assert "<v Thomas>The hinge needs" in vtt
        minutes = client.get(f"/v1/meetings/{MEETING}/export?format=md").text
        assert "Thomas (S3)" in minutes and "Priya (S2)" not in minutes

        # Nothing stored changed: the segments keep their labels.
        segments = client.get(f"/v1/meetings/{MEETING}/segments").json()
        assert [s["speaker"] for s in segments] == [speaker for speaker, _ in LINES]
