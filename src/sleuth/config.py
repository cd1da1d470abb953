"""Settings, resolved as: built-in defaults < ``<index>/config.toml`` < ``SLEUTH_*`` env < flags."""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sleuth.embed import DEFAULT_MODEL, check_model_spec
from sleuth.errors import ConfigError, shown
from sleuth.fusion import FUSION_METHODS, RRF_K
from sleuth.ingest.limits import ARCHIVE_MAX_MEMBERS, ARCHIVE_MAX_MEMBERS_CEILING
from sleuth.ingest.tabular import TABULAR_JSON_MIN_BYTES, TABULAR_MODES
from sleuth.lanes import registry
from sleuth.lanes.registry import validate_lanes as validate_lanes  # re-exported: it lives with the lanes
from sleuth.locate import INDEX_DIR_NAME as INDEX_DIR_NAME  # re-exported: the index's location is in sleuth.locate
from sleuth.locate import INDEX_ENV as INDEX_ENV
from sleuth.locate import find_index_dir as find_index_dir
from sleuth.types import RANK_WINDOW_STEP_DOCS

#: The default fusion (:func:`sleuth.fusion.fuse`), chosen on SciFact, Cranfield, CISI and NPL:
#: z-scored lane scores (docs/EVAL.md).
DEFAULT_FUSION = "zscore"
#: Blocks every lane returns per document of the search's rank window (a multiple of
#: sleuth.types.RANK_WINDOW_STEP_DOCS): 200 for any search within the first 100 results. Chosen on
#: SciFact, Cranfield, CISI and NPL (docs/EVAL.md, "One rank window for every surface").
LANE_DEPTH_BLOCKS_PER_RESULT = 2


@dataclass(frozen=True)
class Config:
    """Ranking settings. ``lanes``: the lanes run by default (the registry's defaults:
    :mod:`sleuth.lanes.registry`); ``fusion``: ``zscore``, ``convex`` or ``rrf``
    (:func:`sleuth.fusion.fuse`); ``lane_weights`` the RRF weights (and ``rrf_k`` the RRF
    constant), ``score_weights`` those of the score-based fusions (zscore, convex)."""

    lanes: tuple[str, ...] = field(default_factory=registry.default_lanes)
    #: True when ``lanes`` was set by config.toml or $SLEUTH_LANES, even to the registry's defaults
    #: (lanes that are the registry's defaults and not set so, a tool may narrow: sleuth.memory.search).
    lanes_set: bool = False
    lane_weights: dict[str, float] = field(default_factory=registry.lane_weights)
    rrf_k: int = RRF_K
    fusion: str = DEFAULT_FUSION
    score_weights: dict[str, float] = field(default_factory=registry.score_weights)
    #: The step a rank window grows by, in documents (sleuth.pipeline.plan.rank_window).
    rank_window_step_docs: int = RANK_WINDOW_STEP_DOCS
    lane_depth_blocks_per_result: int = LANE_DEPTH_BLOCKS_PER_RESULT
    model: str = DEFAULT_MODEL
    #: True: the int8 model; False: float32; None ("auto", the default): int8 where the CPU has exact
    #: int8 dot-product instructions (sleuth.cpu_features), float32 elsewhere.
    model_int8: bool | None = None
    #: Tabular data files (CSV, TSV, JSON of ``tabular_json_min_bytes`` or more): ``"skip"`` (reported as
    #: skipped, the default) or ``"index"``; see sleuth.ingest.tabular for why.
    tabular: str = "skip"
    tabular_json_min_bytes: int = TABULAR_JSON_MIN_BYTES
    #: Members read from one archive (sleuth.ingest.archive): 1 to ``ARCHIVE_MAX_MEMBERS_CEILING``.
    archive_max_members: int = ARCHIVE_MAX_MEMBERS
    #: Milvus for the lanes bm25, tfidf, index and vector (docs/SCALE.md): a local ``.db`` path
    #: (milvus-lite; relative to the index folder) or ``http://host:19530``; None: the local lanes.
    milvus_uri: str | None = None
    milvus_collection: str = "sleuth"
    milvus_dense_index: str = "FLAT"
    milvus_consistency: str = "Strong"
    milvus_partitions: int | None = None
    #: Blocks a Milvus sync reads, analyses and sends at a time (None: ``MILVUS_SYNC_PART_BLOCKS``
    #: of sleuth.store.milvus_sync); a sync's memory is about two parts.
    milvus_sync_part_blocks: int | None = None
    #: Settings given that the configured fusion does not read, each said in words (``sleuth status``):
    #: ``[score_weights]`` under ``fusion = "rrf"``, ``[lane_weights]`` under a score-based fusion.
    unused: tuple[str, ...] = ()

    def fusion_weights(self) -> dict[str, float]:
        """The lane weights of the configured fusion."""
        return self.lane_weights if self.fusion == "rrf" else self.score_weights

    def with_lanes(self, lanes: list[str] | tuple[str, ...] | None) -> Config:
        """A copy running only ``lanes`` (validated)."""
        if lanes is None:
            return self
        return replace(self, lanes=validate_lanes(lanes))


