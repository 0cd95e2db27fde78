"""Who may use a DevTool server, and what protects the requests that change it.

A DevTool shows agent prompts and data and can start replays, so it runs in one of two modes:

- **Loopback, no team token** (the default; `devtool serve` refuses any other address without a
  token). Whoever reaches 127.0.0.1 is already on the machine, and programs there (agents posting
  traces, scripts) are trusted like the user. Every request must name the server itself in its `Host`
  (`devtool.web.hosts`; 421 otherwise), browser headers or not, so a web page that rebinds its DNS
  name to 127.0.0.1 cannot read the DevTool; and a browser's request (it carries `Origin`,
  `Sec-Fetch-Site`, `Referer` or a cookie) that changes state must come from the DevTool's own origin
  and carry the per-server token its pages carry.
- **Team token** (`--token` or `DEVTOOL_TOKEN`, any address). Every request needs the token: as
  `Authorization: Bearer <token>` (agents, `devtool run --to`, scripts), or as the session cookie the
  login page sets. Without it a page request gets the login page (401) and a request that would
  change something gets 403. A browser's state-changing request also needs the same origin and the
  per-server token.

In both modes the command line on the server's machine (`devtool load`, `devtool export` on the
database the server owns) sends the **local token**: random for each server start, written by
`devtool serve` into a file beside the database that only its user can read
(`devtool.cli.server_file`). It counts as signed in, and it alone may ask the server to load files
by their path on the server's machine (`POST /api/v1/load`).

The per-server token is random for each server start; pages carry it in `<body hx-headers>` (htmx
sends it as `X-DevTool-CSRF`) and in forms (`_csrf`). Nothing secret is ever put in a URL: links a
teammate copies hold ids only. A session (`Sessions`) is a random id made at sign-in, kept in the
server's memory with the name given and an end (`Settings.session_seconds`, 12 hours by default):
its cookie (`HttpOnly`, `SameSite=Strict`, `Max-Age`) holds nothing derived from the token, works
until it expires, the teammate signs out (`POST /logout`) or the server restarts.

Who a user is (the actor of a process rewind, who made a snapshot): on loopback, the account the
server runs as; with a team token, the name given at login (kept in the session, not in a cookie a
browser could edit).
"""

from __future__ import annotations

import getpass
import hmac
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from devtool.web.backoff import Backoff
from devtool.web.hosts import own_host
from devtool.web.state import state
from devtool.web.templating import render

CSRF_HEADER = "x-devtool-csrf"
CSRF_FIELD = "_csrf"
SESSION_COOKIE = "devtool_session"
MAX_SESSIONS = 10_000  # past that, the oldest sign-in ends
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Reachable without signing in: the login page itself and the app's own CSS and scripts.
OPEN_PATHS = ("/login", "/static/")
BROWSER_HEADERS = ("origin", "sec-fetch-site", "referer", "cookie")
MIN_TOKEN_LENGTH = 16
# A state-changing form is read in full to find its `_csrf` field: forms here are small, but a
# forked frame's memory can be big.
MAX_FORM_BYTES = 32 << 20
_NAME = re.compile(r"[^\w .@+-]", re.UNICODE)


class TokenTooShortError(ValueError):
    """A team token too short to resist guessing."""


def check_token(token: str) -> None:
    """`TokenTooShortError` for a team token too short to resist guessing."""
    if len(token) < MIN_TOKEN_LENGTH:
        raise TokenTooShortError(
            f"the team token is {len(token)} characters long; use at least {MIN_TOKEN_LENGTH} "
            "(make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )


@dataclass(frozen=True)
class Session:
    user: str
    expires: float  # time.monotonic()


class Sessions:
    """The signed-in browsers of one server, by random id, each until `seconds` after it signed in."""

    def __init__(self, seconds: float = 12 * 3600) -> None:
        self.seconds = seconds
        self._by_id: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, user: str) -> str:
        """A new session for `user`: its id, for the cookie."""
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            self._by_id[session_id] = Session(user, time.monotonic() + self.seconds)
            while len(self._by_id) > MAX_SESSIONS:
                self._by_id.popitem(last=False)
        return session_id

    def get(self, session_id: str | None) -> Session | None:
        """The live session `session_id`, or None (unknown, signed out, expired, or from before a restart)."""
        if not session_id:
            return None
        with self._lock:
            session = self._by_id.get(session_id)
            if session is not None and session.expires <= time.monotonic():
                del self._by_id[session_id]
                session = None
        return session

    def close(self, session_id: str | None) -> None:
        with self._lock:
            self._by_id.pop(session_id or "", None)


