"""What every route depends on: the service, the caller's tenant (from the bearer token), path checks."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..auth import TokenInfo, parse_bearer
from ..limits import TOKEN_STATE
from ..schemas import ErrorOut
from ..service import MeetingService

_bearer = HTTPBearer(auto_error=False, description="a token from `meetmem token create --tenant NAME`")


def get_service(request: Request) -> MeetingService:
    return request.app.state.service


def token_record(request: Request) -> tuple[str | None, TokenInfo | None]:
    """The request's bearer token (None: no `Authorization: Bearer` header) and its stored record (None:
    unknown, revoked or expired). The client limits looked it up already (cloud/limits.py): one lookup a request."""
    token = parse_bearer(request.headers.get("authorization"))
    if token is None:
        return None, None
    known = request.scope.get("state", {}).get(TOKEN_STATE)
    if known is not None and known[0] == token:
        return token, known[1]
    return token, request.app.state.tokens.lookup(token)


def get_tenant(
    request: Request,
    # Declared for the OpenAPI security scheme; the header is parsed by `auth.parse_bearer`, as the limits parse it.
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The tenant of the request's bearer token; 401 when it is missing, unknown, revoked or expired."""
    token, info = token_record(request)
    if token is None:
        raise HTTPException(401, "missing bearer token: send 'Authorization: Bearer TOKEN'",
                            headers={"WWW-Authenticate": "Bearer"})
    if info is None:
        raise HTTPException(401, "invalid, revoked or expired token",
                            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    return info.tenant


Service = Annotated[MeetingService, Depends(get_service)]
Tenant = Annotated[str, Depends(get_tenant)]


def get_token(request: Request) -> str:
    """The request's bearer token itself (after `Tenant` has checked it): a stream checks it again later."""
    return parse_bearer(request.headers.get("authorization")) or ""


Token = Annotated[str, Depends(get_token)]
MeetingId = Annotated[
    str,
    # No control character anywhere (NUL included: `\S` alone would let one stand as the non-space).
    Path(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
         description="the meeting's id, scoped to the token's tenant", examples=["standup-2026-11-30"]),
]


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route can answer with (every body is `ErrorOut`)."""
    what = {
        400: "the body is not UTF-8 encoded JSON",
        401: "missing, unknown, revoked or expired bearer token",
        404: "the tenant has no such meeting",
        409: "a seq already stored with different content, or going backwards; or the meeting was deleted "
        "(its tombstone keeps the id)",
        408: "the request body stopped arriving (nothing for `MEETMEM_BODY_TIMEOUT` seconds)",
        413: "the request body is larger than the configured limit",
        422: "a malformed request: the detail names the field",
        429: "too many requests at once from this address, or too many a second for this token: retry after "
        "`Retry-After` seconds",
        503: "the models are still loading, or the database is busy: retry after `Retry-After` seconds",
    }
    return {status: {"model": ErrorOut, "description": what[status]} for status in statuses}
