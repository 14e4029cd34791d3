"""The meeting app at `/` and the API's own pages at `/docs` and `/redoc`, all working with no internet.

The app is plain HTML, CSS and JavaScript shipped in the package (`cloud/web/`): no CDN and no build step.
It signs in with a tenant's bearer token and calls the same `/v1` routes as every other client. Swagger UI
and ReDoc load their scripts from the `fastapi-offline` package's copies instead of FastAPI's default CDN.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from ..headers import docs_policy

router = APIRouter(include_in_schema=False)

_WEB = Path(str(resources.files("meetmem.cloud").joinpath("web")))
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
# The page's assets change with the package, never within a version: the browser may keep them an hour.
_CACHE = {"Cache-Control": "public, max-age=3600"}


def _asset(folder: Path, name: str) -> FileResponse:
    path = folder / name
    # Only the folder's own files, by plain name: no subfolders, no way out of it.
    if "/" in name or "\\" in name or name.startswith(".") or not path.is_file() or path.suffix not in _TYPES:
        raise HTTPException(404, f"no such file: {name}")
    return FileResponse(path, media_type=_TYPES[path.suffix], headers=_CACHE)


@router.get("/")
def index() -> FileResponse:
    """The meeting app."""
    return FileResponse(_WEB / "index.html", media_type=_TYPES[".html"], headers={"Cache-Control": "no-cache"})


@router.get("/app/{name}")
def app_asset(name: str) -> FileResponse:
    return _asset(_WEB, name)


def _docs_assets() -> Path:
    try:
        return Path(str(resources.files("fastapi_offline").joinpath("static")))
    except ModuleNotFoundError as exc:
        raise HTTPException(503, "the API pages need the fastapi-offline package: "
                                 "pip install 'meetmem[cloud]'") from exc


@router.get("/docs-assets/{name}")
def docs_asset(name: str) -> FileResponse:
    return _asset(_docs_assets(), name)


_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def _with_policy(page: HTMLResponse) -> HTMLResponse:
    """The page with a Content-Security-Policy that runs its own inline start-up script (by its hash) and
    no other inline script."""
    body = bytes(page.body).decode()
    hashes = [base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
              for script in _INLINE_SCRIPT.findall(body)]
    page.headers["Content-Security-Policy"] = docs_policy(hashes)
    return page


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    return _with_policy(get_swagger_ui_html(openapi_url=request.app.openapi_url or "/openapi.json",
                               title="meetmem API", swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                               swagger_css_url="/docs-assets/swagger-ui.css",
                               swagger_favicon_url="/docs-assets/favicon.png"))


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    return _with_policy(get_redoc_html(openapi_url=request.app.openapi_url or "/openapi.json", title="meetmem API",
                                       redoc_js_url="/docs-assets/redoc.standalone.js",
                                       redoc_favicon_url="/docs-assets/favicon.png", with_google_fonts=False))
