"""JSON Schema checks for tool inputs and structured answers, compiled once per distinct schema."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import fastjsonschema

from devtool.core.jsonvalue import JSON, canonical_json

Validator = Callable[[Any], object]


class SchemaViolation(ValueError):
    """A value does not match its schema; the message says where (`$.field`) and why."""


class InvalidSchemaError(ValueError):
    """The schema itself is not a JSON Schema fastjsonschema can compile."""


def validator(schema: dict[str, JSON]) -> Callable[[Any], None]:
    """A function that raises `SchemaViolation` when its argument does not match `schema`."""
    compiled = _compile(canonical_json(schema).decode())

    def check(value: Any) -> None:
        try:
            compiled(value)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise SchemaViolation(exc.message.replace("data", "$", 1)) from None

    return check


@lru_cache(maxsize=1024)
def _compile(schema_json: str) -> Validator:
    import json

    try:
        return fastjsonschema.compile(json.loads(schema_json))
    except fastjsonschema.JsonSchemaDefinitionException as exc:
        raise InvalidSchemaError(str(exc)) from None
