"""Which `Host` a DevTool without a team token answers: its own, so a DNS-rebinding page cannot read it.

A web page at `evil.example` can point its own name at 127.0.0.1 and then read the DevTool as a
same-origin page: every request it makes still says `Host: evil.example:PORT`, and browser headers
(`Origin`, `Referer`, ...) can all be left out (`fetch(url, {referrerPolicy: "no-referrer"})`), so the
`Host` alone decides. A request is the server's own when its `Host` names a loopback name
(`127.0.0.1`, `localhost`, `[::1]`) or the address the server listens on, with the server's port, or
a name given by `devtool serve --allow-host` (any port: a proxy or a container may map it).
"""

from __future__ import annotations

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
DEFAULT_PORTS = {"http": 80, "https": 443}


def own_host(host: str, server: tuple[str, int | None] | None, scheme: str, allowed: frozenset[str]) -> bool:
    """Whether the `Host` header `host` names the server listening at `server` (the ASGI scope's
    `server`: its address and port; None for a Unix socket) or one of the `allowed` names."""
    default_port = DEFAULT_PORTS.get(scheme, 80)
    name, port = split_host(host, default_port)
    if name in allowed:
        return True
    if server is None:
        return name in LOOPBACK_NAMES
    own_name, own_port = server[0].lower(), server[1] or default_port  # an ASGI client may leave it out
    return port == own_port and (name in LOOPBACK_NAMES or name == own_name)


def split_host(host: str, default_port: int) -> tuple[str, int | None]:
    """A `Host` header's name (lowercase, IPv6 without brackets) and port (None when not a number)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port_text = host.partition(":")
    if not port_text:
        return name, default_port
    return name, int(port_text) if port_text.isdigit() else None


def allowed_name(name: str) -> str:
    """A `--allow-host` name as `own_host` compares it (ValueError for one that is not a host name)."""
    cleaned = name.strip().lower().removeprefix("[").removesuffix("]")
    if not cleaned or any(c in cleaned for c in "/@ \t?#") or cleaned.count(":") == 1:
        raise ValueError(f"--allow-host {name!r}: give a host name or address without a port or a scheme")
    return cleaned
