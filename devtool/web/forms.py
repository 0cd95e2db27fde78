"""Reading a small POSTed form (a button's, or the fork editor's), or a 400 saying the body is not one."""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request


async def form_of(request: Request, *, max_fields: int = 20) -> FormData:
    """The form of a POST (no files), or a 400 saying it is not one."""
    try:
        return await request.form(max_fields=max_fields, max_files=0)
    except MultiPartException as exc:
        raise HTTPException(400, f"not a form: {exc.message}") from None
