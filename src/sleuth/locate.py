"""Where the index is: ``--index``, else ``$SLEUTH_INDEX``, else the nearest ``.sleuth/`` upwards.

Standard library only, so the thin ``sleuth serve`` (which hands the session to a broker) can find
the index without importing the engine.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Name of the index folder created in the first root and looked for in parent folders.
INDEX_DIR_NAME = ".sleuth"
#: Environment variable naming the index folder.
INDEX_ENV = "SLEUTH_INDEX"
#: The catalog file whose presence makes a folder an index.
CATALOG_FILE = "catalog.sqlite3"


def find_index_dir(explicit: str | Path | None, start: Path | None = None) -> Path | None:
    """The index folder: ``explicit``, else ``$SLEUTH_INDEX``, else the nearest ``.sleuth/`` found
    in ``start`` (default: the current folder) or its parents, as git finds ``.git``."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    if os.environ.get(INDEX_ENV):
        return Path(os.environ[INDEX_ENV]).expanduser().resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / INDEX_DIR_NAME / CATALOG_FILE).is_file():
            return folder / INDEX_DIR_NAME
    return None
