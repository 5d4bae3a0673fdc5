"""Authorization of graphwright-server (owner isolation), driven by LangGraph's Python client
(langgraph-sdk) as two users at once.

Usage: python authz_scenarios.py URL_OF_ADA URL_OF_BOB

The server (tests/server_authz.rs) lets in `key-ada` as user `ada` and `key-bob` as `bob` under
the built-in `OwnerIsolation` policy, and serves `whoami`, whose node records who started the
run, and `slow`, the same after two seconds. Ada talks to URL_OF_ADA and bob to URL_OF_BOB: one
server twice, or two server processes sharing one PostgreSQL database. Bob tries every endpoint
on ada's thread, runs, cron, assistant and store namespace; each must fail as a missing record
(404, `NotFoundError`) or a refusal (403, `PermissionDeniedError`), searches must leave ada's
records out, and ada must find her records as she left them. Each scenario tags what it makes
with a fresh id, and counts only what changes, so that the scenarios hold on a database others
wrote to. Prints `all scenarios passed` when every check held.
"""

import asyncio
import sys
import traceback
import uuid

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, PermissionDeniedError

ADA_URL, BOB_URL = sys.argv[1], sys.argv[2]
SCENARIOS = []

# The typed error langgraph-sdk raises for each status. Some calls (`runs.join`, `runs.wait`)
# go through the client's reconnecting request, which raises httpx's own error: for those the
# status alone is checked.
TYPED = {403: PermissionDeniedError, 404: NotFoundError, 409: ConflictError}


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


def clients():
    return get_client(url=ADA_URL, api_key="key-ada"), get_client(url=BOB_URL, api_key="key-bob")


def tag():
    return uuid.uuid4().hex


async def outcome(call):
    """Runs `call` (a coroutine, or a stream to read to its end); the HTTP error it raised, or
    None when it succeeded."""
    try:
        # `threads.join_stream` is a coroutine that returns the stream: awaited, then read.
        stream = call if hasattr(call, "__aiter__") else await call
        if hasattr(stream, "__aiter__"):
            async for _ in stream:
                pass
    except httpx.HTTPError as error:
        # An answer with a status, or none at all (a dropped connection): either is reported
        # against the call that got it.
        return error
    return None


def wrong(error, status, what):
    """Why `error` is not the failure with `status` expected of `what`, or None if it is."""
    if error is None:
        return f"{what}: succeeded, expected {status}"
    if not isinstance(error, httpx.HTTPStatusError):
        return f"{what}: {type(error).__name__}: {error}, expected {status}"
    got = error.response.status_code
    if got != status:
        return f"{what}: got {got} {error.response.text[:200]}, expected {status}"
    if type(error) is not httpx.HTTPStatusError and not isinstance(error, TYPED[status]):
        return f"{what}: raised {type(error).__name__}, expected {TYPED[status].__name__}"
    if status == 403 and not error.response.json().get("detail"):
        return f"{what}: a refusal says why in `detail`: {error.response.text}"
    return None


async def expect(status, attempts, hidden=()):
    """Runs every `(what, make_call)` of `attempts`, and fails listing every one that did not
    fail with `status`, or whose answer shows one of `hidden`."""
    failures = []
    for what, make in attempts:
        error = await outcome(make())
        problem = wrong(error, status, what)
        if problem is None:
            shown = [h for h in hidden if h in error.response.text]
            problem = f"{what}: the answer shows {shown}: {error.response.text}" if shown else None
        if problem:
            failures.append(problem)
    assert not failures, "\n  " + "\n  ".join(failures)


# --- threads and runs ---------------------------------------------------------------------