#: Largest ``config.toml`` read, in bytes (a settings file is a few hundred bytes).
CONFIG_MAX_BYTES = 1024 * 1024


def read_config_file(index_dir: Path | None) -> dict[str, object]:
    """The keys of ``<index_dir>/config.toml`` (empty when there is no such file).

    Raises ConfigError when the file cannot be read, is not a regular file (a FIFO, a device, a
    folder: refused, never read), is larger than :data:`CONFIG_MAX_BYTES`, is not valid TOML, or
    nests arrays or tables too deeply for the parser (an index folder can come with a cloned
    repository: its settings file is checked like any input).
    """
    if index_dir is None:
        return {}
    path = index_dir / "config.toml"
    try:
        if not os.path.lexists(path):
            return {}
        if not path.is_file():
            raise ConfigError(f"cannot read {path}: not a regular file")
        with open(path, "rb") as handle:
            data = handle.read(CONFIG_MAX_BYTES + 1)
        if len(data) > CONFIG_MAX_BYTES:
            raise ConfigError(f"cannot read {path}: larger than {CONFIG_MAX_BYTES:,} bytes")
        values = tomllib.loads(data.decode("utf-8"))
    except RecursionError:
        raise ConfigError(f"cannot read {path}: arrays or tables nested too deeply") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    check_config_keys(values, path)
    return values


#: The keys ``config.toml`` may hold (:func:`load_config`, :func:`load_serve_settings`,
#: :func:`load_default_project`); any other key is refused (:func:`check_config_keys`).
CONFIG_KEYS = ("lanes", "fusion", "rrf_k", "score_weights", "lane_weights", "model", "model_int8", "tabular",
               "tabular_json_min_bytes", "archive_max_members", "milvus_uri", "milvus_collection",
               "milvus_dense_index", "milvus_consistency", "milvus_partitions", "milvus_sync_part_blocks",
               "tools", "guides", "default_project")
#: The tables of ``config.toml`` whose keys are lane names (:func:`sleuth.lanes.registry.lane_names`).
CONFIG_LANE_TABLES = ("score_weights", "lane_weights")


#: Unknown keys of a config file named in its error (the rest are counted): a file of thousands of
#: stray keys gets a message of a few lines.
CONFIG_UNKNOWN_KEYS_SHOWN = 10


