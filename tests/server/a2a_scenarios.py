"""Scenarios for graphwright-server's `/a2a/{assistant_id}`, driven by the Python A2A client
(`a2a-sdk`): the agent card, message/send and message/stream in A2A 1.0 (the client's default)
and in A2A 0.3 (its compat transport, `message/send`, `tasks/get`, ..), a context that goes on
over several messages, a task that waits for an answer, cancelling a task, and the JSON-RPC
errors of bad requests.

Usage: python a2a_scenarios.py http://127.0.0.1:PORT

The graphs (chat, ask, slow, adder, broken) are served by tests/server_protocols.rs.
"""

import asyncio
import sys
import traceback
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, Message, SendMessageRequest
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf import json_format

URL = sys.argv[1]
scenarios = []


def scenario(fn):
    scenarios.append(fn)
    return fn


def as_dict(message):
    return json_format.MessageToDict(message)


def message(*parts, context=None, task=None):
    """A user's message: strings become text parts, dicts data parts."""
    body = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": p} if isinstance(p, str) else {"data": p} for p in parts],
    }
    if context:
        body["contextId"] = context
    if task:
        body["taskId"] = task
    return json_format.ParseDict(body, Message())


async def client_for(http, agent, *, streaming=False, legacy=False):
    """A client of the agent `agent` (a graph name or an assistant id): A2A 1.0, or 0.3 when
    `legacy` (the card's 0.3 interface only, so the factory picks the compat transport)."""
    card = await A2ACardResolver(http, f"{URL}/a2a/{agent}").get_agent_card()
    if legacy:
        kept = [i for i in card.supported_interfaces if i.protocol_version.startswith("0.3")]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(kept)
    return ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)


async def send(client, msg, **configuration):
    request = SendMessageRequest(message=msg)
    for key, value in configuration.items():
        setattr(request.configuration, key, value)
    return [as_dict(event) async for event in client.send_message(request)]


async def sent_task(client, msg, **configuration):
    events = await send(client, msg, **configuration)
    assert len(events) == 1, events
    return events[0]["task"]


def reply_of(task):
    return [p.get("text", p.get("data")) for a in task.get("artifacts", []) for p in a["parts"]]


def history_of(task):
    return [(m["role"], m["parts"][0].get("text")) for m in task.get("history", [])]


