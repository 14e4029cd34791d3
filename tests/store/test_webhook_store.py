"""The webhook store (store/webhooks.py) on both backends: endpoints per tenant, a delivery queued once per
event, claimed by one sender at a time, retried with backoff under the same id, given up after the last."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from meetmem.store.webhooks import MAX_ATTEMPTS, RETRY_AFTER_S, UnknownWebhook, WebhookError, WebhookStore


def test_an_event_is_queued_once_per_endpoint_that_wants_it(log: Any) -> None:
    store = WebhookStore(log)
    both = store.add("acme", "https://hooks.example.com/a", "meeting.closed,ledger.updated")
    closed_only = store.add("acme", "https://hooks.example.com/b", ["meeting.closed"], description="tracker")
    store.add("globex", "https://hooks.example.com/g", ["meeting.closed"])
    assert store.enqueue("acme", "meeting.closed", "m1", {"n": 1}, key="closed@9") == 2
    assert store.enqueue("acme", "meeting.closed", "m1", {"n": 1}, key="closed@9") == 0  # a second process
    assert store.enqueue("acme", "ledger.updated", "m1", {"n": 1}, key="v1") == 1
    mine = store.deliveries("acme")
    assert sorted((d.webhook_id, d.event) for d in mine) == sorted(
        [(both.webhook_id, "meeting.closed"), (closed_only.webhook_id, "meeting.closed"),
         (both.webhook_id, "ledger.updated")])
    assert all(d.status == "pending" and d.attempts == 0 and d.delivery_id.startswith("msg_") for d in mine)
    assert store.deliveries("globex") == []  # another tenant's endpoint hears nothing of acme's meeting
    assert [e.webhook_id for e in store.list("globex")] != [both.webhook_id]
    with pytest.raises(UnknownWebhook):
        store.remove("globex", both.webhook_id)


def test_one_sender_claims_a_delivery_then_backoff_then_success(log: Any) -> None:
    store = WebhookStore(log)
    store.add("acme", "https://hooks.example.com/a", ["meeting.closed"])
    store.enqueue("acme", "meeting.closed", "m1", {"n": 1}, key="closed@3")
    claims: list[list[Any]] = []
    start = threading.Barrier(4)

    def claim() -> None:
        start.wait()
        claims.append(store.due(limit=4, lease_s=60))

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(len(c) for c in claims) == 1  # four senders at once, one of them has it
    delivery, endpoint = next(c for c in claims if c)[0]
    assert endpoint.url == "https://hooks.example.com/a" and endpoint.secret.startswith("whsec_")
    assert store.finish(delivery, status=503, error="HTTP 503") == "pending"
    again = store.deliveries("acme")[0]
    assert again.attempts == 1 and again.last_status == 503 and again.delivery_id == delivery.delivery_id
    assert store.due() == []  # not before its backoff
    store.retry_now("acme", delivery.delivery_id)
    (retried, _), = store.due()
    assert retried.delivery_id == delivery.delivery_id  # the same webhook-id on every attempt
    assert store.finish(retried, status=204) == "delivered"
    done = store.deliveries("acme")[0]
    assert done.status == "delivered" and done.attempts == 2 and done.delivered_at
    assert store.due() == [] and RETRY_AFTER_S[0] >= 5


def test_a_delivery_is_given_up_after_the_last_attempt(log: Any) -> None:
    store = WebhookStore(log)
    store.add("acme", "https://hooks.example.com/a", ["meeting.closed"])
    store.enqueue("acme", "meeting.closed", "m1", {}, key="closed@1")
    for attempt in range(MAX_ATTEMPTS):
        store.retry_now("acme", store.deliveries("acme")[0].delivery_id)
        (delivery, _), = store.due()
        outcome = store.finish(delivery, status=None, error="connection refused")
        assert outcome == ("failed" if attempt == MAX_ATTEMPTS - 1 else "pending")
    assert store.deliveries("acme")[0].attempts == MAX_ATTEMPTS


def test_removing_an_endpoint_drops_what_it_still_had_to_send(log: Any) -> None:
    store = WebhookStore(log)
    endpoint = store.add("acme", "https://hooks.example.com/a", ["meeting.closed"])
    store.enqueue("acme", "meeting.closed", "m1", {}, key="closed@1")
    assert store.remove("acme", endpoint.webhook_id).url == endpoint.url
    assert store.list("acme") == [] and store.due() == []
    assert store.deliveries("acme")[0].status == "failed"


@pytest.mark.parametrize(("url", "events", "secret", "says"), [
    ("ftp://example.com/x", "meeting.closed", None, r"not an http\(s\) URL"),
    ("https://example.com", "meeting.opened", None, "unknown webhook events"),
    ("https://example.com", "", None, "unknown webhook events"),
    ("https://example.com", "meeting.closed", "whsec_c2hvcnQ=", "5 bytes"),
])
def test_bad_input_is_refused_and_nothing_stored(log: Any, url: str, events: str, secret: str | None,
                                                 says: str) -> None:
    store = WebhookStore(log)
    with pytest.raises(WebhookError, match=says):
        store.add("acme", url, events, secret=secret)
    assert store.list("acme") == []


def test_a_deleted_meetings_deliveries_go_with_it(log: Any, tmp_path) -> None:
    from meetmem.store.receipts import ReceiptKey
    from meetmem.store.records import SegmentInput

    store = WebhookStore(log)
    store.add("acme", "https://hooks.example.com/a", ["meeting.closed"])
    for meeting in ("gone", "kept"):
        log.append(meeting, "d", [SegmentInput(seq=0, start=0.0, end=1.0, text="the quote was 4,250")], tenant="acme")
        store.enqueue("acme", "meeting.closed", meeting, {"summary": "the quote was 4,250"}, key="closed@0")
    log.delete_meeting("gone", tenant="acme", reason="test", key=ReceiptKey.load(tmp_path / "key", create=True))
    assert [d.meeting_id for d in store.deliveries("acme")] == ["kept"]
