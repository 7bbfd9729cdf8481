"""Machine clients of MCP authorization: client credentials, workload identity and enterprise-managed grants.

Each class here is an :class:`~minimcp.auth.oauth_client.OAuthClient` without a browser, given to
``connect_http(url, auth=...)`` the same way: on a ``401`` it discovers the server's authorization
server as the spec orders (resource metadata, the ``resource`` check, the issuer's metadata), asks
its token endpoint for a token with ``resource`` (RFC 8707) and the scopes (the application's, else
the challenge's, else the server's), and sends the request again. No registration happens: the
client is known to the authorization server beforehand.

* :class:`ClientCredentialsAuth` — the ``client_credentials`` grant (OAuth 2.1 §4.2, MCP's
  ``oauth-client-credentials`` extension, SEP-1046), the client authenticated by its secret
  (``client_secret_basic``, or ``client_secret_post`` where that is all the server lists) or by a
  signed assertion (``private_key_jwt``, RFC 7523 §2.2: ``iss`` = ``sub`` = the client id, ``aud``
  the issuer, a fresh ``jti``, one minute of life).
* :class:`JWTBearerAuth` — workload identity federation (SEP-1933): a JWT the platform issued to the
  workload (Kubernetes, a cloud's metadata server, CI) is the grant (RFC 7523 §2.1).
* :class:`EnterpriseAuth` — enterprise-managed authorization (SEP-990): the person's ID token is
  exchanged at the enterprise's identity provider (RFC 8693) for an Identity Assertion JWT
  Authorization Grant (ID-JAG) naming the authorization server and the resource, which the
  authorization server turns into an access token (RFC 7523 jwt-bearer).

A refused grant raises :class:`~minimcp.auth.oauth_client.AuthorizationFailed` (``reason``
``token``, the server's ``error`` such as ``invalid_grant``), once: no retry, no other grant. All
take ``dpop=`` as :class:`OAuthClient` does. ``private_key_jwt`` needs pyjwt with cryptography (the
``auth`` extra), imported on first use.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from minimcp.auth.oauth_client import AuthorizationFailed, OAuthClient, _Binding, basic_authorization
from minimcp.auth.token_store import ClientCredentials, TokenStore
from minimcp.core.config import Limits

if TYPE_CHECKING:
    from minimcp.auth.dpop import DPoP

__all__ = ["ClientCredentialsAuth", "EnterpriseAuth", "JWTBearerAuth", "client_assertion"]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ASSERTION_LIFETIME = 60  # seconds a private_key_jwt client assertion is valid

#: A JWT given as is, or fetched anew for each grant (a workload token rotates).
TokenSource = str | Callable[[], Awaitable[str]]


def client_assertion(client_id: str, audience: str, private_key: Any, algorithm: str = "ES256") -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 §2.2, §3): signed with ``private_key`` (a PEM or a key)."""
    import jwt  # pyjwt[crypto]: only for a client that signs its assertions

    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": secrets.token_urlsafe(24),
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
    }
    return jwt.encode(claims, private_key, algorithm=algorithm)


async def _resolve(source: TokenSource) -> str:
    return source if isinstance(source, str) else await source()


class _MachineClient(OAuthClient):
    """What the machine clients share: a known client (no registration, no browser), no ``offline_access``."""

    interactive = False

    def __init__(
        self,
        *,
        client_id: str | None,
        client_secret: str | None = None,
        private_key: Any = None,
        signing_algorithm: str = "ES256",
        scopes: Sequence[str] | None = None,
        store: TokenStore | None = None,
        max_authorizations: int = 3,
        refresh_margin: float = 30.0,
        http: httpx.AsyncClient | None = None,
        limits: Limits | None = None,
        dpop: bool | DPoP = False,
    ) -> None:
        super().__init__(
            None,
            client_id=client_id,
            client_secret=client_secret,
            scopes=scopes,
            offline_access=False,
            store=store,
            max_authorizations=max_authorizations,
            refresh_margin=refresh_margin,
            http=http,
            limits=limits,
            dpop=dpop,
        )
        self.private_key = private_key
        self.signing_algorithm = signing_algorithm

    async def _client_for(self, binding: _Binding) -> ClientCredentials:
        if self.private_key is not None and self.client_id is not None:
            return ClientCredentials(self.client_id, None, "private_key_jwt")
        if self.client_secret is not None and self.client_id is not None:
            listed = binding.metadata.get("token_endpoint_auth_methods_supported")
            method = "client_secret_post" if listed == ["client_secret_post"] else "client_secret_basic"
            return ClientCredentials(self.client_id, self.client_secret, method)
        return ClientCredentials(self.client_id or "", None, "none")

    async def _grant_again(self, binding: _Binding) -> bool:
        """The same grant again for a token about to expire (or refused) that came without a refresh token (RFC
        6749 §4.4.3: client credentials do); a refused grant is raised, not tried again."""
        answer = await self._grant(binding, await self._client_for(binding), binding.scopes)
        self._tokens = self._tokens_of(answer, None)
        await self.store.set_tokens(binding.issuer, binding.resource, self._tokens)
        return True

    def _client_assertion(self, binding: _Binding, client: ClientCredentials) -> str:
        return client_assertion(client.client_id, binding.issuer, self.private_key, self.signing_algorithm)

    @staticmethod
    def _form(binding: _Binding, asked: list[str], **fields: str) -> dict[str, str]:
        form = {**fields, "resource": binding.resource}
        if asked:
            form["scope"] = " ".join(asked)
        return form