@scenario
async def another_users_thread_and_its_runs_are_not_found():
    ada, bob = clients()
    secret = tag()
    thread = await ada.threads.create(metadata={"topic": secret})
    assert thread["metadata"]["owner"] == "ada", thread
    tid = thread["thread_id"]
    run = await ada.runs.create(tid, "whoami", input={}, stream_resumable=True)
    rid = run["run_id"]
    await ada.runs.join(tid, rid)
    state = await ada.threads.get_state(tid)
    assert state["values"]["seen"] == ["ada"], state
    checkpoint = state["checkpoint"]

    await expect(
        404,
        [
            ("threads.get", lambda: bob.threads.get(tid)),
            ("threads.update", lambda: bob.threads.update(tid, metadata={"taken_by": "bob"})),
            ("threads.delete", lambda: bob.threads.delete(tid)),
            ("threads.copy", lambda: bob.threads.copy(tid)),
            ("threads.get_state", lambda: bob.threads.get_state(tid)),
            ("threads.get_state(checkpoint)", lambda: bob.threads.get_state(tid, checkpoint=checkpoint)),
            (
                "threads.get_state(checkpoint_id)",
                lambda: bob.threads.get_state(tid, checkpoint_id=checkpoint["checkpoint_id"]),
            ),
            ("threads.update_state", lambda: bob.threads.update_state(tid, {"seen": ["bob"]})),
            ("threads.get_history", lambda: bob.threads.get_history(tid)),
            ("GET /threads/{id}/history", lambda: bob.http.get(f"/threads/{tid}/history")),
            ("threads.join_stream", lambda: bob.threads.join_stream(tid, last_event_id="-1")),
            ("GET /threads/{id}/storage", lambda: bob.http.get(f"/threads/{tid}/storage")),
            ("runs.list", lambda: bob.runs.list(tid)),
            ("runs.create", lambda: bob.runs.create(tid, "whoami", input={})),
            (
                "runs.create(if_not_exists=create)",
                lambda: bob.runs.create(tid, "whoami", input={}, if_not_exists="create"),
            ),
            ("runs.wait", lambda: bob.runs.wait(tid, "whoami", input={})),
            ("runs.stream", lambda: bob.runs.stream(tid, "whoami", input={})),
            ("runs.get", lambda: bob.runs.get(tid, rid)),
            ("runs.cancel", lambda: bob.runs.cancel(tid, rid)),
            ("runs.join", lambda: bob.runs.join(tid, rid)),
            ("runs.join_stream(last_event_id)", lambda: bob.runs.join_stream(tid, rid, last_event_id="-1")),
            ("runs.delete", lambda: bob.runs.delete(tid, rid)),
            ("runs.cancel_many(thread_id)", lambda: bob.runs.cancel_many(thread_id=tid)),
            (
                "crons.create_for_thread",
                lambda: bob.crons.create_for_thread(tid, "whoami", schedule="0 0 1 1 *", input={}),
            ),
        ],
        hidden=[secret, '"owner"'],
    )

    # Nothing bob tried reached ada's thread, and she still reaches all of it.
    thread = await ada.threads.get(tid)
    assert thread["metadata"]["topic"] == secret and thread["metadata"]["owner"] == "ada", thread
    assert "taken_by" not in thread["metadata"], thread
    assert (await ada.threads.get_state(tid))["values"]["seen"] == ["ada"]
    assert (await ada.threads.get_state(tid, checkpoint=checkpoint))["values"]["seen"] == ["ada"]
    assert len(await ada.threads.get_history(tid)) > 0
    runs = await ada.runs.list(tid)
    assert [r["run_id"] for r in runs] == [rid], runs
    assert (await ada.runs.get(tid, rid))["status"] == "success"
    assert (await ada.runs.join(tid, rid))["seen"] == ["ada"]
    assert await ada.crons.search(thread_id=tid) == []
    assert await bob.crons.search(thread_id=tid) == []


