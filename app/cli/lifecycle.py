"""``workmem users erase`` and ``workmem receipts``: erasing a user, and checking the receipt."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli.base import CliError, cli, echo_json, run_operator, runtime
from app.db import Database

users_cli = typer.Typer(help="Users of a tenant (operator).", no_args_is_help=True)
cli.add_typer(users_cli, name="users")

receipts_cli = typer.Typer(help="Erasure receipts.", no_args_is_help=True)
cli.add_typer(receipts_cli, name="receipts")


@users_cli.command("erase")
def users_erase(
    user_id: Annotated[str, typer.Argument(help="the user id, as the tenant's data names it")],
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
    out: Annotated[
        Path | None, typer.Option("--out", help="also write the receipt to this file")
    ] = None,
) -> None:
    """Erase everything of a user in a tenant and print the signed receipt (resumable: after an
    interruption, run it again to finish)."""
    from app.lifecycle.erasure import erase_user

    if not 1 <= len(user_id) <= 256:
        raise CliError("a user id is 1 to 256 characters")

    async def work(database: Database) -> dict[str, Any]:
        return await erase_user(database, tenant, user_id, None)

    receipt = run_operator(work, runtime().url)
    if out is not None:
        out.write_text(json.dumps(receipt, indent=2, ensure_ascii=False) + "\n")
    echo_json(receipt)


@receipts_cli.command("public-key")
def receipts_public_key(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
) -> None:
    """Print the tenant's receipt-signing public key (as ``GET /v1/receipts/public-key``)."""
    from app.lifecycle import receipts
    from app.lifecycle.erasure import public_key

    async def work(database: Database) -> dict[str, str]:
        key = await public_key(database, tenant)
        return {
            "algorithm": receipts.ALGORITHM,
            "key_id": key.key_id,
            "public_key": base64.b64encode(key.public_key).decode(),
            "pem": receipts.public_key_pem(key.public_key),
        }

    echo_json(run_operator(work, runtime().url))


@receipts_cli.command("verify")
def receipts_verify(
    receipt_file: Annotated[Path, typer.Argument(help="the receipt, as JSON")],
    public_key_file: Annotated[
        Path | None,
        typer.Option(
            "--public-key",
            help="the tenant's public key: PEM, the JSON of GET /v1/receipts/public-key, or "
            "base64; without it, read from the database",
        ),
    ] = None,
) -> None:
    """Check a receipt's signature (offline with --public-key). Exit 0 and one line when it
    verifies; one line on stderr and exit 1 when it does not."""
    from app.lifecycle import receipts

    receipt = _read_json(receipt_file, "receipt")
    try:
        if public_key_file is not None:
            key = receipts.load_public_key(_read_text(public_key_file, "public key"))
        else:
            key = _stored_key(receipt)
        receipts.verify(receipt, key)
    except receipts.ReceiptInvalid as error:
        raise CliError(f"{receipt_file}: {error}") from None
    typer.echo(
        f"{receipt_file}: valid receipt of erasure {receipt['erasure_id']}, signed by key "
        f"{receipts.key_id_of(key)}: {receipt.get('rows_removed')} rows removed, finished "
        f"{receipt.get('finished_at')}"
    )


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"cannot read the {what} {path}: {error.__class__.__name__}") from None


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_read_text(path, what))
    except ValueError:
        raise CliError(f"{path}: the {what} is not valid JSON") from None
    if not isinstance(value, dict):
        raise CliError(f"{path}: the {what} is not a JSON object")
    return value


def _stored_key(receipt: dict[str, Any]) -> bytes:
    """The public key of the receipt's tenant, from the database."""
    from app.lifecycle import receipts
    from app.lifecycle.erasure import stored_public_key

    try:
        tenant = uuid.UUID(str(receipt.get("tenant_id")))
    except ValueError:
        raise receipts.ReceiptInvalid("the receipt names no tenant") from None

    async def work(database: Database) -> bytes | None:
        return await stored_public_key(database, tenant)

    key = run_operator(work, runtime().url)
    if key is None:
        raise receipts.ReceiptInvalid(f"tenant {tenant} has no receipt-signing key here")
    return key