class ClientCredentialsAuth(_MachineClient):
    """The ``client_credentials`` grant: the client itself is who the token names.

    Args:
        client_id: The client, registered at the authorization server.
        client_secret: Its secret (``client_secret_basic``; ``client_secret_post`` where that is all it lists).
        private_key: Instead of a secret, the key it signs assertions with (``private_key_jwt``; a PEM or a key).
        signing_algorithm: The assertions' algorithm (``ES256``; ``RS256``... as the server lists).
        Others: as :class:`~minimcp.auth.oauth_client.OAuthClient`.
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str | None = None,
        *,
        private_key: Any = None,
        signing_algorithm: str = "ES256",
        **options: Any,
    ) -> None:
        if client_secret is None and private_key is None:
            raise ValueError("client credentials need a client_secret or a private_key")
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            private_key=private_key,
            signing_algorithm=signing_algorithm,
            **options,
        )

    async def _grant(self, binding: _Binding, client: ClientCredentials, asked: list[str]) -> dict[str, Any]:
        return await self._granted(
            binding, client, self._form(binding, asked, grant_type="client_credentials"), "the client credentials"
        )


class JWTBearerAuth(_MachineClient):
    """Workload identity: a JWT the workload's platform issued is the grant (RFC 7523 jwt-bearer).

    Args:
        assertion: The JWT (its ``aud`` the authorization server), or an async callable giving a
            current one for each grant (a projected token file is re-read, say).
        client_id: Sent as the client's id when the server wants one (public client, no secret).
        client_secret: For a confidential client (``client_secret_basic``).
        Others: as :class:`~minimcp.auth.oauth_client.OAuthClient`.
    """

    def __init__(
        self,
        assertion: TokenSource,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client_id=client_id, client_secret=client_secret, **options)
        self.assertion = assertion

    async def _grant(self, binding: _Binding, client: ClientCredentials, asked: list[str]) -> dict[str, Any]:
        form = self._form(binding, asked, grant_type=JWT_BEARER, assertion=await _resolve(self.assertion))
        return await self._granted(binding, client, form, "the workload's assertion")


class EnterpriseAuth(_MachineClient):
    """Enterprise-managed authorization (SEP-990): an ID token from the enterprise's identity provider becomes,
    by token exchange there, an ID-JAG that the MCP server's authorization server accepts as a grant.

    Args:
        idp_token_endpoint: The identity provider's token endpoint (RFC 8693 token exchange).
        id_token: The person's ID token from that identity provider (or an async callable giving one).
        client_id: This client at the MCP server's authorization server.
        client_secret: Its secret there (``client_secret_basic``).
        idp_client_id: This client at the identity provider, sent with the exchange.
        idp_client_secret: Its secret there (``client_secret_basic``); none: a public client.
        Others: as :class:`~minimcp.auth.oauth_client.OAuthClient`.
    """

    def __init__(
        self,
        idp_token_endpoint: str,
        id_token: TokenSource,
        *,
        client_id: str,
        client_secret: str | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client_id=client_id, client_secret=client_secret, **options)
        self.idp_token_endpoint = idp_token_endpoint
        self.id_token = id_token
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret

    async def _grant(self, binding: _Binding, client: ClientCredentials, asked: list[str]) -> dict[str, Any]:
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": await _resolve(self.id_token),
            "subject_token_type": ID_TOKEN,
            "audience": binding.issuer,
            "resource": binding.resource,
        }
        if asked:
            form["scope"] = " ".join(asked)
        headers: dict[str, str] = {}
        if self.idp_client_id is not None and self.idp_client_secret is not None:
            headers["Authorization"] = basic_authorization(self.idp_client_id, self.idp_client_secret)
        elif self.idp_client_id is not None:
            form["client_id"] = self.idp_client_id
        status, answer = await self._call("POST", self.idp_token_endpoint, data=form, headers=headers)
        grant = answer.get("access_token")
        if status != 200 or not isinstance(grant, str) or answer.get("issued_token_type") != ID_JAG:
            error = answer.get("error")
            raise AuthorizationFailed(
                "token",
                f"the identity provider refused the token exchange (HTTP {status} {error or 'no ID-JAG'})",
                error=error if isinstance(error, str) else None,
            )
        form = self._form(binding, asked, grant_type=JWT_BEARER, assertion=grant)
        return await self._granted(binding, client, form, "the identity assertion grant")
