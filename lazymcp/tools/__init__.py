"""One tool and what lazymcp derives from it, before any catalog is built.

``stubs`` are summaries and stub shapes; ``metadata`` a tool's category, summary and keywords, from the
server author, a file or the tool itself; ``digests`` a tool's canonical encoding, digest and size;
``packed`` tools held as JSON bytes; ``tokens`` cl100k_base counts of a listing; ``manifest`` a server's
last lists, kept so it need not be started; ``toolcache`` a client's described tools on disk;
``sample`` the built-in catalogs for demos, tests and benchmarks.

May import: ``protocol``, ``local``.
"""