def check_config_keys(values: Mapping[str, object], path: Path | str) -> None:
    """Refuse a key of ``config.toml`` (read from ``path``) that no setting reads: a misspelt key
    (``lanse = ["bm25"]``) was silently ignored, and every search ran with the defaults. Top-level
    keys are checked against :data:`CONFIG_KEYS`; the keys of the tables :data:`CONFIG_LANE_TABLES`
    against the lane names (ignoring case, as ``lanes`` does), shown dotted (``score_weights.bmm25``).
    A table's value of another type is left for its setting to refuse.

    Raises:
        ConfigError: one unknown key with a close known one: ``unknown key `lanse` in PATH: did you
            mean `lanes`?``; otherwise ``unknown key(s) in PATH: `a` (did you mean `b`?), `c``
            followed by the known keys (``; known keys: ...``, ``; lane names: ...``) of every key
            without a close one. Close: a difflib ratio of at least 0.6, ignoring case. At most
            ``CONFIG_UNKNOWN_KEYS_SHOWN`` keys are named, then ``and N more``.
    """
    unknown: list[tuple[str, object, tuple[str, ...], str]] = []  # (prefix, key, known names, the known list)
    known_keys = "known keys: " + ", ".join(CONFIG_KEYS)
    unknown += [("", key, CONFIG_KEYS, known_keys) for key in values if key not in CONFIG_KEYS]
    lanes = registry.lane_names()
    folded = {lane.casefold() for lane in lanes}
    for table in CONFIG_LANE_TABLES:
        entries = values.get(table)
        if isinstance(entries, dict):
            unknown += [(f"{table}.", key, lanes, "lane names: " + ", ".join(lanes)) for key in entries
                        if str(key).strip().casefold() not in folded]
    if not unknown:
        return
    misplaced = [f"{prefix}{key}" for prefix, key, _, _ in unknown if prefix and str(key) in CONFIG_KEYS]
    if misplaced:  # TOML reads every key below a [table] line as that table's
        first = misplaced[0]
        raise ConfigError(f"unknown key `{first}` in {path}: `{first.split('.', 1)[1]}` is a top-level setting,"
                          f" read here as part of [{first.split('.', 1)[0]}] because it comes after that table's"
                          " line: move it above the first [table] line")
    # (dotted key, closest known dotted key, the known list), for the keys named in the message only
    problems: list[tuple[str, str | None, str]] = []
    for prefix, key, names, known_list in unknown[:CONFIG_UNKNOWN_KEYS_SHOWN]:
        near = _closest(str(key).strip(), names)
        problems.append((prefix + _shown_key(key), near and prefix + near, known_list))
    if len(unknown) == 1 and problems[0][1] is not None:
        raise ConfigError(f"unknown key `{problems[0][0]}` in {path}: did you mean `{problems[0][1]}`?")
    listed = ", ".join(f"`{key}`" + (f" (did you mean `{near}`?)" if near else "") for key, near, _ in problems)
    if len(unknown) > len(problems):
        listed += f" and {len(unknown) - len(problems):,} more"
    known = dict.fromkeys(known for _, near, known in problems if near is None)
    raise ConfigError(f"unknown key{'s' if len(unknown) > 1 else ''} in {path}: {listed}"
                      + "".join(f"; {k}" for k in known))


def _shown_repr(value: object) -> str:
    """A value of the file as shown in a message: its ``repr``, escaped and cut as :func:`shown` does."""
    return shown(repr(value))


def _shown_key(key: object) -> str:
    """A key of the file as shown in a message (non-printable characters escaped, cut at 60)."""
    return shown(str(key))


def _closest(key: object, known: tuple[str, ...]) -> str | None:
    """The known key closest to ``key`` (ignoring case), or None when none is close."""
    by_folded = {name.casefold(): name for name in known}
    near = difflib.get_close_matches(str(key).casefold(), list(by_folded), n=1, cutoff=0.6)
    return by_folded[near[0]] if near else None


@dataclass(frozen=True)
class ServeSettings:
    """``sleuth serve`` settings from the config file and environment (flags override them).

    ``tools``: tool profile names, or None for the server's default. ``guides``: the guides.json
    of the ``guides`` profile, or None.
    """

    tools: tuple[str, ...] | None = None
    guides: Path | None = None


def load_serve_settings(index_dir: Path | None, env: Mapping[str, str] | None = None) -> ServeSettings:
    """``tools`` and ``guides`` from ``<index_dir>/config.toml``, overridden by ``SLEUTH_TOOLS`` / ``SLEUTH_GUIDES``
    of ``env`` (default: this process's environment; a broker passes the session's).

    config.toml: ``tools = ["project", "guides"]`` (or ``"project,guides"``) and
    ``guides = "guides.json"`` (a relative path is relative to the index folder; in
    ``SLEUTH_GUIDES`` to the current folder). Profile names are checked by the server.
    Raises ConfigError on an unreadable file or values of the wrong type.
    """
    env = os.environ if env is None else env
    values = read_config_file(index_dir)
    tools: object = env.get("SLEUTH_TOOLS") or values.get("tools")
    if isinstance(tools, str):
        tools = tools.split(",")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        raise ConfigError(f"tools must be a list of tool profile names, got {_shown_repr(tools)}")
    guides: Path | None = None
    if env.get("SLEUTH_GUIDES"):
        guides = Path(env["SLEUTH_GUIDES"]).expanduser()
    elif "guides" in values:
        if not isinstance(values["guides"], str) or not values["guides"].strip():
            raise ConfigError(f"guides must be the path of a guides.json file, got {_shown_repr(values['guides'])}")
        guides = Path(values["guides"]).expanduser()
        if index_dir is not None and not guides.is_absolute():
            guides = index_dir / guides
    return ServeSettings(tools=None if tools is None else tuple(tools), guides=guides)


