"""What a client sees of a catalog: the listings, the meta-tools, and the one door of ``tools/*``.

``catalog`` is one version of a server's tools with every listing built once, and ``admission``
which tools it takes and the version they make; ``options`` the settings a server is served with;
``modes`` what each mode lists and lets a stock client call; ``metatools`` the meta-tools' table and
``metacalls`` what each does; ``arguments`` checks a call's arguments against its tool's schema;
``methods`` answers ``tools/list``, ``tools/describe``, ``tools/describe_batch``,
``tools/manifest`` and ``tools/call`` for every front end.

May import: ``protocol``, ``local``, ``tools``, ``search``. No I/O and no SDK.
"""