@scenario
async def the_owner_stays_the_creator_and_searches_hold_ones_own():
    ada, bob = clients()
    topic = tag()
    thread = await ada.threads.create(metadata={"owner": "bob", "topic": topic})
    assert thread["metadata"]["owner"] == "ada", thread
    tid = thread["thread_id"]
    patched = await ada.threads.update(tid, metadata={"owner": "bob"})
    assert patched["metadata"]["owner"] == "ada" and patched["metadata"]["topic"] == topic, patched
    his = (await bob.threads.create(metadata={"topic": topic}))["thread_id"]

    assert [t["thread_id"] for t in await ada.threads.search(metadata={"topic": topic})] == [tid]
    assert [t["thread_id"] for t in await bob.threads.search(metadata={"topic": topic})] == [his]
    assert [t["thread_id"] for t in await bob.threads.search(ids=[tid, his])] == [his]
    assert await bob.threads.search(metadata={"owner": "ada"}, limit=1000) == []
    assert all(t["metadata"]["owner"] == "bob" for t in await bob.threads.search(limit=1000))
    assert await ada.threads.count(metadata={"topic": topic}) == 1
    assert await bob.threads.count(metadata={"topic": topic}) == 1
    assert await bob.threads.count(metadata={"owner": "ada"}) == 0

    # Asking for ada's id: a conflict, and nothing of her thread.
    await expect(
        409,
        [
            ("threads.create(do_nothing)", lambda: bob.threads.create(thread_id=tid, if_exists="do_nothing")),
            ("threads.create(raise)", lambda: bob.threads.create(thread_id=tid, if_exists="raise")),
        ],
        hidden=[topic],
    )
    again = await ada.threads.create(thread_id=tid, if_exists="do_nothing")
    assert again["thread_id"] == tid and again["metadata"]["topic"] == topic, again
    copy = await ada.threads.copy(tid)
    assert copy["metadata"]["owner"] == "ada", copy
    await expect(404, [("threads.get(copy)", lambda: bob.threads.get(copy["thread_id"]))])


@scenario
async def prune_and_cancel_leave_another_users_runs_alone():
    ada, bob = clients()
    tid = (await ada.threads.create())["thread_id"]
    run = await ada.runs.create(tid, "slow", input={})
    rid = run["run_id"]
    # While the run is in flight: by its id bob cancels nothing (whatever he is told), and
    # naming the thread is a 404.
    error = await outcome(bob.runs.cancel_many(run_ids=[rid]))
    assert error is None or error.response.status_code == 404, error.response.text
    await expect(
        404,
        [
            ("runs.cancel_many(thread_id)", lambda: bob.runs.cancel_many(thread_id=tid)),
            ("runs.cancel_many(thread_id, run_ids)", lambda: bob.runs.cancel_many(thread_id=tid, run_ids=[rid])),
            ("runs.cancel", lambda: bob.runs.cancel(tid, rid)),
        ],
    )
    assert (await ada.runs.join(tid, rid))["seen"] == ["ada"]
    assert (await ada.runs.get(tid, rid))["status"] == "success"

    pruned = await bob.threads.prune([tid])
    assert pruned["pruned_count"] == 0, pruned
    assert (await ada.threads.get_state(tid))["values"]["seen"] == ["ada"]
    pruned = await ada.threads.prune([tid])
    assert pruned["pruned_count"] == 1, pruned


@scenario
async def stateless_runs_make_threads_of_their_caller():
    ada, bob = clients()
    ada_before, bob_before = await ada.threads.count(), await bob.threads.count()
    values = await ada.runs.wait(None, "whoami", input={}, on_completion="keep")
    assert values["seen"] == ["ada"], values
    async for _ in ada.runs.stream(None, "whoami", input={}, on_completion="keep"):
        pass
    run = await ada.runs.create(None, "whoami", input={}, on_completion="keep")
    await ada.runs.join(run["thread_id"], run["run_id"])
    batch = await ada.runs.create_batch([{"assistant_id": "whoami", "input": {}, "on_completion": "keep"}] * 2)
    for run in batch:
        await ada.runs.join(run["thread_id"], run["run_id"])

    assert await ada.threads.count() == ada_before + 5
    assert await bob.threads.count() == bob_before
    newest = await ada.threads.search(limit=5, sort_by="created_at", sort_order="desc")
    assert {run["thread_id"] for run in batch} <= {t["thread_id"] for t in newest}, newest
    for thread in newest:
        assert thread["metadata"]["owner"] == "ada", thread
        assert (await ada.threads.get_state(thread["thread_id"]))["values"]["seen"] == ["ada"]
    await expect(404, [(f"threads.get({t['thread_id']})", lambda t=t: bob.threads.get(t["thread_id"])) for t in newest])