def load_default_project(index_dir: Path | None, env: Mapping[str, str] | None = None) -> str | None:
    """The project tools search when a call names none: ``SLEUTH_DEFAULT_PROJECT`` of ``env``
    (default: this process's environment), else ``default_project = "id"`` of
    ``<index_dir>/config.toml``; None when neither is set.

    Raises ConfigError on an unreadable file or a value that is not a non-empty string.
    """
    env = os.environ if env is None else env
    value: object = env.get("SLEUTH_DEFAULT_PROJECT") or read_config_file(index_dir).get("default_project")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"default_project must be a project id, got {_shown_repr(value)}")
    return value.strip()


def load_config(index_dir: Path | None) -> Config:
    """Defaults, overlaid with ``<index_dir>/config.toml`` and ``SLEUTH_LANES``/``SLEUTH_RRF_K``/``SLEUTH_MODEL``.

    config.toml keys: ``lanes = [..]``, ``fusion = "zscore"`` (or ``"convex"``, ``"rrf"``),
    ``rrf_k = 60``, ``model = "all-MiniLM-L6-v2"`` (or a folder, or ``"none"``),
    ``model_int8 = "auto"`` (or true / false), ``[lane_weights] bm25 = 1.2 ...`` (RRF),
    ``[score_weights] bm25 = 0.48 ...`` (zscore, convex), ``tabular = "skip"`` (or ``"index"``),
    ``tabular_json_min_bytes = 262144`` (see sleuth.ingest.tabular) and ``archive_max_members =
    10000`` (also ``SLEUTH_ARCHIVE_MAX_MEMBERS``; at most ``ARCHIVE_MAX_MEMBERS_CEILING``).
    Raises ConfigError on an unreadable file or bad values (a bad value's message ends with where
    the settings came from: the file, the ``SLEUTH_*`` variables set).
    """
    values = read_config_file(index_dir)
    sources = [str(index_dir / "config.toml")] if values and index_dir is not None else []
    _refuse_network_uri_from_file(values, index_dir)
    _refuse_collection_from_file(values, index_dir)
    for env, key in (("SLEUTH_LANES", "lanes"), ("SLEUTH_RRF_K", "rrf_k"), ("SLEUTH_MODEL", "model"),
                     ("SLEUTH_ARCHIVE_MAX_MEMBERS", "archive_max_members")):
        if env in os.environ:
            values[key] = os.environ[env].split(",") if key == "lanes" else os.environ[env]
            sources.append(f"${env}")
    for env, key in (("SLEUTH_MILVUS_URI", "milvus_uri"), ("SLEUTH_MILVUS_COLLECTION", "milvus_collection")):
        if os.environ.get(env, "").strip():
            values[key] = os.environ[env].strip()
            sources.append(f"${env}")
    try:
        cfg = _milvus_settings(_tabular_settings(_model_settings(Config(), values), values), values, index_dir)
        try:
            cfg = _fusion_settings(cfg, values)
            for key in ("lane_weights", "score_weights"):
                if key in values:
                    cfg = replace(cfg, **{key: _weights(key, dict(getattr(cfg, key)), values[key])})
            cfg = replace(cfg, unused=unused_weights(cfg.fusion, values))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"bad configuration value: {exc}") from exc
    except ConfigError as exc:
        # a user who passed no flag needs to know which file or variable to fix
        raise ConfigError(f"{exc} (settings from {' and '.join(sources)})" if sources else str(exc)) from exc
    return cfg


def _refuse_network_uri_from_file(values: dict[str, Any], index_dir: Path | None) -> None:
    """Refuse a ``milvus_uri`` of ``<index>/config.toml`` that names a server (``scheme://``) unless
    ``$SLEUTH_MILVUS_URI`` is set (which then overrides it): an index folder can come with a cloned
    repository or an unpacked archive, and its config must not send the text indexed there to a host
    of its choosing. A network Milvus is thus named by the environment, as the PostgreSQL catalog
    is (``$SLEUTH_CATALOG_URL``); a milvus-lite path in the file is used as before.

    Raises:
        ConfigError: a network URI in the file and no ``$SLEUTH_MILVUS_URI``.
    """
    uri = values.get("milvus_uri")
    if not isinstance(uri, str) or "://" not in uri or os.environ.get("SLEUTH_MILVUS_URI", "").strip():
        return
    from sleuth.store.urls import redact_url

    where = index_dir / "config.toml" if index_dir is not None else "config.toml"
    raise ConfigError(f"milvus_uri in {where} names a server ({redact_url(uri.strip())}): a network Milvus is"
                      " taken only from $SLEUTH_MILVUS_URI, so that an index folder that came with a"
                      " repository or an archive cannot send what is indexed to a host of its choosing;"
                      " set SLEUTH_MILVUS_URI to that URI to use it (a local milvus-lite .db path may stay"
                      " in the file)")


