"""What lazymcp meets of the machine it runs on.

``files`` reads the JSON files a user hands it and keeps its own cache directory (bounded reads, private
writes, no links followed); ``environment`` is what a server's process is given of lazymcp's environment
and the names of lazymcp's own variables; ``addresses`` is the loopback rule and where HTTP fronts listen.

May import: ``protocol``.
"""
