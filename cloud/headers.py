"""Security headers on every response: no content sniffing anywhere; on the meeting app, the API pages and
their assets, a Content-Security-Policy, no framing and no referrer.

The meeting app loads only its own script, stylesheet and icon, talks only to its own origin and plays
audio from `blob:` URLs it makes from fetched bytes, so its policy allows exactly that: an injected script
or a foreign frame around the page (clickjacking its buttons) is refused by the browser. `/docs` and
`/redoc` run an inline start-up script and inline styles; their route sets a policy allowing that script by
its hash (`cloud/routers/web.py`), and this one is kept for anything else under their paths.
"""

from __future__ import annotations

from typing import Any

#: The meeting app (`/`, `/app/...`): its own files, its own API, and audio played from blob: URLs.
PAGE_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "media-src 'self' blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))

#: Swagger UI and ReDoc (`/docs`, `/redoc`, `/docs-assets/...`) without their start-up script: they style
#: their elements inline, draw icons from data: URLs and ReDoc runs a worker from a blob: URL.
DOCS_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "worker-src 'self' blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))


def docs_policy(script_hashes: list[str]) -> str:
    """DOCS_POLICY that also runs the inline scripts with these sha256 hashes (base64)."""
    allowed = " ".join(f"'sha256-{digest}'" for digest in script_hashes)
    return DOCS_POLICY.replace("script-src 'self'", f"script-src 'self' {allowed}".rstrip())


def _policy_for(path: str) -> str | None:
    if path == "/" or path.startswith("/app/"):
        return PAGE_POLICY
    if path in ("/docs", "/redoc", "/docs/oauth2-redirect") or path.startswith("/docs-assets/"):
        return DOCS_POLICY
    return None


class SecurityHeaders:
    """Pure ASGI middleware: adds the headers as the response starts, so streamed bodies (live captions,
    audio) pass through untouched. A header the route set itself is kept."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = _policy_for(scope.get("path", ""))
        extra: list[tuple[bytes, bytes]] = [(b"x-content-type-options", b"nosniff")]
        if policy is not None:
            extra += [(b"content-security-policy", policy.encode()), (b"x-frame-options", b"DENY"),
                      (b"referrer-policy", b"no-referrer")]

        async def with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or ())
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in extra if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
