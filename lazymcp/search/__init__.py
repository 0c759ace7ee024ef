"""``search_tools``: ranking a catalog's tools for a request in words.

``index`` is the tool index a catalog builds on its first search and the choice of ranker; ``terms``
normalizes and tokenizes text; ``ranking`` is BM25F; ``serverrank`` scores the servers; ``fusion`` fuses
rankers' scores; ``steps`` splits a request of several steps; ``semantic`` and ``minilm`` are the optional
embedding rankers (the ``semantic`` extra), loaded only when installed, and ``encoders`` what they ask of a
model and the threads and turns its embeddings take.

May import: ``protocol``, ``local``, ``tools``. Not ``access``, its neighbour in the same layer.
"""
