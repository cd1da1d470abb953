"""``sleuth ui``: a local web page over one index (search, why a result ranked, documents, coverage).

:mod:`sleuth.ui.app` builds the starlette application (the page's files and its JSON API under
``/api/``), :mod:`sleuth.ui.guard` checks every request's ``Host`` and ``Origin`` (loopback only),
:mod:`sleuth.ui.secret` then its token (made per run, printed in the URL, kept in the tab, sent as a
bearer header on ``/api/`` calls),
:mod:`sleuth.ui.api` turns query parameters into Engine calls and answers into JSON, and
:mod:`sleuth.ui.locations` says where in a document a block is (heading path, PDF page). The page
itself is plain HTML, JS and CSS in ``static/`` (no build step, nothing fetched from elsewhere); where
the browser offers WebMCP it registers its search tool for in-browser agents (``static/webmcp.js``).
"""

#: The port ``sleuth ui`` listens on unless told.
UI_DEFAULT_PORT = 8765