@dataclass(frozen=True)
class Access:
    """The access rules of one server: its team token (if any), its per-server token and its sessions."""

    token: str | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    sessions: Sessions = field(default_factory=Sessions)
    local: str | None = None  # the command line's token (see the module docstring)
    hosts: frozenset[str] = frozenset()  # names answered besides the server's own (`--allow-host`)
    backoff: Backoff = field(default_factory=Backoff)  # wrong team tokens, by client

    def __post_init__(self) -> None:
        if self.token is not None:
            check_token(self.token)

    def signed_in(self, request: Request) -> bool:
        """With a team token: the request carries it (Bearer) or a live session. Else always."""
        if self.token is None:
            return True
        return (
            self.bearer(request)
            or self.local_bearer(request)
            or self.sessions.get(request.cookies.get(SESSION_COOKIE)) is not None
        )

    def is_page_token(self, given: str | None) -> bool:
        """Whether `given` is the per-server token this server's pages carry."""
        return _equal(given, self.csrf)

    def is_token(self, given: str) -> bool:
        """Whether `given` is the team token (compared in constant time)."""
        return self.token is not None and _equal(given, self.token)

    def bearer(self, request: Request) -> bool:
        return self.is_token(_bearer_of(request))

    def local_bearer(self, request: Request) -> bool:
        """The request carries the command line's token (`Authorization: Bearer <local token>`)."""
        return self.local is not None and _equal(_bearer_of(request), self.local)


def _bearer_of(request: Request) -> str:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else ""


def user_of(request: Request) -> str:
    """Who is asking: the server's account on loopback, the name given at login with a team token."""
    access = state(request).access
    if access.token is None or access.local_bearer(request):
        return _server_user()
    if access.bearer(request):
        return "api"
    session = access.sessions.get(request.cookies.get(SESSION_COOKIE))
    return (session.user if session is not None else "") or "teammate"


def clean_name(name: str) -> str:
    """A display name: letters, digits, spaces and `.@+-_`, at most 60 characters."""
    return _NAME.sub("", name).strip()[:60]


