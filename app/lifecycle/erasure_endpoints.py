"""HTTP routes of erasure: ``DELETE /v1/users/{user_id}`` and the receipts' public key."""

from __future__ import annotations

import base64
from typing import Annotated

from fastapi import APIRouter, Depends, Path

from app.deps import DatabaseDep
from app.lifecycle import receipts
from app.lifecycle.erasure import erase_user, public_key
from app.lifecycle.erasure_schemas import ErasureReceipt, ReceiptPublicKey
from app.tenancy.auth import Admin, Authenticator, Reader, authenticator
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(route_class=StrictJsonRoute, responses=problems(*TENANT_ROUTE))


@router.delete("/v1/users/{user_id:path}", tags=["lifecycle"], responses=problems(404, 422))
async def erase_a_user(
    user_id: Annotated[str, Path(min_length=1, max_length=256)],
    principal: Admin,
    database: DatabaseDep,
    auth: Annotated[Authenticator, Depends(authenticator)],
) -> ErasureReceipt:
    """Erase everything of ``user_id`` in this tenant (agent sessions, messages, archives and
    their section versions, pins, long-term memories and their history, webhook deliveries
    and stored answers that quote them, keys bound to the user) and answer a signed receipt.
    404 when nothing of the user is stored (never was, or erased already). Admin keys not bound
    to a user only."""
    receipt = await erase_user(database, principal.tenant_id, user_id, principal.api_key_id)
    # Keys bound to the user are gone: no process may keep accepting them from its cache.
    auth.forget()
    return ErasureReceipt.model_validate(receipt)


@router.get("/v1/receipts/public-key", tags=["lifecycle"])
async def receipt_public_key(principal: Reader, database: DatabaseDep) -> ReceiptPublicKey:
    """The tenant's Ed25519 public key that verifies its erasure receipts (offline, with
    ``workmem receipts verify``)."""
    key = await public_key(database, principal.tenant_id)
    return ReceiptPublicKey(
        algorithm=receipts.ALGORITHM,
        key_id=key.key_id,
        public_key=base64.b64encode(key.public_key).decode(),
        pem=receipts.public_key_pem(key.public_key),
    )
