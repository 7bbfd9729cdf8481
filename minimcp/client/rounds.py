"""The client side of revision 2026-07-28: choosing the era, the per-request envelope, ``input_required`` rounds.

:class:`Rounds` is a base of :class:`minimcp.Client` (above :class:`~minimcp.client.answers.Answers`,
whose answers it sends back):

* **the era** -- ``era="auto"`` probes with ``server/discover``; a result naming a modern
  revision (or an error only a modern server gives) means 2026-07-28, anything else the
  handshake, never keyed on one error code (:meth:`Rounds._choose_era`);
* **the envelope** -- every modern request carries the version, the client's capabilities
  and info (and the log level) in ``params._meta``; a ``-32022`` naming a revision we share
  is retried once with it;
* **the rounds** -- a result of ``resultType: "input_required"`` is answered by the same
  handlers as the handshake era's nested requests and the request retried (new id, same
  params, ``inputResponses`` keyed as asked, ``requestState`` echoed byte for byte), at
  most ``max_rounds`` times.
"""

from __future__ import annotations

import logging
from typing import Any, Literal, TypeVar

import anyio
import msgspec

from minimcp.client.answers import Answers
from minimcp.core._requests import DEFAULT, Timeout, decode_result
from minimcp.core.pending import ProgressWatch
from minimcp.wire import errors
from minimcp.wire.envelope import (
    HEADER_MISMATCH,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
)
from minimcp.wire.errors import ConnectionClosed, McpError
from minimcp.wire.types import (
    UNSET,
    CreateMessageParams,
    ElicitRequestParams,
    Implementation,
    JSONObject,
    ListRootsResult,
    LoggingLevel,
    ServerCapabilities,
    UnsetType,
)
from minimcp.wire.versions import LATEST_MODERN, META_VERSION, SUPPORTED, Era, is_modern

__all__ = ["Rounds"]

logger = logging.getLogger("minimcp.client")
T = TypeVar("T")


class _InputRequest(msgspec.Struct):
    method: str
    params: dict[str, Any] = {}


class _ResultKind(msgspec.Struct, rename="camel"):
    result_type: str = "complete"  # absent means complete (older servers)
    input_requests: dict[str, _InputRequest] | None = None
    request_state: str | UnsetType = UNSET


def _supported(exc: McpError) -> list[str]:
    """``data.supported`` of a -32022 error (the revisions the server speaks)."""
    offered = exc.data.get("supported") if isinstance(exc.data, dict) else None
    return [v for v in offered if isinstance(v, str)] if isinstance(offered, list) else []