def _refuse_collection_from_file(values: dict[str, Any], index_dir: Path | None) -> None:
    """Refuse a ``milvus_collection`` of ``<index>/config.toml`` when the Milvus is the
    environment's (``$SLEUTH_MILVUS_URI`` set), unless ``$SLEUTH_MILVUS_COLLECTION`` is set too
    (which then overrides it): an index folder that came with a cloned repository or an archive
    could otherwise name another index's collections on that shared Milvus, and each index's sync
    would then rebuild them over the other's, by turns. The file's name is used with the file's own
    milvus-lite database (``milvus_uri`` in the file, no variable), which no other index shares.

    Raises:
        ConfigError: ``milvus_collection`` in the file, ``$SLEUTH_MILVUS_URI`` set and no
            ``$SLEUTH_MILVUS_COLLECTION``.
    """
    if ("milvus_collection" not in values or not os.environ.get("SLEUTH_MILVUS_URI", "").strip()
            or os.environ.get("SLEUTH_MILVUS_COLLECTION", "").strip()):
        return
    where = index_dir / "config.toml" if index_dir is not None else "config.toml"
    raise ConfigError(f"milvus_collection in {where} names collections on the Milvus of $SLEUTH_MILVUS_URI:"
                      " there the collection name is taken only from $SLEUTH_MILVUS_COLLECTION, so that an index"
                      " folder that came with a repository or an archive cannot name (and rebuild) another"
                      " index's collections; set SLEUTH_MILVUS_COLLECTION to a name of this index's own, or"
                      " remove milvus_collection from the file (default collections: sleuth_lex, sleuth_dense)")


def _model_settings(cfg: Config, values: dict[str, Any]) -> Config:
    """``model`` and ``model_int8`` of ``values`` applied to ``cfg``. Raises ConfigError."""
    if "model" in values:
        cfg = replace(cfg, model=check_model_spec(values["model"]))
    if "model_int8" in values:
        raw_int8 = values["model_int8"]
        if raw_int8 != "auto" and not isinstance(raw_int8, bool):
            raise ConfigError(f"model_int8 must be true, false or \"auto\", got {_shown_repr(raw_int8)}")
        cfg = replace(cfg, model_int8=None if raw_int8 == "auto" else raw_int8)
    return cfg


def _tabular_settings(cfg: Config, values: dict[str, Any]) -> Config:
    """``tabular``, ``tabular_json_min_bytes`` and ``archive_max_members`` of ``values`` applied to
    ``cfg``. Raises ConfigError."""
    if "tabular" in values:
        if values["tabular"] not in TABULAR_MODES:
            raise ConfigError(f"tabular must be one of {', '.join(TABULAR_MODES)},"
                              f" got {_shown_repr(values['tabular'])}")
        cfg = replace(cfg, tabular=str(values["tabular"]))
    if "tabular_json_min_bytes" in values:
        raw_min = values["tabular_json_min_bytes"]
        if not isinstance(raw_min, int) or isinstance(raw_min, bool) or raw_min < 0:
            raise ConfigError(f"tabular_json_min_bytes must be a number of bytes >= 0, got {_shown_repr(raw_min)}")
        cfg = replace(cfg, tabular_json_min_bytes=raw_min)
    if "archive_max_members" in values:
        raw_members = values["archive_max_members"]
        try:
            members = int(str(raw_members).strip()) if not isinstance(raw_members, bool | float) else 0
        except ValueError:
            members = 0
        if not 1 <= members <= ARCHIVE_MAX_MEMBERS_CEILING:
            raise ConfigError(f"archive_max_members must be a whole number of members from 1 to"
                              f" {ARCHIVE_MAX_MEMBERS_CEILING:,}, got {_shown_repr(raw_members)}")
        cfg = replace(cfg, archive_max_members=members)
    return cfg


def unused_weights(fusion: str, values: Mapping[str, object]) -> tuple[str, ...]:
    """The weight table of ``values`` (config.toml's keys) that ``fusion`` does not read, in words:
    RRF reads ``[lane_weights]``, the score-based fusions ``[score_weights]`` (a table of the other
    is kept, not refused: a config may hold both and switch ``fusion``)."""
    used, other = ("lane_weights", "score_weights") if fusion == "rrf" else ("score_weights", "lane_weights")
    if other not in values:
        return ()
    return (f"[{other}] is not used: fusion = {fusion!r} weighs the lanes by [{used}]",)