class AccessControl:
    """ASGI middleware applying `Access` to every HTTP request before any route sees it."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is None and self._needs_csrf(request):
            receive, csrf = await _csrf_of(request, receive)
            if not _equal(csrf, self.access.csrf):
                refusal = _refuse(
                    request,
                    403,
                    "this request did not carry the DevTool's page token: reload the page and try again "
                    "(changes are only taken from the DevTool's own pages)",
                )
        await (refusal or self.app)(scope, receive, send)

    def _refusal(self, request: Request) -> Response | None:
        # The app's CSS and scripts are the same for everyone (and style the refusal itself).
        if (
            self.access.token is None
            and not request.url.path.startswith("/static/")
            and not own_host(
                request.headers.get("host", ""), request.scope.get("server"), request.url.scheme, self.access.hosts
            )
        ):
            return _refuse(
                request,
                421,
                "this DevTool answers only requests addressed to its own address (127.0.0.1, localhost or "
                f"[::1] with its port), not to {request.headers.get('host', '(no Host)')!r}: open it at one of "
                "those, or start it with `--allow-host NAME` to answer another name too",
            )
        if self.access.token is not None:
            locked = self._guessing(request)
            if locked:
                return locked_out(request, locked)
        browser = any(name in request.headers for name in BROWSER_HEADERS)
        changes = request.method not in SAFE_METHODS
        if changes and browser and not _same_origin(request.headers):
            return _refuse(request, 403, "a request that changes something must come from the DevTool's own pages")
        if request.url.path.startswith(OPEN_PATHS) or self.access.signed_in(request):
            return None
        if changes:
            return _refuse(request, 403, "sign in first: this DevTool needs its team token")
        return _login_redirect(request)

    def _guessing(self, request: Request) -> int:
        """With a team token: the seconds a client that tries a token (Bearer, or signing in) must
        still wait; a wrong Bearer counted (the login route counts wrong sign-ins)."""
        client = client_of(request)
        given = _bearer_of(request)
        signing_in = request.method == "POST" and request.url.path == "/login"
        if not given and not signing_in:
            return 0
        wait = self.access.backoff.wait(client)
        if wait or not given:
            return wait
        if self.access.bearer(request) or self.access.local_bearer(request):
            self.access.backoff.succeeded(client)
            return 0
        return self.access.backoff.failed(client)

    def _needs_csrf(self, request: Request) -> bool:
        if request.method in SAFE_METHODS or self.access.bearer(request) or self.access.local_bearer(request):
            return False
        browser = any(name in request.headers for name in BROWSER_HEADERS)
        # Signing in cannot carry a token the browser does not have yet; it is same-origin checked.
        return browser and request.url.path != "/login"


async def _csrf_of(request: Request, receive: Receive) -> tuple[Receive, str | None]:
    """The per-server token of a request (header, or `_csrf` of a urlencoded form), and a `receive`
    that still hands the app the whole body when it had to be read."""
    header = request.headers.get(CSRF_HEADER)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if header is not None or content_type != "application/x-www-form-urlencoded":
        return receive, header
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return receive, None
        chunks.append(chunk)
        more = message.get("more_body", False)
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    values = parse_qs(body.decode("latin-1"), max_num_fields=10_000).get(CSRF_FIELD)
    return replay, values[0] if values else None


def _same_origin(headers: Headers) -> bool:
    """Whether a browser request came from a page of this server (by `Origin`, else `Sec-Fetch-Site`,
    else `Referer`: a browser too old for the first two still says which page sent it)."""
    origin = headers.get("origin")
    if origin is not None:
        return _names_host(origin, headers)
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    referer = headers.get("referer")
    return referer is None or _names_host(referer, headers)


def _names_host(url: str, headers: Headers) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == headers.get("host", "").lower()


def _equal(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


TITLES = {403: "Forbidden", 421: "Not this server", 429: "Too many wrong tokens"}


def _refuse(request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    if request.url.path.startswith(("/api/", "/v1/")):  # programs' endpoints (OTLP's too) answer in JSON
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    return HTMLResponse(
        state(request)
        .templates.get_template("error.html")
        .render(request=request, status=status, title=TITLES.get(status, "Forbidden"), message=message),
        status_code=status,
        headers={"Vary": "HX-Request", **(headers or {})},
    )


def locked_out(request: Request, seconds: int, target: str = "/") -> Response:
    """429 for a client that got the team token wrong too often (`devtool.web.backoff`): the login
    page saying so for a sign-in (going on to `target`), else a refusal."""
    message = f"Too many wrong team tokens from this address: try again in {seconds} s."
    if request.url.path == "/login":
        response: Response = login_page(request, target, message, 429)
        response.headers["Retry-After"] = str(seconds)
        return response
    return _refuse(request, 429, message, {"Retry-After": str(seconds)})


def client_of(request: Request) -> str:
    """The address a request came from, as `Backoff` counts it."""
    return request.client.host if request.client is not None else ""


def _login_redirect(request: Request) -> Response:
    """The login page, in place, for a page request without the team token."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": "this DevTool needs its team token (Authorization: Bearer <token>)"}, 401)
    here = local_target(f"{request.url.path}?{request.url.query}" if request.url.query else request.url.path)
    response = login_page(request, here, None, 401)
    if request.headers.get("HX-Request") == "true":
        response.headers["HX-Redirect"] = "/login?" + urlencode({"next": here})
    return response


def local_target(raw: str) -> str:
    """Where to go after signing in: a path on this server, never another site."""
    parts = urlsplit(raw)
    if parts.scheme or parts.netloc or not parts.path.startswith("/") or parts.path.startswith("//"):
        return "/"
    if "\\" in parts.path:
        return "/"
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def login_page(request: Request, target: str, error: str | None, status: int) -> HTMLResponse:
    """The sign-in form, which goes on to `target` once the team token is given."""
    return render(request, "login.html", {"next": target, "error": error}, status_code=status)


def _server_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "local user"
