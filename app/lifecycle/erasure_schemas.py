"""Response models of erasure: the signed receipt and the tenant's public key."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ReceiptSignature(BaseModel):
    algorithm: str = Field(description='always "Ed25519"')
    key_id: str = Field(description="the signing key's id (GET /v1/receipts/public-key)")
    value: str = Field(description="the signature, base64, over the canonical receipt")


class ErasureReceipt(BaseModel):
    """What an erasure removed, signed. Every member but ``signature`` is signed, in canonical
    form (keys sorted, no whitespace, UTF-8): change any and verification fails."""

    format: str = Field(description='"workmem.erasure-receipt/1"')
    erasure_id: str
    tenant_id: str
    user_id_sha256: str = Field(
        description="SHA-256 (hex) of '<tenant_id>:<user_id>': the receipt names no one"
    )
    requested_by_api_key_id: str | None = Field(
        description="the id of the API key that asked (null: the operator's command line)"
    )
    started_at: str
    finished_at: str
    removed: dict[str, int] = Field(description="rows removed, per table")
    rows_removed: int
    signature: ReceiptSignature


class ReceiptPublicKey(BaseModel):
    algorithm: str = Field(description='always "Ed25519"')
    key_id: str
    public_key: str = Field(description="the raw 32-byte public key, base64")
    pem: str = Field(description="the same key as a PEM SubjectPublicKeyInfo block")
