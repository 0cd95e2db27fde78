"""What both provider adapters share: identity and params, one SDK client per event loop, the call.

An adapter is a `Model` (`devtool.core.model`): `call()` sends the conversation to the provider,
streaming unless made with `stream=False`, and returns the assistant message with its usage and
cost. A subclass names its SDK (`SDK`, also the name of the extra that installs it), its async client
class and its base exception, and says how to ask once and read the answer (`_ask`). The SDK is
imported when an adapter is made, not before.

Keyword parameters (`temperature=0`, `max_tokens=500`, ...) go into every request (as keywords of the
SDK's method where it has them, else in `extra_body`, so a parameter one SDK version dropped still
reaches a server that takes it). Those that change the answer are the model's `params`, which the
content hash covers; the others (`NOT_HASHED`: user ids, metadata, headers) are not, and neither is
a base URL, a key or a client, so a run recorded through a proxy replays against the same journal.

A client is made on first use in each event loop (an SDK client's connections belong to the loop
that opened them, and every `asyncio.run` is a new loop), and closed when that loop shuts down
(`asyncio.run` closes async generators before the loop: the client's closer is one); a client you
pass is used as it is, and left open. Retries
are the SDK's own (`max_retries`, `timeout` in seconds); what still fails is a `ModelError`
(`failures.py`).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from devtool.core.errors import ModelError
from devtool.core.jsonvalue import JSON, NotJSONError, json_copy
from devtool.core.model import NO_USAGE, Message, ModelReply, Progress, ToolDefinition, Usage
from devtool.core.providers.failures import SdkErrors, model_error
from devtool.core.providers.pricing import PriceTable, default_price_table


@dataclass(frozen=True, slots=True)
class Answer:
    """What one request answered: the message, its usage (None: the server sent none), why it stopped,
    the model that served it."""

    message: Message
    usage: Usage | None
    finish_reason: str
    served_model: str | None

    def reply(self, prices: PriceTable, provider: str, model_id: str) -> ModelReply:
        """The answer to a request for `provider:model_id` as a model's reply, its cost from `prices`."""
        if self.usage is None:  # a server that does not count tokens: cost unknown, not free
            return {"message": self.message, "usage": NO_USAGE, "costs": None, "finishReason": self.finish_reason}
        # The served model first: the dated version an alias stood for when the request was made.
        names = (self.served_model, model_id) if self.served_model else (model_id,)
        return {
            "message": self.message,
            "usage": self.usage,
            "costs": prices.cost(provider, names, self.usage),
            "finishReason": self.finish_reason,
        }


class ProviderModel(ABC):
    """The part of an adapter that does not depend on the provider's API."""

    PROVIDER: ClassVar[str]
    SDK: ClassVar[str]  # the SDK's module, and the extra that installs it: `pip install 'devtool[SDK]'`
    CLIENT: ClassVar[str]  # its async client class
    BASE_ERROR: ClassVar[str]  # the class every exception it raises derives from
    # Request parameters that do not change the answer: passed on, not hashed, not recorded.
    NOT_HASHED: ClassVar[frozenset[str]] = frozenset({"user", "metadata", "extra_headers", "extra_query"})

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        stream: bool = True,
        prices: PriceTable | None = None,
        **params: Any,
    ) -> None:
        self.provider = self.PROVIDER
        self.sdk()
        if not isinstance(model, str) or not model.strip():
            raise ModelError(f"a {self.provider} model needs a model id, got {model!r}")
        self.id = model
        self.streams = stream
        self.max_retries = max_retries
        self.prices = prices if prices is not None else default_price_table()
        hashed = {name: value for name, value in params.items() if name not in self.NOT_HASHED}
        try:
            self.params: dict[str, JSON] = json_copy(hashed)  # type: ignore[assignment]
        except NotJSONError as exc:
            raise ModelError(f"{self.provider} model {model!r}: parameters must be JSON values: {exc}") from None
        self.request_params = dict(params)
        self._given = client
        self._options: dict[str, Any] = {"base_url": base_url, "api_key": api_key, "max_retries": max_retries}
        if timeout is not None:
            self._options["timeout"] = timeout
        # Per loop: its client, and the async generator that closes it when the loop shuts down.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, AsyncIterator[None]]] = (
            weakref.WeakKeyDictionary()
        )

    async def client(self) -> Any:
        """The SDK client for the running event loop: the one given, else one made for this loop."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        made = self._clients.get(loop)
        if made is None:
            try:
                client = getattr(self.sdk(), self.CLIENT)(**self._options)
            except self._sdk_errors().base as exc:
                raise ModelError(
                    f"{self.provider} model {self.id!r} cannot make its client: {exc}", provider=self.provider
                ) from None
            closer = _closer(client)
            await anext(closer)  # now the loop knows it, and closes it (and so the client) at shutdown
            made = self._clients[loop] = (client, closer)
        return made[0]

    async def call(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, JSON] | None,
        tools: Sequence[ToolDefinition],
        progress: Progress | None = None,
    ) -> ModelReply:
        client = await self.client()
        errors = self._sdk_errors()
        try:
            answer = await self._ask(client, list(messages), schema, list(tools), progress)
        except errors.base as exc:
            secrets = [getattr(client, "api_key", None) or ""]
            raise model_error(
                exc, errors, provider=self.provider, model_id=self.id, retries=self.max_retries, secrets=secrets
            ) from None
        return answer.reply(self.prices, self.provider, self.id)

    @classmethod
    def sdk(cls) -> Any:
        """The SDK's module; a `ModelError` saying which extra to install when it is missing."""
        try:
            return importlib.import_module(cls.SDK)
        except ImportError:
            raise ModelError(
                f"the {cls.PROVIDER} models need the {cls.SDK} SDK, which is not installed: "
                f"pip install 'devtool[{cls.SDK}]'"
            ) from None

    def _sdk_errors(self) -> SdkErrors:
        sdk = self.sdk()
        return SdkErrors(getattr(sdk, self.BASE_ERROR), sdk.APIStatusError, sdk.APITimeoutError, sdk.APIConnectionError)

    @abstractmethod
    async def _ask(
        self,
        client: Any,
        messages: list[Message],
        schema: dict[str, JSON] | None,
        tools: list[ToolDefinition],
        progress: Progress | None,
    ) -> Answer:
        """One request (streamed when `self.streams`), its text pieces handed to `progress` as they come."""

    @staticmethod
    def keywords(create: Callable[..., Any], request: dict[str, Any]) -> dict[str, Any]:
        """`request` as keywords of the SDK's `create`: the fields it does not name go in `extra_body`."""
        named = _keywords(create)
        extra = {name: value for name, value in request.items() if name not in named}
        if not extra:
            return request
        kept = {name: value for name, value in request.items() if name in named}
        kept["extra_body"] = {**extra, **(request.get("extra_body") or {})}
        return kept

    def __repr__(self) -> str:
        params = "".join(f", {name}={value!r}" for name, value in self.params.items())
        return f"{type(self).__name__}({self.id!r}{params})"


@functools.cache
def _keywords(create: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(create).parameters)


async def _closer(client: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await client.close()
