"""Rendering pages and fragments: one Jinja2 environment, autoescaped, and the htmx rules.

An htmx request gets just the fragment it swaps in; a normal request and an htmx history
restore (the browser lost its cached copy) get the full page. Both say `Vary: HX-Request`
so no cache hands one to the other.

Compiling the templates takes a third of a second or more, which a freshly started server would
otherwise spend in its first pages (the first Rewind of a big run, say). So compiled templates are
kept between processes (`TemplateCache`), and a server loads them all as it starts (`load_all`).
"""

from __future__ import annotations

import logging
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from devtool.web.assets import asset_dir, vendored
from devtool.web.filters import FILTERS
from devtool.web.links import process_url, run_url
from devtool.web.state import state

logger = logging.getLogger("devtool.web")


class TemplateCache(jinja2.FileSystemBytecodeCache):
    """Jinja's cache of compiled templates, in its directory of this user's only (which it checks), that
    never fails a page: a cache it cannot write (a full disk) only means compiling again next time."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError as exc:
            logger.warning("devtool: compiled template not cached: %s", exc)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        return TemplateCache()
    except (OSError, RuntimeError) as exc:  # RuntimeError: the directory is not this user's alone
        logger.warning("devtool: templates are compiled in each process: %s", exc)
        return None


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(asset_dir("templates")),
        bytecode_cache=_bytecode_cache(),
        # Agent text is untrusted: escape everything, everywhere, with no opt-out by extension.
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["url_for"] = _url_for
    env.globals["run_url"] = run_url
    env.globals["process_url"] = process_url
    env.filters.update(FILTERS)
    env.globals["htmx_js"] = vendored("htmx")
    env.globals["sse_js"] = vendored("htmx-ext-sse")
    return env


def load_all(env: jinja2.Environment) -> None:
    """Compile (or load from the cache) every template now, so that no page waits for it."""
    for name in env.list_templates():
        env.get_template(name)


@jinja2.pass_context
def _url_for(context: Any, name: str, /, **path_params: Any) -> str:
    # A path, not an absolute URL: links stay right behind any host name a teammate uses.
    request: Request = context["request"]
    return str(request.app.url_path_for(name, **path_params))


def wants_fragment(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true" and request.headers.get("HX-History-Restore-Request") != "true"


def render(
    request: Request,
    page: str,
    context: dict[str, Any],
    *,
    fragment: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """The full `page`, or `fragment` when htmx asks for a swap."""
    env: jinja2.Environment = state(request).templates
    name = fragment if fragment is not None and wants_fragment(request) else page
    html = env.get_template(name).render(request=request, **context)
    return HTMLResponse(html, status_code=status_code, headers={"Vary": "HX-Request"})
