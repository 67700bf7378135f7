"""The /ui pages of the context ledger over HTTP: the recorded contexts of an agent session, and
one context as the model saw it, each message linked to its part; another tenant gets a 404
page, never the data."""

from __future__ import annotations

import re

import httpx

from tests.audit.pages import sign_in
from tests.conftest import TenantKeys
from tests.context.helpers import get_context
from tests.support.api import append, assistant, commit, create_session, user


async def test_what_the_model_saw_page_links_every_part(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant, external_id="seen")
    await append(
        client,
        tenant,
        sid,
        [user("Ship the Lyon order on Monday."), assistant("Scheduled for Monday.")],
    )
    assert (await commit(client, tenant, sid, keep_recent_count=0, wait=True)).status_code == 200
    await append(client, tenant, sid, [user("Any news about the Lyon truck?")])
    pinned = await client.post(
        f"/v1/sessions/{sid}/pins", json={"text": "Lyon orders ship Mondays"}, headers=tenant.write
    )
    assert pinned.status_code == 201
    context = await get_context(client, tenant, sid, record="true", fill="true", token_budget=4000)
    context_id = context["context_id"]
    await sign_in(client, tenant.reader)
    try:
        timeline = await client.get(f"/ui/sessions/{sid}")
        assert f'href="/ui/sessions/{sid}/contexts"' in timeline.text
        listed = await client.get(f"/ui/sessions/{sid}/contexts")
        assert listed.status_code == 200
        assert f'href="/ui/sessions/{sid}/contexts/{context_id}"' in listed.text
        page = await client.get(f"/ui/sessions/{sid}/contexts/{context_id}")
        assert page.status_code == 200, page.text
        html = page.text
        assert 'id="verdict"' in html
        assert "Rebuilt byte for byte" in html
        # The summary links to its archive; the filled message to its archive's raw messages;
        # the pins and the live message are named.
        assert f'<a href="/ui/sessions/{sid}/archives/1">Working memory after archive 1</a>' in html
        assert (
            f'href="/ui/sessions/{sid}/archives/1/messages?after_seq=0#m1">Message #1 (repeated by fill)'
            in html
        )
        assert "1 of 1 pins" in html
        assert "Message #3 ·" in html
        assert "Any news about the Lyon truck?" in html
        assert len(re.findall(r'<li class="message ', html)) == len(context["messages"])

        redacted = await client.post(
            f"/v1/sessions/{sid}/messages/3:redact", json={"reason": "x"}, headers=tenant.write
        )
        assert redacted.status_code == 200
        after = (await client.get(f"/ui/sessions/{sid}/contexts/{context_id}")).text
        assert "Not as it was sent" in after
        assert "message <code>3</code>: redacted" in after
        assert "Any news about the Lyon truck?" not in after
    finally:
        client.cookies.clear()
    await sign_in(client, other_tenant.reader)
    try:
        for path in (f"/ui/sessions/{sid}/contexts", f"/ui/sessions/{sid}/contexts/{context_id}"):
            answer = await client.get(path)
            assert answer.status_code == 404, path
            assert "Lyon" not in answer.text
    finally:
        client.cookies.clear()
