"""One local broker per index, shared by every MCP session (``sleuth serve``) of that index.

The broker (:mod:`sleuth.broker.server`) holds the engine, the model and the lanes in memory and
serves each session over a Unix socket; ``sleuth serve`` is a thin byte pipe to it
(:mod:`sleuth.broker.client`). :mod:`sleuth.broker.paths` names the socket and lock files. This
package's ``__init__``, ``paths`` and ``client`` import only the standard library, so a session
starts fast.
"""