async def rpc(http, agent, method, params, rpc_id=1):
    response = await http.post(
        f"{URL}/a2a/{agent}", json={"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
    )
    assert response.status_code == 200, (response.status_code, response.text)
    return response.json()


@scenario
async def the_agent_card(http):
    card = (await http.get(f"{URL}/.well-known/agent-card.json", params={"assistant_id": "chat"})).json()
    assert card["name"] == "chat", card
    assert card["url"].startswith(f"{URL}/a2a/") and not card["url"].endswith("/chat"), card["url"]
    assert card["capabilities"]["streaming"] is True, card
    assert card["defaultInputModes"] == ["application/json", "text/plain"], card
    assert card["defaultOutputModes"] == ["application/json", "text/plain"], card
    assert [s["name"] for s in card["skills"]] == ["chat"], card["skills"]
    versions = sorted(i["protocolVersion"] for i in card["supportedInterfaces"])
    assert versions == ["0.3", "1.0"], card

    # Where clients look given the agent's URL, and GET on that URL itself: the same card.
    resolved = await A2ACardResolver(http, card["url"]).get_agent_card()
    assert resolved.name == "chat" and resolved.capabilities.streaming
    assert (await http.get(card["url"])).json() == card

    # A graph without messages takes data only; several graphs need ?assistant_id=.
    adder = (await http.get(f"{URL}/a2a/adder/.well-known/agent-card.json")).json()
    assert adder["defaultInputModes"] == ["application/json"], adder
    several = await http.get(f"{URL}/.well-known/agent-card.json")
    assert several.status_code == 400 and "assistant_id" in several.text, several.text
    missing = await http.get(f"{URL}/a2a/nobody/.well-known/agent-card.json")
    assert missing.status_code == 404, missing.text


@scenario
async def send_and_continue_a_context(http):
    client = await client_for(http, "chat")
    first = await sent_task(client, message("hello"))
    assert first["status"]["state"] == "TASK_STATE_COMPLETED", first
    assert reply_of(first) == ["You said: hello (1 from you)"], first
    assert history_of(first) == [("ROLE_USER", "hello"), ("ROLE_AGENT", "You said: hello (1 from you)")]
    context = first["contextId"]

    # The second message on the same context goes on with the thread: the graph sees both.
    second = await sent_task(client, message("and again", context=context))
    assert second["contextId"] == context and second["id"] != first["id"], second
    assert reply_of(second) == ["You said: and again (2 from you)"], second
    assert len(second["history"]) == 4, second["history"]
    assert second["history"][0]["taskId"] == first["id"], second["history"]
    assert second["history"][2]["taskId"] == second["id"], second["history"]

    # tasks/get: the first task as it ended, with the history up to its end.
    got = as_dict(await client.get_task(GetTaskRequest(id=first["id"])))
    assert got["status"]["state"] == "TASK_STATE_COMPLETED", got
    assert reply_of(got) == ["You said: hello (1 from you)"], got
    assert history_of(got) == history_of(first), got
    last = as_dict(await client.get_task(GetTaskRequest(id=second["id"], history_length=1)))
    assert history_of(last) == [("ROLE_AGENT", "You said: and again (2 from you)")], last
    none = as_dict(await client.get_task(GetTaskRequest(id=second["id"], history_length=0)))
    assert "history" not in none, none
    try:
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        raise AssertionError("an unknown task was found")
    except TaskNotFoundError:
        pass

    # A task that ended takes no more messages.
    try:
        await send(client, message("more", context=context, task=first["id"]))
        raise AssertionError("a completed task took a message")
    except UnsupportedOperationError as error:
        assert "has ended" in str(error), error


@scenario
async def stream_a_task(http):
    client = await client_for(http, "chat", streaming=True)
    events = await send(client, message("stream me"))
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "task" and events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED", events[0]
    assert events[0]["task"]["history"][0]["parts"] == [{"text": "stream me"}], events[0]
    task_id = events[0]["task"]["id"]
    updates = [e["statusUpdate"] for e in events if "statusUpdate" in e]
    assert all(u["taskId"] == task_id for u in updates), updates
    assert [u["status"]["state"] for u in updates][:2] == ["TASK_STATE_WORKING"] * 2, updates
    pieces = [u["status"]["message"]["parts"][0]["text"] for u in updates if "message" in u["status"]]
    assert "".join(pieces) == "You said: stream me (1 from you)", pieces
    assert len(pieces) == 7, pieces
    assert kinds[-2:] == ["artifactUpdate", "statusUpdate"], kinds
    artifact = events[-2]["artifactUpdate"]["artifact"]
    assert artifact["parts"] == [{"text": "You said: stream me (1 from you)"}], artifact
    assert updates[-1]["status"]["state"] == "TASK_STATE_COMPLETED", updates[-1]

    # The streamed task is there afterwards, as any.
    got = as_dict(await client.get_task(GetTaskRequest(id=task_id)))
    assert got["status"]["state"] == "TASK_STATE_COMPLETED" and len(got["history"]) == 2, got


@scenario
async def a2a_0_3_through_the_compat_transport(http):
    """The same, spoken as A2A 0.3 (`message/send`, `message/stream`, `tasks/get`)."""
    client = await client_for(http, "chat", legacy=True)
    task = await sent_task(client, message("old style"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    assert reply_of(task) == ["You said: old style (1 from you)"], task
    got = as_dict(await client.get_task(GetTaskRequest(id=task["id"])))
    assert history_of(got) == history_of(task), got

    streaming = await client_for(http, "chat", streaming=True, legacy=True)
    events = await send(streaming, message("streamed old style", context=task["contextId"]))
    assert "task" in events[0], events[0]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events[-1]
    assert events[-2]["artifactUpdate"]["artifact"]["parts"] == [
        {"text": "You said: streamed old style (2 from you)"}
    ], events[-2]

    # The raw 0.3 shapes: tagged with kinds, lowercase states, roles user and agent.
    raw = await rpc(http, "chat", "tasks/get", {"id": task["id"]})
    result = raw["result"]
    assert result["kind"] == "task" and result["status"]["state"] == "completed", raw
    assert [m["role"] for m in result["history"]] == ["user", "agent"], raw
    assert result["artifacts"][0]["parts"][0]["kind"] == "text", raw


@scenario
async def a_task_that_waits_for_an_answer(http):
    for legacy in (False, True):
        client = await client_for(http, "ask", legacy=legacy)
        asked = await sent_task(client, message("refund 7"))
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
        question = asked["artifacts"][0]["parts"][0]["data"]
        assert question["value"] == {"question": "approve?", "request": "refund 7"}, question
        got = as_dict(await client.get_task(GetTaskRequest(id=asked["id"])))
        assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", got

        # The answer goes to the same task, and it completes.
        answer = message("yes", context=asked["contextId"], task=asked["id"])
        done = await sent_task(client, answer)
        assert done["id"] == asked["id"], (done["id"], asked["id"])
        assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
        assert reply_of(done) == ["refund 7: yes"], done


@scenario
async def cancel_a_task(http):
    client = await client_for(http, "slow")
    started = await sent_task(client, message("take your time"), return_immediately=True)
    assert started["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"), started
    cancelled = as_dict(await client.cancel_task(CancelTaskRequest(id=started["id"])))
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED", cancelled
    got = as_dict(await client.get_task(GetTaskRequest(id=started["id"])))
    assert got["status"]["state"] == "TASK_STATE_CANCELED", got
    try:
        await client.cancel_task(CancelTaskRequest(id=started["id"]))
        raise AssertionError("a cancelled task was cancelled again")
    except TaskNotCancelableError as error:
        assert "has ended" in str(error), error


@scenario
async def data_parts_and_graphs_without_messages(http):
    client = await client_for(http, "adder")
    try:
        await send(client, message("two plus three"))
        raise AssertionError("text went to a graph without messages")
    except InvalidParamsError as error:
        assert "no `messages` field" in str(error), error
    summed = await sent_task(client, message({"a": 2, "b": 3}))
    assert summed["status"]["state"] == "TASK_STATE_COMPLETED", summed
    assert reply_of(summed) == [{"a": 2.0, "b": 3.0, "sum": 5.0}], summed

    broken = await client_for(http, "broken")
    failed = await sent_task(broken, message({"n": 7}))
    assert failed["status"]["state"] == "TASK_STATE_FAILED", failed
    said = failed["status"]["message"]["parts"][0]["text"]
    assert "cannot handle 7" in said, said
    try:
        await send(broken, message({"n": "seven"}))
        raise AssertionError("input that does not fit was taken")
    except InvalidParamsError as error:
        assert "does not fit the graph's state" in str(error), error


@scenario
async def bad_requests_get_json_rpc_errors(http):
    unknown = await rpc(http, "chat", "tasks/frobnicate", {}, rpc_id="r-1")
    assert unknown["id"] == "r-1" and unknown["error"]["code"] == -32601, unknown
    for params, code, says in [
        ({}, -32602, "params.message"),
        ({"message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}}, -32602, "messageId"),
        ({"message": {"messageId": "m", "role": "user", "parts": []}}, -32602, "empty"),
        ({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "file", "file": {"uri": "x"}}]}}, -32005, "file"),
        ({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}], "taskId": "nope"}}, -32001, "nope"),
    ]:
        answer = await rpc(http, "chat", "message/send", params)
        assert answer["error"]["code"] == code and says in answer["error"]["message"], (params, answer)
    nobody = await rpc(http, "nobody", "message/send", {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}]}})
    assert nobody["error"]["code"] == -32602 and "No assistant" in nobody["error"]["message"], nobody
    get = await rpc(http, "chat", "GetTask", {})
    assert get["error"]["code"] == -32602 and "params.id" in get["error"]["message"], get
    # A streaming request that cannot start a run gets its error as the stream's one event.
    async with http.stream("POST", f"{URL}/a2a/chat", json={"jsonrpc": "2.0", "id": 5, "method": "message/stream", "params": {}}) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        body = (await response.aread()).decode()
        assert body.startswith("data: ") and '"code":-32602' in body, body


async def main():
    failed = 0
    async with httpx.AsyncClient(timeout=60) as http:
        for fn in scenarios:
            try:
                await fn(http)
                print(f"ok   {fn.__name__}")
            except Exception:
                failed += 1
                print(f"FAIL {fn.__name__}: {traceback.format_exc()}")
    if failed:
        print(f"{failed} of {len(scenarios)} scenarios failed")
        sys.exit(1)
    print("all scenarios passed")


asyncio.run(main())
