"""S3 for the lake's data (`--lake-data s3://BUCKET/PREFIX/`): the credentials and endpoint, given the
way the AWS tools take them, handed to DuckDB's httpfs as a secret.

Read from the environment when the lake is configured: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_SESSION_TOKEN`, `AWS_REGION` (or `AWS_DEFAULT_REGION`), and `AWS_ENDPOINT_URL_S3` (or
`AWS_ENDPOINT_URL`) for S3-compatible storage that is not AWS (MinIO, Ceph, R2, a test's moto): an
`http://` endpoint is spoken to without TLS, and any endpoint is addressed path-style
(`ENDPOINT/BUCKET/KEY`), which those all serve. None of them set: DuckDB's own defaults (its S3 secret,
if one was made, else anonymous).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import duckdb

# The name of the DuckDB secret (an object name, not a password).
S3_CREDENTIALS = "devtool_lake_s3"


@dataclass(frozen=True, slots=True)
class S3Access:
    """What DuckDB needs to reach the lake's bucket; `repr` hides the secret key."""

    key_id: str | None
    secret: str | None
    session_token: str | None
    region: str | None
    endpoint: str | None  # host[:port]
    use_ssl: bool

    def __repr__(self) -> str:
        return f"S3Access(key_id={self.key_id!r}, region={self.region!r}, endpoint={self.endpoint!r})"


def s3_access(environ: Mapping[str, str]) -> S3Access | None:
    """The S3 settings the environment gives (None: none); `ValueError` naming the variable at fault."""
    endpoint_name = "AWS_ENDPOINT_URL_S3" if environ.get("AWS_ENDPOINT_URL_S3") else "AWS_ENDPOINT_URL"
    url = environ.get(endpoint_name) or None
    endpoint, use_ssl = None, True
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise ValueError(f"${endpoint_name} {url!r}: give the S3 endpoint as http(s)://HOST[:PORT]")
        endpoint, use_ssl = parts.netloc, parts.scheme == "https"
    access = S3Access(
        key_id=environ.get("AWS_ACCESS_KEY_ID") or None,
        secret=environ.get("AWS_SECRET_ACCESS_KEY") or None,
        session_token=environ.get("AWS_SESSION_TOKEN") or None,
        region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None,
        endpoint=endpoint,
        use_ssl=use_ssl,
    )
    if access.key_id is None and access.endpoint is None and access.region is None:
        return None
    if (access.key_id is None) != (access.secret is None):
        raise ValueError("$AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY go together: set both or neither")
    return access


def make_secret(conn: duckdb.DuckDBPyConnection, access: S3Access) -> None:
    """Create (or replace) the DuckDB secret httpfs uses for every s3:// path of this database."""
    options = [
        ("KEY_ID", access.key_id),
        ("SECRET", access.secret),
        ("SESSION_TOKEN", access.session_token),
        ("REGION", access.region),
        ("ENDPOINT", access.endpoint),
        ("URL_STYLE", "path" if access.endpoint else None),
    ]
    given = [f"{name} '{value.replace(chr(39), chr(39) * 2)}'" for name, value in options if value is not None]
    given.append(f"USE_SSL {'true' if access.use_ssl else 'false'}")
    conn.execute(f"CREATE OR REPLACE SECRET {S3_CREDENTIALS} (TYPE s3, {', '.join(given)})")