class Rounds(Answers):
    """The modern era's requests (a base of :class:`minimcp.Client`, whose ``__init__`` sets these)."""

    info: Implementation
    requested_era: Era | Literal["auto"]
    probe_timeout: float
    max_rounds: int
    server_capabilities: ServerCapabilities
    instructions: str | None
    _log_level: LoggingLevel | None

    async def _choose_era(self) -> bool:
        """Settle the era asked for; ``True`` when it is the handshake's (``initialize`` is still to send)."""
        era = self.requested_era
        if era == Era.LEGACY:
            return True
        if era == Era.MODERN:
            self._use_modern(LATEST_MODERN)
            return False
        # auto: probe; a discover result naming a modern revision means modern, anything else
        # (an error, silence) means the handshake -- never keyed on one error code.
        self._use_modern(LATEST_MODERN)
        for attempt in range(2):
            try:
                with anyio.fail_after(self.probe_timeout):
                    found = await self.discover(timeout=None)
            except ConnectionClosed:
                raise  # the transport is gone (an HTTP 401/403/5xx, say): not evidence of an era
            except (McpError, TimeoutError) as exc:
                if isinstance(exc, McpError):
                    if exc.code in (HEADER_MISMATCH, MISSING_CAPABILITY):
                        return False  # errors only a modern server gives: it is one
                    if exc.code == UNSUPPORTED_VERSION:
                        offered = _supported(exc)
                        mutual = [v for v in offered if is_modern(v)]
                        if mutual and attempt == 0:
                            self._use_modern(mutual[-1])  # re-probe once with a revision we share
                            continue
                        if offered and not any(v in SUPPORTED for v in offered):
                            raise  # a modern-only server speaking none of our revisions: no handshake
                logger.debug("server/discover probe failed (%s): using the handshake", exc)
                found = None
            versions = found.get("supportedVersions") if found is not None else None
            if isinstance(versions, list) and any(is_modern(v) for v in versions if isinstance(v, str)):
                return False
            break
        self.era = None
        self.protocol_version = None
        self.session.protocol_version = None
        return True

    def _use_modern(self, version: str) -> None:
        self.era = Era.MODERN
        self.protocol_version = version
        self.session.protocol_version = version
        self.session.answer_ping = False

    def _envelope(self, extra: dict[str, Any] | UnsetType | None = None) -> dict[str, Any] | UnsetType:
        """``params._meta`` for a request: the modern envelope plus ``extra``."""
        if self.era != Era.MODERN:
            return extra if extra else UNSET
        meta: dict[str, Any] = {
            META_VERSION: self.protocol_version,
            META_CAPABILITIES: msgspec.to_builtins(self.capabilities()),
            META_CLIENT_INFO: msgspec.to_builtins(self.info),
        }
        if self._log_level is not None:
            meta[META_LOG_LEVEL] = self._log_level
        if isinstance(extra, dict):
            meta.update(extra)
        return meta

    async def discover(self, *, timeout: Timeout = DEFAULT) -> JSONObject:
        """``server/discover`` (revision 2026-07-28): supported versions, capabilities, server info."""
        raw = await self.session.request("server/discover", {"_meta": self._envelope()}, timeout=timeout)
        found: JSONObject = msgspec.json.decode(raw)
        meta = found.get("_meta")
        info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        if isinstance(info, dict):
            self.server_info = msgspec.convert(info, Implementation)
        caps = found.get("capabilities")
        if isinstance(caps, dict):
            self.server_capabilities = msgspec.convert(caps, ServerCapabilities)
        instructions = found.get("instructions")
        if isinstance(instructions, str):
            self.instructions = instructions
        return found

    async def _request(self, method: str, params: Any, result_type: type[T], timeout: Timeout) -> T:
        """One request with the envelope applied (modern) and the result checked."""
        if self.era == Era.MODERN:
            raw = await self._modern_request(method, params, timeout, None)
            kind = decode_result(method, raw, _ResultKind).result_type
            if kind != "complete":
                raise McpError(errors.INVALID_REQUEST, f"{method} answered with resultType {kind!r}")
            return decode_result(method, raw, result_type)
        return await self.session.request(method, params, result_type=result_type, timeout=timeout)

    async def _rounds(
        self, method: str, params: Any, result_type: type[T], timeout: Timeout, progress: ProgressWatch | None
    ) -> T:
        """A request that may answer ``input_required``: answer the questions and retry (2026-07-28).

        Each retry is a new request (new id) with the same params, ``inputResponses``
        keyed exactly as asked, and ``requestState`` echoed byte for byte.
        """
        if self.era != Era.MODERN:
            return await self.session.request(
                method, params, result_type=result_type, timeout=timeout, progress=progress
            )
        current = params
        pause = 0.05
        for round_ in range(1, self.max_rounds + 1):
            raw = await self._modern_request(method, current, timeout, progress)
            head = decode_result(method, raw, _ResultKind)
            if head.result_type == "complete":
                return decode_result(method, raw, result_type)
            if head.result_type != "input_required":
                raise McpError(
                    errors.INVALID_REQUEST, f"{method} answered with unknown resultType {head.result_type!r}"
                )
            if round_ == self.max_rounds:
                break  # do not ask the person questions whose answers would never be sent
            if not head.input_requests and isinstance(head.request_state, UnsetType):
                raise McpError(errors.INVALID_REQUEST, f"{method} answered input_required with nothing to answer")
            responses: dict[str, Any] | UnsetType = UNSET
            if head.input_requests:
                responses = {}
                for key, item in head.input_requests.items():
                    responses[key] = msgspec.to_builtins(await self._answer_input(item))
            else:
                await anyio.sleep(pause)  # state only: the server asks us to come back
                pause = min(pause * 2, 0.25)
            current = msgspec.structs.replace(params, input_responses=responses, request_state=head.request_state)
        raise McpError(errors.INTERNAL_ERROR, f"{method} still needed input after {self.max_rounds} rounds; giving up")

    async def _modern_request(
        self, method: str, params: Any, timeout: Timeout, progress: ProgressWatch | None
    ) -> msgspec.Raw:
        """One modern request (envelope applied); on -32022 naming a revision we share, once more with it."""
        for attempt in range(2):
            enveloped = msgspec.structs.replace(params, meta=self._envelope(params.meta))
            try:
                return await self.session.request(method, enveloped, timeout=timeout, progress=progress)
            except McpError as exc:
                mutual = [v for v in _supported(exc) if is_modern(v)] if exc.code == UNSUPPORTED_VERSION else []
                if attempt or not mutual:
                    raise
                self._use_modern(mutual[-1])
        raise AssertionError("unreachable")  # pragma: no cover

    async def _answer_input(self, item: _InputRequest) -> Any:
        if item.method == "elicitation/create":
            params = msgspec.convert(item.params, ElicitRequestParams)
            return await self._answer_elicitation(params)
        if item.method == "sampling/createMessage" and self.sampling_handler is not None:
            return await self.sampling_handler(msgspec.convert(item.params, CreateMessageParams))
        if item.method == "roots/list" and self.roots is not None:
            return ListRootsResult(roots=list(self.roots))
        raise McpError(
            errors.INVALID_PARAMS, f"the server asked for {item.method!r}, which this client did not declare"
        )
