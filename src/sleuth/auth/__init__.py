"""Users, their project access and their bearer tokens for ``sleuth serve --http``."""