def _fusion_settings(cfg: Config, values: dict[str, Any]) -> Config:
    """``lanes``, ``rrf_k`` and ``fusion`` of ``values`` applied to ``cfg``. Raises ConfigError."""
    if "lanes" in values:
        lanes = values["lanes"]
        if not isinstance(lanes, str | list):
            raise ConfigError(f"lanes must be a list of lane names, got {_shown_repr(lanes)}")
        cfg = replace(cfg.with_lanes(lanes.split(",") if isinstance(lanes, str) else list(lanes)), lanes_set=True)
    if "rrf_k" in values:
        raw = values["rrf_k"]
        try:
            k = int(str(raw).strip())
        except ValueError:
            k = 0
        if k <= 0 or isinstance(raw, float | bool):
            raise ConfigError(f"rrf_k must be a positive integer, got {_shown_repr(raw)}")
        cfg = replace(cfg, rrf_k=k)
    if "fusion" in values:
        if values["fusion"] not in FUSION_METHODS:
            raise ConfigError(f"fusion must be one of {', '.join(FUSION_METHODS)}, got {_shown_repr(values['fusion'])}")
        cfg = replace(cfg, fusion=str(values["fusion"]))
    return cfg


#: Largest weight a lane may be given in ``[score_weights]`` / ``[lane_weights]`` (0 drops a lane):
#: far above any weight that changes a ranking, and far below what would overflow a fused score.
LANE_WEIGHT_MAX = 1_000_000.0


def _weights(key: str, weights: dict[str, float], raw_weights: object) -> dict[str, float]:
    """``weights`` overlaid with the table ``raw_weights`` (config key ``key``). Raises ConfigError."""
    if not isinstance(raw_weights, dict):
        raise ConfigError(f"{key} must be a table of lane = weight, got {_shown_repr(raw_weights)}")
    for raw_lane, w in raw_weights.items():
        (lane,) = validate_lanes([str(raw_lane)])  # the registered name: ``BM25 = 2`` weighs bm25
        try:
            weight = float(w)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}.{lane} must be a number, got {_shown_repr(w)}") from None
        # nan, inf or a huge weight made every fused score nan or inf (and the JSON output invalid)
        if isinstance(w, bool) or not 0.0 <= weight <= LANE_WEIGHT_MAX:
            raise ConfigError(f"{key}.{lane} must be a number from 0 to {LANE_WEIGHT_MAX:,.0f}, got {_shown_repr(w)}")
        weights[lane] = weight
    return weights


def _milvus_settings(cfg: Config, values: dict[str, object], index_dir: Path | None) -> Config:
    """``cfg`` with the ``milvus_*`` settings of ``values`` (checked for type; what a backend
    supports is checked when it is reached: :func:`sleuth.store.milvus.check_capabilities`)."""
    changes: dict[str, object] = {}
    for key in ("milvus_uri", "milvus_collection", "milvus_dense_index", "milvus_consistency"):
        if key in values:
            raw = values[key]
            if not isinstance(raw, str) or not raw.strip():
                raise ConfigError(f"{key} must be a non-empty string, got {_shown_repr(raw)}")
            changes[key] = raw.strip()
    uri = changes.get("milvus_uri")
    if isinstance(uri, str) and "://" not in uri and index_dir is not None:
        changes["milvus_uri"] = str((index_dir / Path(uri).expanduser()).resolve())
    if "milvus_partitions" in values:
        raw = values["milvus_partitions"]
        if not isinstance(raw, int) or isinstance(raw, bool) or not 1 <= raw <= 4096:
            raise ConfigError(f"milvus_partitions must be an integer from 1 to 4096, got {_shown_repr(raw)}")
        changes["milvus_partitions"] = raw
    if "milvus_sync_part_blocks" in values:
        raw = values["milvus_sync_part_blocks"]
        if not isinstance(raw, int) or isinstance(raw, bool) or not 1 <= raw <= 1_000_000:
            raise ConfigError(f"milvus_sync_part_blocks must be an integer from 1 to 1000000, got {_shown_repr(raw)}")
        changes["milvus_sync_part_blocks"] = raw
    return replace(cfg, **changes) if changes else cfg  # type: ignore[arg-type]
