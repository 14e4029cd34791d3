"""Signed receipts: proof, held outside the database, of how far a meeting's log reached when it was acknowledged.

The hash chain shows that no stored row was altered, and the meeting's head (kept apart from the segments)
shows where the chain ended, but someone who can write the database file can rewrite all of those
together. A receipt is the cloud's signature (HMAC-SHA256 with a key kept outside the database) over a
meeting's chain position and the hash there, returned with every acknowledgement and kept by the device.
Checked later against the log (`meetmem verify MEETING --receipt FILE`), it shows whether the log still
holds what was acknowledged: a log cut short, or rewritten from some position on, no longer matches.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import StoreError

#: Bumped if the signed message ever changes shape; a receipt names the version it was signed with.
RECEIPT_VERSION = 1
_KEY_BYTES = 32


class ReceiptError(StoreError):
    """A receipt cannot be read, or was not signed by this server's key."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """What the cloud acknowledged: meeting `meeting_id` of `tenant` held chain position `pos` with hash
    `head` (`pos` -1 and the genesis hash for a meeting with no rows yet)."""

    tenant: str
    meeting_id: str
    pos: int
    head: str
    key_id: str
    sig: str
    version: int = RECEIPT_VERSION

    def public(self) -> dict[str, Any]:
        return {"version": self.version, "tenant": self.tenant, "meeting_id": self.meeting_id, "pos": self.pos,
                "head": self.head, "key_id": self.key_id, "sig": self.sig}

    @staticmethod
    def from_json(data: Any) -> Receipt:
        """A receipt from its JSON object (as the API returned it)."""
        if not isinstance(data, dict):
            raise ReceiptError(f"a receipt is a JSON object, got {type(data).__name__}")
        try:
            receipt = Receipt(tenant=data["tenant"], meeting_id=data["meeting_id"], pos=data["pos"],
                              head=data["head"], key_id=data["key_id"], sig=data["sig"],
                              version=data.get("version", RECEIPT_VERSION))
        except KeyError as exc:
            raise ReceiptError(f"a receipt needs the field {exc.args[0]!r}") from None
        if not all(isinstance(v, str) for v in (receipt.tenant, receipt.meeting_id, receipt.head, receipt.key_id,
                                                receipt.sig)):
            raise ReceiptError("a receipt's tenant, meeting_id, head, key_id and sig are strings")
        if isinstance(receipt.pos, bool) or not isinstance(receipt.pos, int):
            raise ReceiptError("a receipt's pos is an integer")
        return receipt


def _message(version: int, tenant: str, meeting_id: str, pos: int, head: str) -> bytes:
    return json.dumps(["meetmem-receipt", version, tenant, meeting_id, pos, head], ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")


class ReceiptKey:
    """The server's receipt key: 32 random bytes in a file of its own (mode 0600), made on first use.

    Kept out of the database on purpose: whoever can rewrite the database must not also be able to sign.
    """

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ReceiptError("a receipt key needs at least 16 bytes")
        self._secret = secret
        self.key_id = hashlib.sha256(b"meetmem-receipt-key" + secret).hexdigest()[:12]

    @staticmethod
    def load(path: str | Path, *, create: bool = False) -> ReceiptKey:
        """The key stored at `path` (hex); with `create`, a new one is made there when the file is missing.

        Raises:
            ReceiptError: the file is missing (without `create`), unreadable or not a key.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            if not create:
                raise ReceiptError(f"no receipt key at {path}: receipts are checked with the key of the server "
                                   "that signed them (MEETMEM_RECEIPT_KEY)") from None
            return ReceiptKey._create(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise ReceiptError(f"cannot read the receipt key {path}: {exc}") from exc
        try:
            return ReceiptKey(bytes.fromhex(text))
        except ValueError:
            raise ReceiptError(f"{path} does not hold a receipt key (hex digits expected)") from None

    @staticmethod
    def _create(path: Path) -> ReceiptKey:
        secret = secrets.token_bytes(_KEY_BYTES)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            return ReceiptKey.load(path)
        except OSError as exc:
            raise ReceiptError(f"cannot create the receipt key {path}: {exc}") from exc
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secret.hex() + "\n")
            out.flush()
            os.fsync(out.fileno())
        return ReceiptKey(secret)

    def mac(self, message: bytes) -> str:
        """HMAC-SHA256 of `message` with this key (hex): what tombstones are signed with (store/tombstones.py)."""
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def sign(self, tenant: str, meeting_id: str, pos: int, head: str) -> Receipt:
        sig = hmac.new(self._secret, _message(RECEIPT_VERSION, tenant, meeting_id, pos, head), hashlib.sha256)
        return Receipt(tenant, meeting_id, pos, head, self.key_id, sig.hexdigest())

    def check_signature(self, receipt: Receipt) -> None:
        """Raises `ReceiptError` unless this key signed exactly this receipt."""
        if receipt.version != RECEIPT_VERSION:
            raise ReceiptError(f"receipt version {receipt.version} is not known here (expected {RECEIPT_VERSION})")
        if receipt.key_id != self.key_id:
            raise ReceiptError(f"the receipt was signed with key {receipt.key_id}, not this server's {self.key_id}")
        want = hmac.new(self._secret, _message(receipt.version, receipt.tenant, receipt.meeting_id, receipt.pos,
                                               receipt.head), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, receipt.sig):
            raise ReceiptError(f"the receipt for position {receipt.pos} does not carry this server's signature "
                               "(altered, or forged)")


def read_receipts(path: str | Path) -> list[Receipt]:
    """Receipts from a file: one JSON object, a JSON list of them, or JSON Lines (one per line).

    Raises:
        ReceiptError: naming the file (and line) that cannot be read.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReceiptError(f"{path}: cannot read the receipts: {exc}") from exc
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if whole is not None:
        items = whole if isinstance(whole, list) else [whole]
        try:
            return [Receipt.from_json(item) for item in items]
        except ReceiptError as exc:
            raise ReceiptError(f"{path}: {exc}") from None
    receipts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            receipts.append(Receipt.from_json(json.loads(line)))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ReceiptError(f"{path}:{number}: not a JSON receipt: {exc}") from None
        except ReceiptError as exc:
            raise ReceiptError(f"{path}:{number}: {exc}") from None
    if not receipts:
        raise ReceiptError(f"{path}: no receipts in the file")
    return receipts
