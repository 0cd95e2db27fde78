"""Real models, by name: `"openai:MODEL"` and `"anthropic:MODEL"`, and `DEVTOOL_MODEL` as the default.

`resolve_model("openai:gpt-4.1-mini")` is an `OpenAIChatModel` (any server that speaks OpenAI's Chat
Completions: OpenAI, Azure OpenAI, vLLM, Ollama, LM Studio, OpenRouter, ...), `"anthropic:..."` an
`AnthropicModel`; each reads its SDK's own environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`) when it first makes a client. One adapter is made per
name and reused, so its connections are too. To set parameters (temperature, max tokens, retries,
a client of your own), make the adapter yourself:
`OpenAIChatModel("gpt-4.1-mini", temperature=0)` from `devtool.core.providers.openai_chat`.

Importing this package imports no SDK: a provider's module (and its SDK) is imported when one of its
models is first named, so `devtool.core` works without either SDK installed, and says which extra to
install (`pip install 'devtool[openai]'`) when a model needs it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from devtool.core.errors import ModelError

if TYPE_CHECKING:
    from devtool.core.model import Model

MODEL_ENV: Final = "DEVTOOL_MODEL"


def _openai(model_id: str) -> Model:
    from devtool.core.providers.openai_chat import OpenAIChatModel

    return OpenAIChatModel(model_id)


def _anthropic(model_id: str) -> Model:
    from devtool.core.providers.anthropic_messages import AnthropicModel

    return AnthropicModel(model_id)


PROVIDERS: Final[dict[str, Callable[[str], Model]]] = {"openai": _openai, "anthropic": _anthropic}

_named: dict[str, Model] = {}


def resolve_model(model: Model | str | None) -> Model | None:
    """`model` itself, or the adapter a name like `"openai:gpt-4.1-mini"` stands for."""
    if model is None or not isinstance(model, str):
        return model
    return model_named(model)


def model_named(name: str) -> Model:
    """The adapter for `PROVIDER:MODEL`, made once per name; `ModelError` for a name it cannot be."""
    name = name.strip()
    found = _named.get(name)
    if found is not None:
        return found
    provider, sep, model_id = name.partition(":")
    if not sep or not model_id.strip():
        raise ModelError(
            f"model name {name!r} is not PROVIDER:MODEL: use e.g. 'openai:gpt-4.1-mini' or "
            f"'anthropic:claude-sonnet-4-5' (providers: {', '.join(PROVIDERS)})"
        )
    make = PROVIDERS.get(provider.strip().lower())
    if make is None:
        raise ModelError(f"unknown model provider {provider!r} in {name!r}: the providers are {', '.join(PROVIDERS)}")
    found = _named[name] = make(model_id.strip())
    return found


def default_model() -> Model | None:
    """The model `DEVTOOL_MODEL` names, if it is set: what a prompt with no model of its own uses."""
    name = os.environ.get(MODEL_ENV, "").strip()
    return model_named(name) if name else None
