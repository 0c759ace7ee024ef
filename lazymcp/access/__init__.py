"""Who may come in, and what each principal may do.

``bearer`` checks one bearer token (or a file of named tokens); ``oauth`` asks an issuer about OAuth
tokens by introspection and ``claims`` reads its answer; ``auth`` picks one of them from the flags;
``policy`` is the principals, the configuration's access policy and what it grants each; ``ratelimit``
counts each principal's calls in token buckets; ``secrets`` is each principal's own values for its servers;
``answers`` reads an authorization server's answers no further than their bound.

May import: ``protocol``, ``local``. Not ``search``, its neighbour in the same layer.
"""
