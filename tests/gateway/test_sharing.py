"""``lazymcp.gateway.sharing``: the sessions of one principal on one server process, sans-IO. Every
session keeps its own ids and progress tokens, the handshake happens once, and what the server says goes
to the session it concerns."""

from __future__ import annotations

from typing import Any

from lazymcp.gateway.sharing import SERVER, Out, Sharing
from lazymcp.protocol.jsonrpc import Frame


def req(request_id: object, method: str, params: dict[str, Any] | None = None) -> Frame:
    return Frame({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})


def note(method: str, params: dict[str, Any] | None = None) -> Frame:
    return Frame({"jsonrpc": "2.0", "method": method, "params": params or {}})


def ok(request_id: object, result: dict[str, Any] | None = None) -> Frame:
    return Frame({"jsonrpc": "2.0", "id": request_id, "result": result or {}})


def to_server(out: list[Out]) -> Frame:
    [(where, frame)] = out
    assert where == SERVER
    return frame


def opened(sharing: Sharing) -> tuple[int, int]:
    """Two sessions past the handshake: the first's went to the server, the second's was answered here."""
    a, b = sharing.attach(), sharing.attach()
    sent = to_server(sharing.from_session(a, req(1, "initialize", {"protocolVersion": "2025-11-25"})))
    assert sharing.from_session(b, req(1, "initialize", {})) == []  # waits for the first one's answer
    answers = sharing.from_server(ok(sent.id, {"protocolVersion": "2025-11-25", "serverInfo": {"name": "s"}}))
    assert sorted(where for where, _ in answers) == [a, b]
    assert all(frame.id == 1 and frame.message["result"]["serverInfo"] == {"name": "s"} for _, frame in answers)
    assert to_server(sharing.from_session(a, note("notifications/initialized"))).method == "notifications/initialized"
    assert sharing.from_session(b, note("notifications/initialized")) == []  # the server hears it once
    return a, b


def test_one_handshake_serves_every_later_session() -> None:
    sharing = Sharing()
    opened(sharing)
    c = sharing.attach()
    [(where, frame)] = sharing.from_session(c, req("x", "initialize", {}))
    assert where == c and frame.id == "x" and frame.message["result"]["serverInfo"] == {"name": "s"}


def test_the_same_id_from_two_sessions_reaches_the_server_as_two_and_each_answer_goes_home() -> None:
    sharing = Sharing()
    a, b = opened(sharing)
    for_a = to_server(sharing.from_session(a, req(7, "tools/call", {"name": "t"})))
    for_b = to_server(sharing.from_session(b, req(7, "tools/call", {"name": "t"})))
    assert for_a.id != for_b.id
    assert sharing.from_server(ok(for_b.id, {"who": "b"})) == [(b, ok(7, {"who": "b"}))]
    assert sharing.from_server(ok(for_a.id, {"who": "a"})) == [(a, ok(7, {"who": "a"}))]
    assert sharing.from_server(ok(for_a.id)) == []  # answered already: a second answer goes nowhere
    assert not sharing.busy


def test_progress_and_cancellation_stay_within_their_session() -> None:
    sharing = Sharing()
    a, b = opened(sharing)
    for_a = to_server(sharing.from_session(a, req(3, "tools/call", {"_meta": {"progressToken": "tok"}})))
    for_b = to_server(sharing.from_session(b, req(3, "tools/call", {"_meta": {"progressToken": "tok"}})))
    token_a = for_a.params["_meta"]["progressToken"]
    assert token_a != for_b.params["_meta"]["progressToken"]
    [(where, progress)] = sharing.from_server(note("notifications/progress", {"progressToken": token_a, "progress": 1}))
    assert where == a and progress.params["progressToken"] == "tok"
    cancel = to_server(sharing.from_session(b, note("notifications/cancelled", {"requestId": 3})))
    assert cancel.params["requestId"] == for_b.id
    assert sharing.from_session(b, note("notifications/cancelled", {"requestId": 99})) == []  # not its request


def test_a_server_request_goes_to_the_latest_caller_still_waiting_and_only_it_may_answer() -> None:
    sharing = Sharing()
    a, b = opened(sharing)
    for_a = to_server(sharing.from_session(a, req(1, "tools/call")))
    to_server(sharing.from_session(b, req(1, "tools/call")))
    assert sharing.from_server(req("q-1", "elicitation/create")) == [(b, req("q-1", "elicitation/create"))]
    assert sharing.from_session(a, ok("q-1")) == []  # a was not asked
    assert to_server(sharing.from_session(b, ok("q-1", {"action": "accept"}))).id == "q-1"
    sharing.from_server(ok(to_server(sharing.from_session(b, req(2, "ping"))).id))
    b_done = [call for call in sharing.calls.items() if call[1].lease == b]
    for server_id, _ in b_done:
        sharing.from_server(ok(server_id))
    assert sharing.from_server(req("q-2", "sampling/createMessage")) == [(a, req("q-2", "sampling/createMessage"))]
    assert sharing.from_server(note("notifications/cancelled", {"requestId": "q-2"})) == [
        (a, note("notifications/cancelled", {"requestId": "q-2"}))
    ]
    sharing.from_server(ok(for_a.id))
    # none waiting: the session that sent a request last
    assert sharing.from_server(req("q-3", "roots/list"))[0][0] == b


