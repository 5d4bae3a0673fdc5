"""Authentication of graphwright-server, driven by LangGraph's Python client (langgraph-sdk).

Usage: python auth_scenarios.py http://127.0.0.1:PORT API_KEY

The server (tests/server_auth.rs) lets in the holder of API_KEY as user `ada` and serves
`whoami`, a graph whose nodes (one of them in a subgraph) record who started the run.
"""

import asyncio
import sys

from langgraph_sdk import get_client
from langgraph_sdk.errors import AuthenticationError

URL, KEY = sys.argv[1], sys.argv[2]
SCENARIOS = []


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


@scenario
async def a_client_without_the_key_is_refused():
    for api_key in [None, "not-the-key"]:
        client = get_client(url=URL, api_key=api_key)
        try:
            await client.threads.create()
        except AuthenticationError as error:
            assert error.response.status_code == 401, error.response.status_code
            assert error.response.headers.get("www-authenticate"), "a 401 names how to authenticate"
            detail = error.response.json()["detail"]
            assert KEY not in detail and (api_key is None or api_key not in detail), detail
        else:
            raise AssertionError(f"a client with api_key={api_key!r} was let in")


@scenario
async def a_client_with_the_key_runs_and_streams_as_its_user():
    client = get_client(url=URL, api_key=KEY)
    thread = await client.threads.create()
    values = await client.runs.wait(thread["thread_id"], "whoami", input={})
    assert values["seen"] == ["direct:ada", "inner:ada"], values
    parts = [
        (part.event, part.data)
        async for part in client.runs.stream(thread["thread_id"], "whoami", input={}, stream_mode="updates")
    ]
    assert any(event == "updates" for event, _ in parts), parts
    assert all(KEY not in str(data) for _, data in parts), "the key reached a run's events"
    runs = await client.runs.list(thread["thread_id"])
    assert len(runs) == 2 and KEY not in str(runs), runs
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["seen"] == ["direct:ada", "inner:ada"] * 2, state


async def main():
    failed = 0
    for fn in SCENARIOS:
        try:
            await fn()
            print(f"ok   {fn.__name__}")
        except Exception as error:  # noqa: BLE001 - every failure is reported, then counted
            failed += 1
            print(f"FAIL {fn.__name__}: {type(error).__name__}: {error}")
    if failed:
        print(f"{failed} of {len(SCENARIOS)} scenarios failed")
        sys.exit(1)
    print("all scenarios passed")


asyncio.run(main())