# --- assistants ---------------------------------------------------------------------------


@scenario
async def a_users_assistant_is_theirs_and_the_defaults_are_everyones():
    ada, bob = clients()
    team = tag()
    mine = await ada.assistants.create("whoami", metadata={"owner": "bob", "team": team}, name=f"ada-{team}")
    assert mine["metadata"]["owner"] == "ada", mine
    aid = mine["assistant_id"]
    his_thread = (await bob.threads.create())["thread_id"]

    await expect(
        404,
        [
            ("assistants.get", lambda: bob.assistants.get(aid)),
            ("assistants.get_graph", lambda: bob.assistants.get_graph(aid)),
            ("assistants.get_schemas", lambda: bob.assistants.get_schemas(aid)),
            ("assistants.get_subgraphs", lambda: bob.assistants.get_subgraphs(aid)),
            ("assistants.get_versions", lambda: bob.assistants.get_versions(aid)),
            ("assistants.set_latest", lambda: bob.assistants.set_latest(aid, 1)),
            ("assistants.update", lambda: bob.assistants.update(aid, name="bob's now")),
            ("assistants.delete", lambda: bob.assistants.delete(aid)),
            ("runs.wait(his thread)", lambda: bob.runs.wait(his_thread, aid, input={})),
            ("runs.create(his thread)", lambda: bob.runs.create(his_thread, aid, input={})),
            ("runs.wait(stateless)", lambda: bob.runs.wait(None, aid, input={})),
            ("runs.stream(stateless)", lambda: bob.runs.stream(None, aid, input={})),
            ("crons.create", lambda: bob.crons.create(aid, schedule="0 0 1 1 *", input={})),
        ],
        hidden=[team],
    )
    assert await bob.runs.list(his_thread) == []
    assert await bob.assistants.search(metadata={"team": team}) == []
    assert await bob.assistants.count(metadata={"team": team}) == 0
    assert [a["assistant_id"] for a in await ada.assistants.search(metadata={"team": team})] == [aid]
    assert await ada.assistants.count(metadata={"team": team}) == 1
    seen_by_bob = await bob.assistants.search(graph_id="whoami", limit=1000)
    assert all(a["metadata"].get("owner") in (None, "bob") for a in seen_by_bob), seen_by_bob
    await expect(
        409,
        [("assistants.create(do_nothing)", lambda: bob.assistants.create("whoami", assistant_id=aid, if_exists="do_nothing"))],
        hidden=[team],
    )

    # The graph's default assistant: seen and run by all, changed by none.
    defaults = [a for a in seen_by_bob if a["metadata"].get("created_by") == "system"]
    assert len(defaults) == 1, seen_by_bob
    default = defaults[0]["assistant_id"]
    assert (await bob.assistants.get("whoami"))["assistant_id"] == default
    assert (await bob.runs.wait(his_thread, "whoami", input={}))["seen"] == ["bob"]
    for user, who in [(bob, "bob"), (ada, "ada")]:
        await expect(
            403,
            [
                (f"{who}: assistants.update(default)", lambda u=user: u.assistants.update(default, name="mine")),
                (f"{who}: assistants.delete(default)", lambda u=user: u.assistants.delete(default)),
                (f"{who}: assistants.set_latest(default)", lambda u=user: u.assistants.set_latest(default, 1)),
            ],
        )

    patched = await ada.assistants.update(aid, metadata={"owner": "bob"})
    assert patched["metadata"]["owner"] == "ada", patched
    ada_thread = (await ada.threads.create())["thread_id"]
    assert (await ada.runs.wait(ada_thread, aid, input={}))["seen"] == ["ada"]
    await ada.assistants.delete(aid)


# --- crons --------------------------------------------------------------------------------


