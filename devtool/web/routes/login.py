"""`/login` and `/logout`: signing in to a DevTool that has a team token, and out again
(`devtool.web.auth` says who needs to).

GET `/login` shows the form (or goes straight on when there is nothing to sign in to); POST checks
the token, opens a session under the name the teammate gave and sets its cookie (a random id,
`HttpOnly`, `SameSite=Strict`, `Max-Age` the session's length), then goes on to `next`, a path on this
server. POST `/logout` ends the session at once, cookie or not, and goes to the login page.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from devtool.web.auth import SESSION_COOKIE, clean_name, client_of, local_target, locked_out, login_page
from devtool.web.state import state


async def login(request: Request) -> Response:
    access = state(request).access
    if request.method == "GET":
        target = local_target(request.query_params.get("next", "/"))
        if access.token is None or access.signed_in(request):
            return RedirectResponse(target, 303)
        return login_page(request, target, None, 200)
    async with request.form(max_fields=5) as form:
        given = str(form.get("token", ""))
        name = clean_name(str(form.get("name", "")))
        target = local_target(str(form.get("next", "/")))
    if access.token is None:
        return RedirectResponse(target, 303)
    client = client_of(request)
    if not access.is_token(given):
        # Guessing costs the guesser time (`devtool.web.backoff`); a teammate who mistyped barely notices.
        locked = access.backoff.failed(client)
        if locked:
            return locked_out(request, locked, target)
        return login_page(request, target, "That is not this DevTool's team token.", 403)
    access.backoff.succeeded(client)
    response = RedirectResponse(target, 303)
    response.set_cookie(
        SESSION_COOKIE,
        access.sessions.open(name),
        max_age=max(1, int(access.sessions.seconds)),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def logout(request: Request) -> Response:
    access = state(request).access
    access.sessions.close(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login" if access.token is not None else "/", 303)
    response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="strict")
    return response


routes = [
    Route("/login", login, methods=["GET", "POST"], name="login"),
    Route("/logout", logout, methods=["POST"], name="logout"),
]
