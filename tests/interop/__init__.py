"""Interop with other ecosystems: the TypeScript SDK client and the official conformance suite."""
