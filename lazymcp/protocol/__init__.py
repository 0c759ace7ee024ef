"""The wire: what lazymcp says and hears, in both protocol eras, with no I/O.

``jsonrpc`` is a frame (decoded once, encoded once) and the wire errors; ``messages`` the extension's names
and the shapes of tools, stubs and settings; ``errors`` the exceptions handlers raise and their error codes;
``limits`` every bound on what is read, held and waited for; ``paging`` the cursors; ``bridge`` the two eras
(2025-11-25 sessions and 2026-07-28 requests); ``names`` the "did you mean" of every unknown name.

May import: the standard library and orjson only. Every other room builds on this one.
"""
