"""What a tool's result is inside code mode's code (``lazymcp.run.sandbox.value_of``): structured content
as is, JSON text parsed, other text as text, images and resources as small objects, errors raised."""

from __future__ import annotations

import pytest

from lazymcp.run.sandbox import ToolError, value_of


def test_results_become_values_and_errors_raise() -> None:
    assert value_of({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": 1}}) == {"n": 1}
    assert value_of({"content": [{"type": "text", "text": '[1, "a"]'}]}) == [1, "a"]
    assert value_of({"content": [{"type": "text", "text": "plain words"}]}) == "plain words"
    image = {"type": "image", "data": "A" * 400, "mimeType": "image/png"}
    resource = {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}}
    assert value_of({"content": [image, resource]}) == [
        {"type": "image", "size": 300, "mimeType": "image/png"},
        {"type": "resource", "size": 5, "uri": "file:///a.txt"},
    ]
    with pytest.raises(ToolError, match="the disk is full"):
        value_of({"content": [{"type": "text", "text": "the disk is full"}], "isError": True})
    refused = "Invalid arguments for tool 'a' (1 problem):\n- at /x: bad\nThe tool was not called. Its inputSchema: {}"
    with pytest.raises(TypeError, match="at /x: bad") as raised:
        value_of({"content": [{"type": "text", "text": refused}], "isError": True})
    assert "inputSchema" not in str(raised.value)  # the signature is describe()'s to show