def test_a_server_request_with_no_session_left_is_refused() -> None:
    sharing = Sharing()
    a, b = opened(sharing)
    sharing.detach(a)
    sharing.detach(b)
    refusal = to_server(sharing.from_server(req("q-1", "roots/list")))
    assert refusal.id == "q-1" and "error" in refusal.message


def test_list_changes_reach_everyone_and_resource_updates_their_subscribers() -> None:
    sharing = Sharing()
    a, b = opened(sharing)
    changed = note("notifications/tools/list_changed")
    assert sharing.from_server(changed) == [(a, changed), (b, changed)]
    subscribe = to_server(sharing.from_session(a, req(5, "resources/subscribe", {"uri": "file:///x"})))
    sharing.from_server(ok(subscribe.id))
    assert sharing.from_session(b, req(5, "resources/subscribe", {"uri": "file:///x"})) == [(b, ok(5))]
    updated = note("notifications/resources/updated", {"uri": "file:///x"})
    assert sharing.from_server(updated) == [(a, updated), (b, updated)]
    assert sharing.from_session(a, req(6, "resources/unsubscribe", {"uri": "file:///x"})) == [(a, ok(6))]
    assert sharing.from_server(updated) == [(b, updated)]
    [gone] = sharing.detach(b)  # its last subscriber left: the server is told
    assert gone[1].method == "resources/unsubscribe" and gone[1].params == {"uri": "file:///x"}
    assert sharing.from_server(updated) == []


def test_a_session_leaving_cancels_its_calls_and_refuses_what_it_was_asked() -> None:
    sharing = Sharing()
    a, b = opened(sharing)
    for_a = to_server(sharing.from_session(a, req(1, "tools/call")))
    sharing.from_server(req("q-1", "elicitation/create"))
    out = sharing.detach(a)
    assert [(frame.method, frame.params.get("requestId")) for _, frame in out if frame.method] == [
        ("notifications/cancelled", for_a.id)
    ]
    [refusal] = [frame for _, frame in out if frame.is_answer]
    assert refusal.id == "q-1" and "error" in refusal.message
    assert sharing.from_server(ok(for_a.id)) == []
    assert sharing.from_session(a, req(2, "tools/call")) == []  # a lease that left sends nothing
    assert b in sharing.leases


def test_reopen_opens_a_new_process_once_and_keeps_its_answer_from_the_sessions() -> None:
    """After an idle stop, a new process is opened by the sharing itself: its ``initialize`` answer goes
    to no session, ``initialized`` follows it, and a session's ``initialize`` meanwhile waits for it."""
    sharing = Sharing()
    a = sharing.attach()
    sent = to_server(sharing.reopen({"protocolVersion": "2025-11-25"}))
    assert sent.method == "initialize" and sharing.reopen({}) == []  # once
    b = sharing.attach()
    assert sharing.from_session(b, req("i", "initialize", {})) == []
    call = to_server(sharing.from_session(a, req(9, "tools/call")))
    out = sharing.from_server(ok(sent.id, {"serverInfo": {"name": "s"}}))
    assert [(where, frame.id, frame.method) for where, frame in out] == [
        (b, "i", None),
        (SERVER, None, "notifications/initialized"),
    ]
    assert sharing.from_session(b, note("notifications/initialized")) == []
    assert sharing.from_server(ok(call.id)) == [(a, ok(9))]


def test_the_first_session_leaving_during_the_handshake_leaves_it_to_open_the_process_for_the_others() -> None:
    """The session whose ``initialize`` went to the server leaves before the answer (its client closed it
    while the server started): the handshake is not cancelled, and the sessions waiting on it get its
    answer, the server ``initialized`` once, and calls go on."""
    sharing = Sharing()
    a, b = sharing.attach(), sharing.attach()
    sent = to_server(sharing.from_session(a, req(1, "initialize", {"protocolVersion": "2025-11-25"})))
    assert sharing.from_session(b, req("i", "initialize", {})) == []
    assert sharing.detach(a) == []  # nothing cancelled at the server
    out = sharing.from_server(ok(sent.id, {"serverInfo": {"name": "s"}}))
    assert [(where, frame.id, frame.method) for where, frame in out] == [
        (b, "i", None),
        (SERVER, None, "notifications/initialized"),
    ]
    assert sharing.from_session(b, note("notifications/initialized")) == []
    c = sharing.attach()
    [(where, frame)] = sharing.from_session(c, req("x", "initialize", {}))
    assert where == c and frame.message["result"]["serverInfo"] == {"name": "s"}
    call = to_server(sharing.from_session(b, req(5, "tools/call", {"name": "t"})))
    assert sharing.from_server(ok(call.id)) == [(b, ok(5))]