@scenario
async def a_cron_belongs_to_its_creator():
    ada, bob = clients()
    bob_before = await bob.crons.count()
    label = tag()
    cron = await ada.crons.create("whoami", schedule="0 0 1 1 *", input={}, metadata={"owner": "bob", "label": label})
    assert cron["user_id"] == "ada", cron
    assert cron["metadata"]["owner"] == "ada", cron
    cid = cron["cron_id"]

    await expect(
        404,
        [
            ("GET /runs/crons/{id}", lambda: bob.http.get(f"/runs/crons/{cid}")),
            ("crons.update", lambda: bob.crons.update(cid, schedule="* * * * * *")),
            ("crons.delete", lambda: bob.crons.delete(cid)),
        ],
        hidden=[label],
    )
    assert await bob.crons.count() == bob_before
    assert all(c["cron_id"] != cid for c in await bob.crons.search(limit=1000))
    assert await bob.crons.search(metadata={"label": label}) == []
    assert [c["cron_id"] for c in await ada.crons.search(metadata={"label": label})] == [cid]
    assert await ada.crons.count(assistant_id=cron["assistant_id"]) >= 1
    kept = await ada.http.get(f"/runs/crons/{cid}")
    assert kept["schedule"] == "0 0 1 1 *" and kept["user_id"] == "ada", kept
    await ada.crons.delete(cid)


# --- the store ----------------------------------------------------------------------------


@scenario
async def store_namespaces_start_with_the_callers_identity():
    ada, bob = clients()
    shelf = f"notes-{tag()}"
    await ada.store.put_item(["ada", shelf], "k", {"text": "ada's"})
    await bob.store.put_item(["bob", shelf], "k", {"text": "bob's"})

    await expect(
        403,
        [
            ("ada: put_item(bob's)", lambda: ada.store.put_item(["bob", shelf], "k", {"text": "ada was here"})),
            ("ada: put_item(nobody's)", lambda: ada.store.put_item([shelf], "k", {"text": "shared"})),
            ("bob: get_item(ada's)", lambda: bob.store.get_item(["ada", shelf], "k")),
            ("bob: delete_item(ada's)", lambda: bob.store.delete_item(["ada", shelf], "k")),
            ("bob: search_items(ada)", lambda: bob.store.search_items(["ada"])),
            ("bob: search_items(ada, shelf)", lambda: bob.store.search_items(["ada", shelf])),
            ("bob: list_namespaces(ada)", lambda: bob.store.list_namespaces(prefix=["ada"])),
        ],
    )
    assert (await ada.store.get_item(["ada", shelf], "k"))["value"] == {"text": "ada's"}
    assert (await bob.store.get_item(["bob", shelf], "k"))["value"] == {"text": "bob's"}

    for user, me in [(ada, "ada"), (bob, "bob")]:
        items = (await user.store.search_items([], limit=1000))["items"]
        assert all(item["namespace"][0] == me for item in items), (me, items)
        assert [me, shelf] in [item["namespace"] for item in items], (me, items)
        namespaces = (await user.store.list_namespaces(limit=1000))["namespaces"]
        assert all(ns[0] == me for ns in namespaces), (me, namespaces)
        assert [me, shelf] in namespaces, (me, namespaces)
    await ada.store.delete_item(["ada", shelf], "k")
    assert await ada.store.get_item(["ada", shelf], "k") is None


async def main():
    failed = 0
    for fn in SCENARIOS:
        try:
            await fn()
            print(f"ok   {fn.__name__}")
        except Exception as error:  # noqa: BLE001 - every failure is reported, then counted
            failed += 1
            print(f"FAIL {fn.__name__}: {type(error).__name__}: {error}")
            if not isinstance(error, AssertionError):
                # Not a check that failed: the line of this script that got it.
                here = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
                print("".join(traceback.format_list(here[-2:])), end="")
    if failed:
        print(f"{failed} of {len(SCENARIOS)} scenarios failed")
        sys.exit(1)
    print("all scenarios passed")


asyncio.run(main())
