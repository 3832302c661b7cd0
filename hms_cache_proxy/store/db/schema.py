"""Every table of Hive 4.0.0's metastore schema, as SQLAlchemy Core tables.

The database is shared with stock Java metastores and Hive's own tools, so names, column order,
types, nullability, defaults, keys, constraint and index names follow Hive's PostgreSQL script
(``hive-schema-4.0.0.postgres.sql``) exactly; ``tests/unit/test_schema_facts.py`` holds this
module to the facts taken from that script. Tables are in the script's order.

Identifiers are Hive's upper-case names, which SQLAlchemy quotes by itself, so queries read
``s.TBLS.c.TBL_ID``. The same metadata also creates a SQLite database (the embedded default):

- Hive's two serial columns (``TXNS.TXN_ID``, ``MASTER_KEYS.KEY_ID``) are the only
  autoincrementing columns. On PostgreSQL they become ``bigserial``/``serial`` with Hive's
  sequence names (``"TXNS_TXN_ID_seq"``); SQLite only autoincrements ``INTEGER PRIMARY KEY``,
  so they use an INTEGER variant there with AUTOINCREMENT (ids are never reused, as with a
  sequence). Every other integer key has ``autoincrement=False``: ids come from SEQUENCE_TABLE.
- ``DEFAULT NULL`` is written as plain ``NULL``; PostgreSQL records it as
  ``NULL::character varying`` on varchar columns, as the script's spelling does.
- The one foreign-key cycle (WM_RESOURCEPLAN <-> WM_POOL) is added after both tables exist
  (``use_alter``), as the script does; SQLite, which cannot ALTER constraints, gets it inline.
"""

from __future__ import annotations

from sqlalchemy import (
    CHAR,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Double,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData()

# Hive's bigserial: BIGSERIAL on PostgreSQL, INTEGER PRIMARY KEY AUTOINCREMENT on SQLite.
BIGSERIAL = BigInteger().with_variant(Integer(), "sqlite")

# The script's DEFAULT NULL (PostgreSQL shows it as NULL::character varying on varchar columns).
_NULL = text("NULL")


# -- Catalogs, databases, tables, partitions, storage descriptors and privileges -----------------

BUCKETING_COLS = Table(
    "BUCKETING_COLS",
    metadata,
    Column("SD_ID", BigInteger, nullable=False),
    Column("BUCKET_COL_NAME", String(256), server_default=_NULL),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX", name="BUCKETING_COLS_pkey"),
    ForeignKeyConstraint(
        ["SD_ID"], ["SDS.SD_ID"], name="BUCKETING_COLS_SD_ID_fkey", deferrable=True
    ),
    Index("BUCKETING_COLS_N49", "SD_ID"),
)

CDS = Table(
    "CDS",
    metadata,
    Column("CD_ID", BigInteger, nullable=False, autoincrement=False),
    PrimaryKeyConstraint("CD_ID", name="CDS_pkey"),
)

COLUMNS_V2 = Table(
    "COLUMNS_V2",
    metadata,
    Column("CD_ID", BigInteger, nullable=False),
    Column("COMMENT", String(4000)),
    Column("COLUMN_NAME", String(767), nullable=False),
    Column("TYPE_NAME", Text),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("CD_ID", "COLUMN_NAME", name="COLUMNS_V2_pkey"),
    ForeignKeyConstraint(["CD_ID"], ["CDS.CD_ID"], name="COLUMNS_V2_CD_ID_fkey", deferrable=True),
)

DATABASE_PARAMS = Table(
    "DATABASE_PARAMS",
    metadata,
    Column("DB_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(180), nullable=False),
    Column("PARAM_VALUE", String(4000), server_default=_NULL),
    PrimaryKeyConstraint("DB_ID", "PARAM_KEY", name="DATABASE_PARAMS_pkey"),
    ForeignKeyConstraint(
        ["DB_ID"], ["DBS.DB_ID"], name="DATABASE_PARAMS_DB_ID_fkey", deferrable=True
    ),
    Index("DATABASE_PARAMS_N49", "DB_ID"),
)

CTLGS = Table(
    "CTLGS",
    metadata,
    Column("CTLG_ID", BigInteger, nullable=False, autoincrement=False),
    Column("NAME", String(256)),
    Column("DESC", String(4000)),
    Column("LOCATION_URI", String(4000), nullable=False),
    Column("CREATE_TIME", BigInteger),
    PrimaryKeyConstraint("CTLG_ID", name="CTLGS_pkey"),
    UniqueConstraint("NAME", name="CTLGS_NAME_key"),
)

DBS = Table(
    "DBS",
    metadata,
    Column("DB_ID", BigInteger, nullable=False, autoincrement=False),
    Column("DESC", String(4000), server_default=_NULL),
    Column("DB_LOCATION_URI", String(4000), nullable=False),
    Column("NAME", String(128), server_default=_NULL),
    Column("OWNER_NAME", String(128), server_default=_NULL),
    Column("OWNER_TYPE", String(10), server_default=_NULL),
    Column("CTLG_NAME", String(256), nullable=False, server_default="hive"),
    Column("CREATE_TIME", BigInteger),
    Column("DB_MANAGED_LOCATION_URI", String(4000)),
    Column("TYPE", String(32), nullable=False, server_default="NATIVE"),
    Column("DATACONNECTOR_NAME", String(128)),
    Column("REMOTE_DBNAME", String(128)),
    PrimaryKeyConstraint("DB_ID", name="DBS_pkey"),
    UniqueConstraint("NAME", "CTLG_NAME", name="UNIQUE_DATABASE"),
    ForeignKeyConstraint(["CTLG_NAME"], ["CTLGS.NAME"], name="DBS_FK1"),
)

DB_PRIVS = Table(
    "DB_PRIVS",
    metadata,
    Column("DB_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("DB_ID", BigInteger),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("DB_PRIV", String(128), server_default=_NULL),
    Column("AUTHORIZER", String(128), server_default=_NULL),
    PrimaryKeyConstraint("DB_GRANT_ID", name="DB_PRIVS_pkey"),
    UniqueConstraint(
        "AUTHORIZER",
        "DB_ID",
        "PRINCIPAL_NAME",
        "PRINCIPAL_TYPE",
        "DB_PRIV",
        "GRANTOR",
        "GRANTOR_TYPE",
        name="DBPRIVILEGEINDEX",
    ),
    ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name="DB_PRIVS_DB_ID_fkey", deferrable=True),
    Index("DB_PRIVS_N49", "DB_ID"),
)

DC_PRIVS = Table(
    "DC_PRIVS",
    metadata,
    Column("DC_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("NAME", String(128)),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("DC_PRIV", String(128), server_default=_NULL),
    Column("AUTHORIZER", String(128), server_default=_NULL),
    PrimaryKeyConstraint("DC_GRANT_ID", name="DC_PRIVS_pkey"),
    UniqueConstraint(
        "AUTHORIZER",
        "NAME",
        "PRINCIPAL_NAME",
        "PRINCIPAL_TYPE",
        "DC_PRIV",
        "GRANTOR",
        "GRANTOR_TYPE",
        name="DCPRIVILEGEINDEX",
    ),
    ForeignKeyConstraint(
        ["NAME"], ["DATACONNECTORS.NAME"], name="DC_PRIVS_DC_ID_fkey", deferrable=True
    ),
    Index("DC_PRIVS_N49", "NAME"),
)

GLOBAL_PRIVS = Table(
    "GLOBAL_PRIVS",
    metadata,
    Column("USER_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("USER_PRIV", String(128), server_default=_NULL),
    Column("AUTHORIZER", String(128), server_default=_NULL),
    PrimaryKeyConstraint("USER_GRANT_ID", name="GLOBAL_PRIVS_pkey"),
    UniqueConstraint(
        "AUTHORIZER",
        "PRINCIPAL_NAME",
        "PRINCIPAL_TYPE",
        "USER_PRIV",
        "GRANTOR",
        "GRANTOR_TYPE",
        name="GLOBALPRIVILEGEINDEX",
    ),
)

IDXS = Table(
    "IDXS",
    metadata,
    Column("INDEX_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("DEFERRED_REBUILD", Boolean(create_constraint=False), nullable=False),
    Column("INDEX_HANDLER_CLASS", String(4000), server_default=_NULL),
    Column("INDEX_NAME", String(128), server_default=_NULL),
    Column("INDEX_TBL_ID", BigInteger),
    Column("LAST_ACCESS_TIME", BigInteger, nullable=False),
    Column("ORIG_TBL_ID", BigInteger),
    Column("SD_ID", BigInteger),
    PrimaryKeyConstraint("INDEX_ID", name="IDXS_pkey"),
    UniqueConstraint("INDEX_NAME", "ORIG_TBL_ID", name="UNIQUEINDEX"),
    ForeignKeyConstraint(
        ["INDEX_TBL_ID"], ["TBLS.TBL_ID"], name="IDXS_INDEX_TBL_ID_fkey", deferrable=True
    ),
    ForeignKeyConstraint(
        ["ORIG_TBL_ID"], ["TBLS.TBL_ID"], name="IDXS_ORIG_TBL_ID_fkey", deferrable=True
    ),
    ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name="IDXS_SD_ID_fkey", deferrable=True),
    Index("IDXS_N49", "ORIG_TBL_ID"),
    Index("IDXS_N50", "INDEX_TBL_ID"),
    Index("IDXS_N51", "SD_ID"),
)

INDEX_PARAMS = Table(
    "INDEX_PARAMS",
    metadata,
    Column("INDEX_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", String(4000), server_default=_NULL),
    PrimaryKeyConstraint("INDEX_ID", "PARAM_KEY", name="INDEX_PARAMS_pkey"),
    ForeignKeyConstraint(
        ["INDEX_ID"], ["IDXS.INDEX_ID"], name="INDEX_PARAMS_INDEX_ID_fkey", deferrable=True
    ),
    Index("INDEX_PARAMS_N49", "INDEX_ID"),
)

NUCLEUS_TABLES = Table(
    "NUCLEUS_TABLES",
    metadata,
    Column("CLASS_NAME", String(128), nullable=False),
    Column("TABLE_NAME", String(128), nullable=False),
    Column("TYPE", String(4), nullable=False),
    Column("OWNER", String(2), nullable=False),
    Column("VERSION", String(20), nullable=False),
    Column("INTERFACE_NAME", String(255), server_default=_NULL),
    PrimaryKeyConstraint("CLASS_NAME", name="NUCLEUS_TABLES_pkey"),
)

PARTITIONS = Table(
    "PARTITIONS",
    metadata,
    Column("PART_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("LAST_ACCESS_TIME", BigInteger, nullable=False),
    Column("PART_NAME", String(767), server_default=_NULL),
    Column("SD_ID", BigInteger),
    Column("TBL_ID", BigInteger),
    Column("WRITE_ID", BigInteger, server_default=text("0")),
    PrimaryKeyConstraint("PART_ID", name="PARTITIONS_pkey"),
    UniqueConstraint("PART_NAME", "TBL_ID", name="UNIQUEPARTITION"),
    ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name="PARTITIONS_SD_ID_fkey", deferrable=True),
    ForeignKeyConstraint(
        ["TBL_ID"], ["TBLS.TBL_ID"], name="PARTITIONS_TBL_ID_fkey", deferrable=True
    ),
    Index("PARTITIONS_N49", "TBL_ID"),
    Index("PARTITIONS_N50", "SD_ID"),
)

PARTITION_EVENTS = Table(
    "PARTITION_EVENTS",
    metadata,
    Column("PART_NAME_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CAT_NAME", String(256)),
    Column("DB_NAME", String(128)),
    Column("EVENT_TIME", BigInteger, nullable=False),
    Column("EVENT_TYPE", Integer, nullable=False),
    Column("PARTITION_NAME", String(767)),
    Column("TBL_NAME", String(256)),
    PrimaryKeyConstraint("PART_NAME_ID", name="PARTITION_EVENTS_pkey"),
    Index("PARTITIONEVENTINDEX", "PARTITION_NAME"),
)

PARTITION_KEYS = Table(
    "PARTITION_KEYS",
    metadata,
    Column("TBL_ID", BigInteger, nullable=False),
    Column("PKEY_COMMENT", String(4000), server_default=_NULL),
    Column("PKEY_NAME", String(128), nullable=False),
    Column("PKEY_TYPE", String(767), nullable=False),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("TBL_ID", "PKEY_NAME", name="PARTITION_KEYS_pkey"),
    ForeignKeyConstraint(
        ["TBL_ID"], ["TBLS.TBL_ID"], name="PARTITION_KEYS_TBL_ID_fkey", deferrable=True
    ),
    Index("PARTITION_KEYS_N49", "TBL_ID"),
)

PARTITION_KEY_VALS = Table(
    "PARTITION_KEY_VALS",
    metadata,
    Column("PART_ID", BigInteger, nullable=False),
    Column("PART_KEY_VAL", String(256), server_default=_NULL),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("PART_ID", "INTEGER_IDX", name="PARTITION_KEY_VALS_pkey"),
    ForeignKeyConstraint(
        ["PART_ID"], ["PARTITIONS.PART_ID"], name="PARTITION_KEY_VALS_PART_ID_fkey", deferrable=True
    ),
    Index("PARTITION_KEY_VALS_N49", "PART_ID"),
)

PARTITION_PARAMS = Table(
    "PARTITION_PARAMS",
    metadata,
    Column("PART_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", Text, server_default=_NULL),
    PrimaryKeyConstraint("PART_ID", "PARAM_KEY", name="PARTITION_PARAMS_pkey"),
    ForeignKeyConstraint(
        ["PART_ID"], ["PARTITIONS.PART_ID"], name="PARTITION_PARAMS_PART_ID_fkey", deferrable=True
    ),
    Index("PARTITION_PARAMS_N49", "PART_ID"),
)

PART_COL_PRIVS = Table(
    "PART_COL_PRIVS",
    metadata,
    Column("PART_COLUMN_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("COLUMN_NAME", String(767), server_default=_NULL),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PART_ID", BigInteger),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("PART_COL_PRIV", String(128), server_default=_NULL),
    Column("AUTHORIZER", String(128), server_default=_NULL),
    PrimaryKeyConstraint("PART_COLUMN_GRANT_ID", name="PART_COL_PRIVS_pkey"),
    ForeignKeyConstraint(
        ["PART_ID"], ["PARTITIONS.PART_ID"], name="PART_COL_PRIVS_PART_ID_fkey", deferrable=True
    ),
    Index(
        "PARTITIONCOLUMNPRIVILEGEINDEX",
        "AUTHORIZER",
        "PART_ID",
        "COLUMN_NAME",
        "PRINCIPAL_NAME",
        "PRINCIPAL_TYPE",
        "PART_COL_PRIV",
        "GRANTOR",
        "GRANTOR_TYPE",
    ),
    Index("PART_COL_PRIVS_N49", "PART_ID"),
)

PART_PRIVS = Table(
    "PART_PRIVS",
    metadata,
    Column("PART_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PART_ID", BigInteger),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("PART_PRIV", String(128), server_default=_NULL),
    Column("AUTHORIZER", String(128), server_default=_NULL),
    PrimaryKeyConstraint("PART_GRANT_ID", name="PART_PRIVS_pkey"),
    ForeignKeyConstraint(
        ["PART_ID"], ["PARTITIONS.PART_ID"], name="PART_PRIVS_PART_ID_fkey", deferrable=True
    ),
    Index(
        "PARTPRIVILEGEINDEX",
        "AUTHORIZER",
        "PART_ID",
        "PRINCIPAL_NAME",
        "PRINCIPAL_TYPE",
        "PART_PRIV",
        "GRANTOR",
        "GRANTOR_TYPE",
    ),
    Index("PART_PRIVS_N49", "PART_ID"),
)

ROLES = Table(
    "ROLES",
    metadata,
    Column("ROLE_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("OWNER_NAME", String(128), server_default=_NULL),
    Column("ROLE_NAME", String(128), server_default=_NULL),
    PrimaryKeyConstraint("ROLE_ID", name="ROLES_pkey"),
    UniqueConstraint("ROLE_NAME", name="ROLEENTITYINDEX"),
)

ROLE_MAP = Table(
    "ROLE_MAP",
    metadata,
    Column("ROLE_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("ADD_TIME", BigInteger, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("ROLE_ID", BigInteger),
    PrimaryKeyConstraint("ROLE_GRANT_ID", name="ROLE_MAP_pkey"),
    UniqueConstraint(
        "PRINCIPAL_NAME", "ROLE_ID", "GRANTOR", "GRANTOR_TYPE", name="USERROLEMAPINDEX"
    ),
    ForeignKeyConstraint(
        ["ROLE_ID"], ["ROLES.ROLE_ID"], name="ROLE_MAP_ROLE_ID_fkey", deferrable=True
    ),
    Index("ROLE_MAP_N49", "ROLE_ID"),
)

SDS = Table(
    "SDS",
    metadata,
    Column("SD_ID", BigInteger, nullable=False, autoincrement=False),
    Column("INPUT_FORMAT", String(4000), server_default=_NULL),
    Column("IS_COMPRESSED", Boolean(create_constraint=False), nullable=False),
    Column("LOCATION", String(4000), server_default=_NULL),
    Column("NUM_BUCKETS", BigInteger, nullable=False),
    Column("OUTPUT_FORMAT", String(4000), server_default=_NULL),
    Column("SERDE_ID", BigInteger),
    Column("CD_ID", BigInteger),
    Column("IS_STOREDASSUBDIRECTORIES", Boolean(create_constraint=False), nullable=False),
    PrimaryKeyConstraint("SD_ID", name="SDS_pkey"),
    ForeignKeyConstraint(["CD_ID"], ["CDS.CD_ID"], name="SDS_CD_ID_fkey", deferrable=True),
    ForeignKeyConstraint(
        ["SERDE_ID"], ["SERDES.SERDE_ID"], name="SDS_SERDE_ID_fkey", deferrable=True
    ),
    Index("SDS_N49", "SERDE_ID"),
    Index("SDS_N50", "CD_ID"),
)

SD_PARAMS = Table(
    "SD_PARAMS",
    metadata,
    Column("SD_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", Text, server_default=_NULL),
    PrimaryKeyConstraint("SD_ID", "PARAM_KEY", name="SD_PARAMS_pkey"),
    ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name="SD_PARAMS_SD_ID_fkey", deferrable=True),
    Index("SD_PARAMS_N49", "SD_ID"),
)

# DataNucleus id blocks, one row per model class (see ids.py); never max(id)+1.
SEQUENCE_TABLE = Table(
    "SEQUENCE_TABLE",
    metadata,
    Column("SEQUENCE_NAME", String(255), nullable=False),
    Column("NEXT_VAL", BigInteger, nullable=False),
    PrimaryKeyConstraint("SEQUENCE_NAME", name="SEQUENCE_TABLE_pkey"),
)

SERDES = Table(
    "SERDES",
    metadata,
    Column("SERDE_ID", BigInteger, nullable=False, autoincrement=False),
    Column("NAME", String(128), server_default=_NULL),
    Column("SLIB", String(4000), server_default=_NULL),
    Column("DESCRIPTION", String(4000)),
    Column("SERIALIZER_CLASS", String(4000)),
    Column("DESERIALIZER_CLASS", String(4000)),
    Column("SERDE_TYPE", Integer),
    PrimaryKeyConstraint("SERDE_ID", name="SERDES_pkey"),
)

SERDE_PARAMS = Table(
    "SERDE_PARAMS",
    metadata,
    Column("SERDE_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", Text, server_default=_NULL),
    PrimaryKeyConstraint("SERDE_ID", "PARAM_KEY", name="SERDE_PARAMS_pkey"),
    ForeignKeyConstraint(
        ["SERDE_ID"], ["SERDES.SERDE_ID"], name="SERDE_PARAMS_SERDE_ID_fkey", deferrable=True
    ),
    Index("SERDE_PARAMS_N49", "SERDE_ID"),
)

SORT_COLS = Table(
    "SORT_COLS",
    metadata,
    Column("SD_ID", BigInteger, nullable=False),
    Column("COLUMN_NAME", String(767), server_default=_NULL),
    Column("ORDER", BigInteger, nullable=False),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX", name="SORT_COLS_pkey"),
    ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name="SORT_COLS_SD_ID_fkey", deferrable=True),
    Index("SORT_COLS_N49", "SD_ID"),
)

TABLE_PARAMS = Table(
    "TABLE_PARAMS",
    metadata,
    Column("TBL_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", Text, server_default=_NULL),
    PrimaryKeyConstraint("TBL_ID", "PARAM_KEY", name="TABLE_PARAMS_pkey"),
    ForeignKeyConstraint(
        ["TBL_ID"], ["TBLS.TBL_ID"], name="TABLE_PARAMS_TBL_ID_fkey", deferrable=True
    ),
    Index("TABLE_PARAMS_N49", "TBL_ID"),
)

TBLS = Table(
    "TBLS",
    metadata,
    Column("TBL_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("DB_ID", BigInteger),
    Column("LAST_ACCESS_TIME", BigInteger, nullable=False),
    Column("OWNER", String(767), server_default=_NULL),
    Column("OWNER_TYPE", String(10), server_default=_NULL),
    Column("RETENTION", BigInteger, nullable=False),
    Column("SD_ID", BigInteger),
    Column("TBL_NAME", String(256), server_default=_NULL),
    Column("TBL_TYPE", String(128), server_default=_NULL),
    Column("VIEW_EXPANDED_TEXT", Text),
    Column("VIEW_ORIGINAL_TEXT", Text),
    Column(
        "IS_REWRITE_ENABLED",
        Boolean(create_constraint=False),
        nullable=False,
        server_default=text("false"),
    ),
    Column("WRITE_ID", BigInteger, server_default=text("0")),
    PrimaryKeyConstraint("TBL_ID", name="TBLS_pkey"),
    UniqueConstraint("TBL_NAME", "DB_ID", name="UNIQUETABLE"),
    ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name="TBLS_DB_ID_fkey", deferrable=True),
    ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name="TBLS_SD_ID_fkey", deferrable=True),
    Index("TBLS_N49", "DB_ID"),
    Index("TBLS_N50", "SD_ID"),
)

MV_CREATION_METADATA = Table(
    "MV_CREATION_METADATA",
    metadata,
    Column("MV_CREATION_METADATA_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CAT_NAME", String(256), nullable=False),
    Column("DB_NAME", String(128), nullable=False),
    Column("TBL_NAME", String(256), nullable=False),
    Column("TXN_LIST", Text),
    Column("MATERIALIZATION_TIME", BigInteger, nullable=False),
    PrimaryKeyConstraint("MV_CREATION_METADATA_ID", name="MV_CREATION_METADATA_PK"),
    Index("MV_UNIQUE_TABLE", "TBL_NAME", "DB_NAME"),
)

MV_TABLES_USED = Table(
    "MV_TABLES_USED",
    metadata,
    Column("MV_CREATION_METADATA_ID", BigInteger, nullable=False),
    Column("TBL_ID", BigInteger, nullable=False),
    Column("INSERTED_COUNT", BigInteger, nullable=False, server_default=text("0")),
    Column("UPDATED_COUNT", BigInteger, nullable=False, server_default=text("0")),
    Column("DELETED_COUNT", BigInteger, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("TBL_ID", "MV_CREATION_METADATA_ID", name="MV_TABLES_USED_PK"),
    ForeignKeyConstraint(
        ["MV_CREATION_METADATA_ID"],
        ["MV_CREATION_METADATA.MV_CREATION_METADATA_ID"],
        name="MV_TABLES_USED_FK1",
        deferrable=True,
    ),
    ForeignKeyConstraint(["TBL_ID"], ["TBLS.TBL_ID"], name="MV_TABLES_USED_FK2", deferrable=True),
)

TBL_COL_PRIVS = Table(
    "TBL_COL_PRIVS",
    metadata,
    Column("TBL_COLUMN_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("COLUMN_NAME", String(767), server_default=_NULL),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("TBL_COL_PRIV", String(128), server_default=_NULL),
    Column("TBL_ID", BigInteger),
    Column("AUTHORIZER", String(128), server_default=_NULL),
    PrimaryKeyConstraint("TBL_COLUMN_GRANT_ID", name="TBL_COL_PRIVS_pkey"),
    ForeignKeyConstraint(
        ["TBL_ID"], ["TBLS.TBL_ID"], name="TBL_COL_PRIVS_TBL_ID_fkey", deferrable=True
    ),
    Index(
        "TABLECOLUMNPRIVILEGEINDEX",
        "AUTHORIZER",
        "TBL_ID",
        "COLUMN_NAME",
        "PRINCIPAL_NAME",
        "PRINCIPAL_TYPE",
        "TBL_COL_PRIV",
        "GRANTOR",
        "GRANTOR_TYPE",
    ),
    Index("TBL_COL_PRIVS_N49", "TBL_ID"),
)

TBL_PRIVS = Table(
    "TBL_PRIVS",
    metadata,
    Column("TBL_GRANT_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128), server_default=_NULL),
    Column("GRANTOR_TYPE", String(128), server_default=_NULL),
    Column("PRINCIPAL_NAME", String(128), server_default=_NULL),
    Column("PRINCIPAL_TYPE", String(128), server_default=_NULL),
    Column("TBL_PRIV", String(128), server_default=_NULL),
    Column("TBL_ID", BigInteger),
    Column("AUTHORIZER", String(128), server_default=_NULL),
    PrimaryKeyConstraint("TBL_GRANT_ID", name="TBL_PRIVS_pkey"),
    ForeignKeyConstraint(
        ["TBL_ID"], ["TBLS.TBL_ID"], name="TBL_PRIVS_TBL_ID_fkey", deferrable=True
    ),
    Index(
        "TABLEPRIVILEGEINDEX",
        "AUTHORIZER",
        "TBL_ID",
        "PRINCIPAL_NAME",
        "PRINCIPAL_TYPE",
        "TBL_PRIV",
        "GRANTOR",
        "GRANTOR_TYPE",
    ),
    Index("TBL_PRIVS_N49", "TBL_ID"),
)

TYPES = Table(
    "TYPES",
    metadata,
    Column("TYPES_ID", BigInteger, nullable=False, autoincrement=False),
    Column("TYPE_NAME", String(128), server_default=_NULL),
    Column("TYPE1", String(767), server_default=_NULL),
    Column("TYPE2", String(767), server_default=_NULL),
    PrimaryKeyConstraint("TYPES_ID", name="TYPES_pkey"),
    UniqueConstraint("TYPE_NAME", name="UNIQUE_TYPE"),
)

TYPE_FIELDS = Table(
    "TYPE_FIELDS",
    metadata,
    Column("TYPE_NAME", BigInteger, nullable=False),
    Column("COMMENT", String(256), server_default=_NULL),
    Column("FIELD_NAME", String(128), nullable=False),
    Column("FIELD_TYPE", String(767), nullable=False),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("TYPE_NAME", "FIELD_NAME", name="TYPE_FIELDS_pkey"),
    ForeignKeyConstraint(
        ["TYPE_NAME"], ["TYPES.TYPES_ID"], name="TYPE_FIELDS_TYPE_NAME_fkey", deferrable=True
    ),
    Index("TYPE_FIELDS_N49", "TYPE_NAME"),
)

# -- Skewed columns ------------------------------------------------------------------------------

SKEWED_STRING_LIST = Table(
    "SKEWED_STRING_LIST",
    metadata,
    Column("STRING_LIST_ID", BigInteger, nullable=False, autoincrement=False),
    PrimaryKeyConstraint("STRING_LIST_ID", name="SKEWED_STRING_LIST_pkey"),
)

SKEWED_STRING_LIST_VALUES = Table(
    "SKEWED_STRING_LIST_VALUES",
    metadata,
    Column("STRING_LIST_ID", BigInteger, nullable=False),
    Column("STRING_LIST_VALUE", String(256), server_default=_NULL),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("STRING_LIST_ID", "INTEGER_IDX", name="SKEWED_STRING_LIST_VALUES_pkey"),
    ForeignKeyConstraint(
        ["STRING_LIST_ID"],
        ["SKEWED_STRING_LIST.STRING_LIST_ID"],
        name="SKEWED_STRING_LIST_VALUES_fkey",
        deferrable=True,
    ),
)

SKEWED_COL_NAMES = Table(
    "SKEWED_COL_NAMES",
    metadata,
    Column("SD_ID", BigInteger, nullable=False),
    Column("SKEWED_COL_NAME", String(256), server_default=_NULL),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX", name="SKEWED_COL_NAMES_pkey"),
    ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name="SKEWED_COL_NAMES_fkey", deferrable=True),
)

SKEWED_COL_VALUE_LOC_MAP = Table(
    "SKEWED_COL_VALUE_LOC_MAP",
    metadata,
    Column("SD_ID", BigInteger, nullable=False),
    Column("STRING_LIST_ID_KID", BigInteger, nullable=False),
    Column("LOCATION", String(4000), server_default=_NULL),
    PrimaryKeyConstraint("SD_ID", "STRING_LIST_ID_KID", name="SKEWED_COL_VALUE_LOC_MAP_pkey"),
    ForeignKeyConstraint(
        ["SD_ID"], ["SDS.SD_ID"], name="SKEWED_COL_VALUE_LOC_MAP_fkey1", deferrable=True
    ),
    ForeignKeyConstraint(
        ["STRING_LIST_ID_KID"],
        ["SKEWED_STRING_LIST.STRING_LIST_ID"],
        name="SKEWED_COL_VALUE_LOC_MAP_fkey2",
        deferrable=True,
    ),
)

SKEWED_VALUES = Table(
    "SKEWED_VALUES",
    metadata,
    Column("SD_ID_OID", BigInteger, nullable=False),
    Column("STRING_LIST_ID_EID", BigInteger, nullable=False),
    Column("INTEGER_IDX", BigInteger, nullable=False),
    PrimaryKeyConstraint("SD_ID_OID", "INTEGER_IDX", name="SKEWED_VALUES_pkey"),
    ForeignKeyConstraint(
        ["STRING_LIST_ID_EID"],
        ["SKEWED_STRING_LIST.STRING_LIST_ID"],
        name="SKEWED_VALUES_fkey1",
        deferrable=True,
    ),
    ForeignKeyConstraint(["SD_ID_OID"], ["SDS.SD_ID"], name="SKEWED_VALUES_fkey2", deferrable=True),
)

# -- Delegation tokens ---------------------------------------------------------------------------

# KEY_ID is a serial column: PostgreSQL sequence "MASTER_KEYS_KEY_ID_seq".
MASTER_KEYS = Table(
    "MASTER_KEYS",
    metadata,
    Column("KEY_ID", Integer, nullable=False, autoincrement=True),
    Column("MASTER_KEY", String(767)),
    PrimaryKeyConstraint("KEY_ID", name="MASTER_KEYS_pkey"),
    sqlite_autoincrement=True,
)

DELEGATION_TOKENS = Table(
    "DELEGATION_TOKENS",
    metadata,
    Column("TOKEN_IDENT", String(767), nullable=False),
    Column("TOKEN", String(767)),
    PrimaryKeyConstraint("TOKEN_IDENT", name="DELEGATION_TOKENS_pkey"),
)

# -- Column statistics and the schema version ----------------------------------------------------

TAB_COL_STATS = Table(
    "TAB_COL_STATS",
    metadata,
    Column("CS_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CAT_NAME", String(256), server_default=_NULL),
    Column("DB_NAME", String(128), server_default=_NULL),
    Column("TABLE_NAME", String(256), server_default=_NULL),
    Column("COLUMN_NAME", String(767), server_default=_NULL),
    Column("COLUMN_TYPE", String(128), server_default=_NULL),
    Column("TBL_ID", BigInteger, nullable=False),
    Column("LONG_LOW_VALUE", BigInteger),
    Column("LONG_HIGH_VALUE", BigInteger),
    Column("DOUBLE_LOW_VALUE", Double),
    Column("DOUBLE_HIGH_VALUE", Double),
    Column("BIG_DECIMAL_LOW_VALUE", String(4000), server_default=_NULL),
    Column("BIG_DECIMAL_HIGH_VALUE", String(4000), server_default=_NULL),
    Column("NUM_NULLS", BigInteger, nullable=False),
    Column("NUM_DISTINCTS", BigInteger),
    Column("BIT_VECTOR", LargeBinary),
    Column("AVG_COL_LEN", Double),
    Column("MAX_COL_LEN", BigInteger),
    Column("NUM_TRUES", BigInteger),
    Column("NUM_FALSES", BigInteger),
    Column("LAST_ANALYZED", BigInteger, nullable=False),
    Column("ENGINE", String(128), nullable=False),
    Column("HISTOGRAM", LargeBinary),
    PrimaryKeyConstraint("CS_ID", name="TAB_COL_STATS_pkey"),
    ForeignKeyConstraint(["TBL_ID"], ["TBLS.TBL_ID"], name="TAB_COL_STATS_fkey", deferrable=True),
    Index("TAB_COL_STATS_IDX", "DB_NAME", "TABLE_NAME", "COLUMN_NAME", "CAT_NAME"),
    Index("TAB_COL_STATS_N49", "TBL_ID"),
)

VERSION = Table(
    "VERSION",
    metadata,
    Column("VER_ID", BigInteger, nullable=False, autoincrement=False),
    Column("SCHEMA_VERSION", String(127), nullable=False),
    Column("VERSION_COMMENT", String(255), nullable=False),
    PrimaryKeyConstraint("VER_ID", name="VERSION_pkey"),
)

PART_COL_STATS = Table(
    "PART_COL_STATS",
    metadata,
    Column("CS_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CAT_NAME", String(256), server_default=_NULL),
    Column("DB_NAME", String(128), server_default=_NULL),
    Column("TABLE_NAME", String(256), server_default=_NULL),
    Column("PARTITION_NAME", String(767), server_default=_NULL),
    Column("COLUMN_NAME", String(767), server_default=_NULL),
    Column("COLUMN_TYPE", String(128), server_default=_NULL),
    Column("PART_ID", BigInteger, nullable=False),
    Column("LONG_LOW_VALUE", BigInteger),
    Column("LONG_HIGH_VALUE", BigInteger),
    Column("DOUBLE_LOW_VALUE", Double),
    Column("DOUBLE_HIGH_VALUE", Double),
    Column("BIG_DECIMAL_LOW_VALUE", String(4000), server_default=_NULL),
    Column("BIG_DECIMAL_HIGH_VALUE", String(4000), server_default=_NULL),
    Column("NUM_NULLS", BigInteger, nullable=False),
    Column("NUM_DISTINCTS", BigInteger),
    Column("BIT_VECTOR", LargeBinary),
    Column("AVG_COL_LEN", Double),
    Column("MAX_COL_LEN", BigInteger),
    Column("NUM_TRUES", BigInteger),
    Column("NUM_FALSES", BigInteger),
    Column("LAST_ANALYZED", BigInteger, nullable=False),
    Column("ENGINE", String(128), nullable=False),
    Column("HISTOGRAM", LargeBinary),
    PrimaryKeyConstraint("CS_ID", name="PART_COL_STATS_pkey"),
    ForeignKeyConstraint(
        ["PART_ID"], ["PARTITIONS.PART_ID"], name="PART_COL_STATS_fkey", deferrable=True
    ),
    Index("PCS_STATS_IDX", "DB_NAME", "TABLE_NAME", "COLUMN_NAME", "PARTITION_NAME", "CAT_NAME"),
    Index("PART_COL_STATS_N49", "PART_ID"),
)

# -- Functions -----------------------------------------------------------------------------------

FUNCS = Table(
    "FUNCS",
    metadata,
    Column("FUNC_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CLASS_NAME", String(4000)),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger),
    Column("FUNC_NAME", String(128)),
    Column("FUNC_TYPE", Integer, nullable=False),
    Column("OWNER_NAME", String(128)),
    Column("OWNER_TYPE", String(10)),
    PrimaryKeyConstraint("FUNC_ID", name="FUNCS_pkey"),
    ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name="FUNCS_FK1", deferrable=True),
    Index("UNIQUEFUNCTION", "FUNC_NAME", "DB_ID", unique=True),
    Index("FUNCS_N49", "DB_ID"),
)

FUNC_RU = Table(
    "FUNC_RU",
    metadata,
    Column("FUNC_ID", BigInteger, nullable=False),
    Column("RESOURCE_TYPE", Integer, nullable=False),
    Column("RESOURCE_URI", String(4000)),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("FUNC_ID", "INTEGER_IDX", name="FUNC_RU_pkey"),
    ForeignKeyConstraint(["FUNC_ID"], ["FUNCS.FUNC_ID"], name="FUNC_RU_FK1", deferrable=True),
    Index("FUNC_RU_N49", "FUNC_ID"),
)

# -- Notification log ----------------------------------------------------------------------------

# NL_ID comes from SEQUENCE_TABLE, EVENT_ID from NOTIFICATION_SEQUENCE (gap-free, in commit
# order).
NOTIFICATION_LOG = Table(
    "NOTIFICATION_LOG",
    metadata,
    Column("NL_ID", BigInteger, nullable=False, autoincrement=False),
    Column("EVENT_ID", BigInteger, nullable=False),
    Column("EVENT_TIME", Integer, nullable=False),
    Column("EVENT_TYPE", String(32), nullable=False),
    Column("CAT_NAME", String(256)),
    Column("DB_NAME", String(128)),
    Column("TBL_NAME", String(256)),
    Column("MESSAGE", Text),
    Column("MESSAGE_FORMAT", String(16)),
    PrimaryKeyConstraint("NL_ID", name="NOTIFICATION_LOG_pkey"),
    Index("NOTIFICATION_LOG_EVENT_ID", "EVENT_ID", unique=True),
)

# A single row (ONE_ROW_CONSTRAINT): the next event id, locked by every event writer.
NOTIFICATION_SEQUENCE = Table(
    "NOTIFICATION_SEQUENCE",
    metadata,
    Column("NNI_ID", BigInteger, nullable=False, autoincrement=False),
    Column("NEXT_EVENT_ID", BigInteger, nullable=False),
    PrimaryKeyConstraint("NNI_ID", name="NOTIFICATION_SEQUENCE_pkey"),
    CheckConstraint('"NNI_ID" = 1', name="ONE_ROW_CONSTRAINT"),
)

# -- Table constraints and metastore properties --------------------------------------------------

KEY_CONSTRAINTS = Table(
    "KEY_CONSTRAINTS",
    metadata,
    Column("CHILD_CD_ID", BigInteger),
    Column("CHILD_INTEGER_IDX", BigInteger),
    Column("CHILD_TBL_ID", BigInteger),
    Column("PARENT_CD_ID", BigInteger),
    Column("PARENT_INTEGER_IDX", BigInteger, nullable=False),
    Column("PARENT_TBL_ID", BigInteger, nullable=False),
    Column("POSITION", BigInteger, nullable=False),
    Column("CONSTRAINT_NAME", String(400), nullable=False),
    Column("CONSTRAINT_TYPE", SmallInteger, nullable=False),
    Column("UPDATE_RULE", SmallInteger),
    Column("DELETE_RULE", SmallInteger),
    Column("ENABLE_VALIDATE_RELY", SmallInteger, nullable=False),
    Column("DEFAULT_VALUE", String(400)),
    PrimaryKeyConstraint("PARENT_TBL_ID", "CONSTRAINT_NAME", "POSITION", name="constraints_pk"),
    Index("CONSTRAINTS_PARENT_TBLID_INDEX", "PARENT_TBL_ID"),
    Index("CONSTRAINTS_CONSTRAINT_TYPE_INDEX", "CONSTRAINT_TYPE"),
)

METASTORE_DB_PROPERTIES = Table(
    "METASTORE_DB_PROPERTIES",
    metadata,
    Column("PROPERTY_KEY", String(255), nullable=False),
    Column("PROPERTY_VALUE", String(1000), nullable=False),
    Column("DESCRIPTION", String(1000)),
    PrimaryKeyConstraint("PROPERTY_KEY", name="PROPERTY_KEY_PK"),
)

# -- Workload management -------------------------------------------------------------------------

# DEFAULT_POOL_ID closes the one foreign-key cycle (with WM_POOL.RP_ID), hence use_alter.
WM_RESOURCEPLAN = Table(
    "WM_RESOURCEPLAN",
    metadata,
    Column("RP_ID", BigInteger, nullable=False, autoincrement=False),
    Column("NAME", String(128), nullable=False),
    Column("NS", String(128)),
    Column("QUERY_PARALLELISM", Integer),
    Column("STATUS", String(20), nullable=False),
    Column("DEFAULT_POOL_ID", BigInteger),
    PrimaryKeyConstraint("RP_ID", name="WM_RESOURCEPLAN_pkey"),
    UniqueConstraint("NS", "NAME", name="UNIQUE_WM_RESOURCEPLAN"),
    ForeignKeyConstraint(
        ["DEFAULT_POOL_ID"],
        ["WM_POOL.POOL_ID"],
        name="WM_RESOURCEPLAN_FK1",
        deferrable=True,
        use_alter=True,
    ),
)

WM_POOL = Table(
    "WM_POOL",
    metadata,
    Column("POOL_ID", BigInteger, nullable=False, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("PATH", String(1024), nullable=False),
    Column("ALLOC_FRACTION", Double),
    Column("QUERY_PARALLELISM", Integer),
    Column("SCHEDULING_POLICY", String(1024)),
    PrimaryKeyConstraint("POOL_ID", name="WM_POOL_pkey"),
    UniqueConstraint("RP_ID", "PATH", name="UNIQUE_WM_POOL"),
    ForeignKeyConstraint(["RP_ID"], ["WM_RESOURCEPLAN.RP_ID"], name="WM_POOL_FK1", deferrable=True),
)

WM_TRIGGER = Table(
    "WM_TRIGGER",
    metadata,
    Column("TRIGGER_ID", BigInteger, nullable=False, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("NAME", String(128), nullable=False),
    Column("TRIGGER_EXPRESSION", String(1024), server_default=_NULL),
    Column("ACTION_EXPRESSION", String(1024), server_default=_NULL),
    Column("IS_IN_UNMANAGED", SmallInteger, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("TRIGGER_ID", name="WM_TRIGGER_pkey"),
    UniqueConstraint("RP_ID", "NAME", name="UNIQUE_WM_TRIGGER"),
    ForeignKeyConstraint(
        ["RP_ID"], ["WM_RESOURCEPLAN.RP_ID"], name="WM_TRIGGER_FK1", deferrable=True
    ),
)

WM_POOL_TO_TRIGGER = Table(
    "WM_POOL_TO_TRIGGER",
    metadata,
    Column("POOL_ID", BigInteger, nullable=False),
    Column("TRIGGER_ID", BigInteger, nullable=False),
    PrimaryKeyConstraint("POOL_ID", "TRIGGER_ID", name="WM_POOL_TO_TRIGGER_pkey"),
    ForeignKeyConstraint(
        ["POOL_ID"], ["WM_POOL.POOL_ID"], name="WM_POOL_TO_TRIGGER_FK1", deferrable=True
    ),
    ForeignKeyConstraint(
        ["TRIGGER_ID"], ["WM_TRIGGER.TRIGGER_ID"], name="WM_POOL_TO_TRIGGER_FK2", deferrable=True
    ),
)

WM_MAPPING = Table(
    "WM_MAPPING",
    metadata,
    Column("MAPPING_ID", BigInteger, nullable=False, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("ENTITY_TYPE", String(128), nullable=False),
    Column("ENTITY_NAME", String(128), nullable=False),
    Column("POOL_ID", BigInteger),
    Column("ORDERING", Integer),
    PrimaryKeyConstraint("MAPPING_ID", name="WM_MAPPING_pkey"),
    UniqueConstraint("RP_ID", "ENTITY_TYPE", "ENTITY_NAME", name="UNIQUE_WM_MAPPING"),
    ForeignKeyConstraint(
        ["RP_ID"], ["WM_RESOURCEPLAN.RP_ID"], name="WM_MAPPING_FK1", deferrable=True
    ),
    ForeignKeyConstraint(["POOL_ID"], ["WM_POOL.POOL_ID"], name="WM_MAPPING_FK2", deferrable=True),
)

# -- Transactions, locks, write ids and compaction (TxnHandler) ----------------------------------

# Hive 4 takes transaction ids from this bigserial ("TXNS_TXN_ID_seq"); there is no NEXT_TXN_ID.
# Seeded with the committed transaction 0.
TXNS = Table(
    "TXNS",
    metadata,
    Column("TXN_ID", BIGSERIAL, nullable=False, autoincrement=True),
    Column("TXN_STATE", CHAR(1), nullable=False),
    Column("TXN_STARTED", BigInteger, nullable=False),
    Column("TXN_LAST_HEARTBEAT", BigInteger, nullable=False),
    Column("TXN_USER", String(128), nullable=False),
    Column("TXN_HOST", String(128), nullable=False),
    Column("TXN_AGENT_INFO", String(128)),
    Column("TXN_META_INFO", String(128)),
    Column("TXN_HEARTBEAT_COUNT", Integer),
    Column("TXN_TYPE", Integer),
    PrimaryKeyConstraint("TXN_ID", name="TXNS_pkey"),
    sqlite_autoincrement=True,
)

# Like several TxnHandler tables, it has no primary key.
TXN_COMPONENTS = Table(
    "TXN_COMPONENTS",
    metadata,
    Column("TC_TXNID", BigInteger, nullable=False),
    Column("TC_DATABASE", String(128), nullable=False),
    Column("TC_TABLE", String(256)),
    Column("TC_PARTITION", String(767), server_default=_NULL),
    Column("TC_OPERATION_TYPE", CHAR(1), nullable=False),
    Column("TC_WRITEID", BigInteger),
    ForeignKeyConstraint(["TC_TXNID"], ["TXNS.TXN_ID"], name="TXN_COMPONENTS_TC_TXNID_fkey"),
    Index("tc_txnid_index", "TC_TXNID", postgresql_using="hash"),
)

COMPLETED_TXN_COMPONENTS = Table(
    "COMPLETED_TXN_COMPONENTS",
    metadata,
    Column("CTC_TXNID", BigInteger, nullable=False),
    Column("CTC_DATABASE", String(128), nullable=False),
    Column("CTC_TABLE", String(256)),
    Column("CTC_PARTITION", String(767)),
    Column("CTC_TIMESTAMP", DateTime, nullable=False, server_default=text("CURRENT_TIMESTAMP")),
    Column("CTC_WRITEID", BigInteger),
    Column("CTC_UPDATE_DELETE", CHAR(1), nullable=False),
    Index("completed_txn_components_index", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION"),
)

# One row, locked to serialise commits.
TXN_LOCK_TBL = Table(
    "TXN_LOCK_TBL",
    metadata,
    Column("TXN_LOCK", BigInteger, nullable=False),
)

HIVE_LOCKS = Table(
    "HIVE_LOCKS",
    metadata,
    Column("HL_LOCK_EXT_ID", BigInteger, nullable=False),
    Column("HL_LOCK_INT_ID", BigInteger, nullable=False),
    Column("HL_TXNID", BigInteger, nullable=False),
    Column("HL_DB", String(128), nullable=False),
    Column("HL_TABLE", String(256)),
    Column("HL_PARTITION", String(767), server_default=_NULL),
    Column("HL_LOCK_STATE", CHAR(1), nullable=False),
    Column("HL_LOCK_TYPE", CHAR(1), nullable=False),
    Column("HL_LAST_HEARTBEAT", BigInteger, nullable=False),
    Column("HL_ACQUIRED_AT", BigInteger),
    Column("HL_USER", String(128), nullable=False),
    Column("HL_HOST", String(128), nullable=False),
    Column("HL_HEARTBEAT_COUNT", Integer),
    Column("HL_AGENT_INFO", String(128)),
    Column("HL_BLOCKEDBY_EXT_ID", BigInteger),
    Column("HL_BLOCKEDBY_INT_ID", BigInteger),
    PrimaryKeyConstraint("HL_LOCK_EXT_ID", "HL_LOCK_INT_ID", name="HIVE_LOCKS_pkey"),
    Index("hl_txnid_index", "HL_TXNID", postgresql_using="hash"),
)

NEXT_LOCK_ID = Table(
    "NEXT_LOCK_ID",
    metadata,
    Column("NL_NEXT", BigInteger, nullable=False),
)

COMPACTION_QUEUE = Table(
    "COMPACTION_QUEUE",
    metadata,
    Column("CQ_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CQ_DATABASE", String(128), nullable=False),
    Column("CQ_TABLE", String(256), nullable=False),
    Column("CQ_PARTITION", String(767)),
    Column("CQ_STATE", CHAR(1), nullable=False),
    Column("CQ_TYPE", CHAR(1), nullable=False),
    Column("CQ_TBLPROPERTIES", String(2048)),
    Column("CQ_WORKER_ID", String(128)),
    Column("CQ_ENQUEUE_TIME", BigInteger),
    Column("CQ_START", BigInteger),
    Column("CQ_RUN_AS", String(128)),
    Column("CQ_HIGHEST_WRITE_ID", BigInteger),
    Column("CQ_META_INFO", LargeBinary),
    Column("CQ_HADOOP_JOB_ID", String(32)),
    Column("CQ_ERROR_MESSAGE", Text),
    Column("CQ_NEXT_TXN_ID", BigInteger),
    Column("CQ_TXN_ID", BigInteger),
    Column("CQ_COMMIT_TIME", BigInteger),
    Column("CQ_INITIATOR_ID", String(128)),
    Column("CQ_INITIATOR_VERSION", String(128)),
    Column("CQ_WORKER_VERSION", String(128)),
    Column("CQ_CLEANER_START", BigInteger),
    Column("CQ_RETRY_RETENTION", BigInteger, nullable=False, server_default=text("0")),
    Column("CQ_POOL_NAME", String(128)),
    Column("CQ_NUMBER_OF_BUCKETS", Integer),
    Column("CQ_ORDER_BY", String(4000)),
    PrimaryKeyConstraint("CQ_ID", name="COMPACTION_QUEUE_pkey"),
)

NEXT_COMPACTION_QUEUE_ID = Table(
    "NEXT_COMPACTION_QUEUE_ID",
    metadata,
    Column("NCQ_NEXT", BigInteger, nullable=False),
)

COMPLETED_COMPACTIONS = Table(
    "COMPLETED_COMPACTIONS",
    metadata,
    Column("CC_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CC_DATABASE", String(128), nullable=False),
    Column("CC_TABLE", String(256), nullable=False),
    Column("CC_PARTITION", String(767)),
    Column("CC_STATE", CHAR(1), nullable=False),
    Column("CC_TYPE", CHAR(1), nullable=False),
    Column("CC_TBLPROPERTIES", String(2048)),
    Column("CC_WORKER_ID", String(128)),
    Column("CC_ENQUEUE_TIME", BigInteger),
    Column("CC_START", BigInteger),
    Column("CC_END", BigInteger),
    Column("CC_RUN_AS", String(128)),
    Column("CC_HIGHEST_WRITE_ID", BigInteger),
    Column("CC_META_INFO", LargeBinary),
    Column("CC_HADOOP_JOB_ID", String(32)),
    Column("CC_ERROR_MESSAGE", Text),
    Column("CC_NEXT_TXN_ID", BigInteger),
    Column("CC_TXN_ID", BigInteger),
    Column("CC_COMMIT_TIME", BigInteger),
    Column("CC_INITIATOR_ID", String(128)),
    Column("CC_INITIATOR_VERSION", String(128)),
    Column("CC_WORKER_VERSION", String(128)),
    Column("CC_POOL_NAME", String(128)),
    Column("CC_NUMBER_OF_BUCKETS", Integer),
    Column("CC_ORDER_BY", String(4000)),
    PrimaryKeyConstraint("CC_ID", name="COMPLETED_COMPACTIONS_pkey"),
    Index("COMPLETED_COMPACTIONS_RES", "CC_DATABASE", "CC_TABLE", "CC_PARTITION"),
)

COMPACTION_METRICS_CACHE = Table(
    "COMPACTION_METRICS_CACHE",
    metadata,
    Column("CMC_DATABASE", String(128), nullable=False),
    Column("CMC_TABLE", String(256), nullable=False),
    Column("CMC_PARTITION", String(767)),
    Column("CMC_METRIC_TYPE", String(128), nullable=False),
    Column("CMC_METRIC_VALUE", Integer, nullable=False),
    Column("CMC_VERSION", Integer, nullable=False),
)

AUX_TABLE = Table(
    "AUX_TABLE",
    metadata,
    Column("MT_KEY1", String(128), nullable=False),
    Column("MT_KEY2", BigInteger, nullable=False),
    Column("MT_COMMENT", String(255)),
    PrimaryKeyConstraint("MT_KEY1", "MT_KEY2", name="AUX_TABLE_pkey"),
)

WRITE_SET = Table(
    "WRITE_SET",
    metadata,
    Column("WS_DATABASE", String(128), nullable=False),
    Column("WS_TABLE", String(256), nullable=False),
    Column("WS_PARTITION", String(767)),
    Column("WS_TXNID", BigInteger, nullable=False),
    Column("WS_COMMIT_ID", BigInteger, nullable=False),
    Column("WS_OPERATION_TYPE", CHAR(1), nullable=False),
)

TXN_TO_WRITE_ID = Table(
    "TXN_TO_WRITE_ID",
    metadata,
    Column("T2W_TXNID", BigInteger, nullable=False),
    Column("T2W_DATABASE", String(128), nullable=False),
    Column("T2W_TABLE", String(256), nullable=False),
    Column("T2W_WRITEID", BigInteger, nullable=False),
    Index("TBL_TO_TXN_ID_IDX", "T2W_DATABASE", "T2W_TABLE", "T2W_TXNID", unique=True),
    Index("TBL_TO_WRITE_ID_IDX", "T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID", unique=True),
)

NEXT_WRITE_ID = Table(
    "NEXT_WRITE_ID",
    metadata,
    Column("NWI_DATABASE", String(128), nullable=False),
    Column("NWI_TABLE", String(256), nullable=False),
    Column("NWI_NEXT", BigInteger, nullable=False),
    Index("NEXT_WRITE_ID_IDX", "NWI_DATABASE", "NWI_TABLE", unique=True),
)

MIN_HISTORY_WRITE_ID = Table(
    "MIN_HISTORY_WRITE_ID",
    metadata,
    Column("MH_TXNID", BigInteger, nullable=False),
    Column("MH_DATABASE", String(128), nullable=False),
    Column("MH_TABLE", String(256), nullable=False),
    Column("MH_WRITEID", BigInteger, nullable=False),
    ForeignKeyConstraint(["MH_TXNID"], ["TXNS.TXN_ID"], name="MIN_HISTORY_WRITE_ID_MH_TXNID_fkey"),
)

MIN_HISTORY_LEVEL = Table(
    "MIN_HISTORY_LEVEL",
    metadata,
    Column("MHL_TXNID", BigInteger, nullable=False, autoincrement=False),
    Column("MHL_MIN_OPEN_TXNID", BigInteger, nullable=False),
    PrimaryKeyConstraint("MHL_TXNID", name="MIN_HISTORY_LEVEL_pkey"),
    Index("MIN_HISTORY_LEVEL_IDX", "MHL_MIN_OPEN_TXNID"),
)

MATERIALIZATION_REBUILD_LOCKS = Table(
    "MATERIALIZATION_REBUILD_LOCKS",
    metadata,
    Column("MRL_TXN_ID", BigInteger, nullable=False, autoincrement=False),
    Column("MRL_DB_NAME", String(128), nullable=False),
    Column("MRL_TBL_NAME", String(256), nullable=False),
    Column("MRL_LAST_HEARTBEAT", BigInteger, nullable=False),
    PrimaryKeyConstraint("MRL_TXN_ID", name="MATERIALIZATION_REBUILD_LOCKS_pkey"),
)

# -- Schema registry -----------------------------------------------------------------------------

I_SCHEMA = Table(
    "I_SCHEMA",
    metadata,
    Column("SCHEMA_ID", BigInteger, nullable=False, autoincrement=False),
    Column("SCHEMA_TYPE", Integer, nullable=False),
    Column("NAME", String(256)),
    Column("DB_ID", BigInteger),
    Column("COMPATIBILITY", Integer, nullable=False),
    Column("VALIDATION_LEVEL", Integer, nullable=False),
    Column("CAN_EVOLVE", Boolean(create_constraint=False), nullable=False),
    Column("SCHEMA_GROUP", String(256)),
    Column("DESCRIPTION", String(4000)),
    PrimaryKeyConstraint("SCHEMA_ID", name="I_SCHEMA_pkey"),
    UniqueConstraint("NAME", name="I_SCHEMA_NAME_key"),
    ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name="I_SCHEMA_DB_ID_fkey"),
)

SCHEMA_VERSION = Table(
    "SCHEMA_VERSION",
    metadata,
    Column("SCHEMA_VERSION_ID", BigInteger, nullable=False, autoincrement=False),
    Column("SCHEMA_ID", BigInteger),
    Column("VERSION", Integer, nullable=False),
    Column("CREATED_AT", BigInteger, nullable=False),
    Column("CD_ID", BigInteger),
    Column("STATE", Integer, nullable=False),
    Column("DESCRIPTION", String(4000)),
    Column("SCHEMA_TEXT", Text),
    Column("FINGERPRINT", String(256)),
    Column("SCHEMA_VERSION_NAME", String(256)),
    Column("SERDE_ID", BigInteger),
    PrimaryKeyConstraint("SCHEMA_VERSION_ID", name="SCHEMA_VERSION_pkey"),
    UniqueConstraint("SCHEMA_ID", "VERSION", name="SCHEMA_VERSION_SCHEMA_ID_VERSION_key"),
    ForeignKeyConstraint(
        ["SCHEMA_ID"], ["I_SCHEMA.SCHEMA_ID"], name="SCHEMA_VERSION_SCHEMA_ID_fkey"
    ),
    ForeignKeyConstraint(["CD_ID"], ["CDS.CD_ID"], name="SCHEMA_VERSION_CD_ID_fkey"),
    ForeignKeyConstraint(["SERDE_ID"], ["SERDES.SERDE_ID"], name="SCHEMA_VERSION_SERDE_ID_fkey"),
)

# -- Replication and runtime statistics ----------------------------------------------------------

REPL_TXN_MAP = Table(
    "REPL_TXN_MAP",
    metadata,
    Column("RTM_REPL_POLICY", String(256), nullable=False),
    Column("RTM_SRC_TXN_ID", BigInteger, nullable=False),
    Column("RTM_TARGET_TXN_ID", BigInteger, nullable=False),
    PrimaryKeyConstraint("RTM_REPL_POLICY", "RTM_SRC_TXN_ID", name="REPL_TXN_MAP_pkey"),
)

RUNTIME_STATS = Table(
    "RUNTIME_STATS",
    metadata,
    Column("RS_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("WEIGHT", BigInteger, nullable=False),
    Column("PAYLOAD", LargeBinary),
    PrimaryKeyConstraint("RS_ID", name="RUNTIME_STATS_pkey"),
    Index("IDX_RUNTIME_STATS_CREATE_TIME", "CREATE_TIME"),
)

TXN_WRITE_NOTIFICATION_LOG = Table(
    "TXN_WRITE_NOTIFICATION_LOG",
    metadata,
    Column("WNL_ID", BigInteger, nullable=False),
    Column("WNL_TXNID", BigInteger, nullable=False),
    Column("WNL_WRITEID", BigInteger, nullable=False),
    Column("WNL_DATABASE", String(128), nullable=False),
    Column("WNL_TABLE", String(256), nullable=False),
    Column("WNL_PARTITION", String(767), nullable=False),
    Column("WNL_TABLE_OBJ", Text, nullable=False),
    Column("WNL_PARTITION_OBJ", Text),
    Column("WNL_FILES", Text),
    Column("WNL_EVENT_TIME", Integer, nullable=False),
    PrimaryKeyConstraint(
        "WNL_TXNID",
        "WNL_DATABASE",
        "WNL_TABLE",
        "WNL_PARTITION",
        name="TXN_WRITE_NOTIFICATION_LOG_pkey",
    ),
)

# -- Scheduled queries and replication metrics ---------------------------------------------------

SCHEDULED_QUERIES = Table(
    "SCHEDULED_QUERIES",
    metadata,
    Column("SCHEDULED_QUERY_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CLUSTER_NAMESPACE", String(256)),
    Column("ENABLED", Boolean(create_constraint=False), nullable=False),
    Column("NEXT_EXECUTION", Integer),
    Column("QUERY", String(4000)),
    Column("SCHEDULE", String(256)),
    Column("SCHEDULE_NAME", String(256)),
    Column("USER", String(256)),
    Column("ACTIVE_EXECUTION_ID", BigInteger),
    PrimaryKeyConstraint("SCHEDULED_QUERY_ID", name="SCHEDULED_QUERIES_PK"),
)

SCHEDULED_EXECUTIONS = Table(
    "SCHEDULED_EXECUTIONS",
    metadata,
    Column("SCHEDULED_EXECUTION_ID", BigInteger, nullable=False, autoincrement=False),
    Column("END_TIME", Integer),
    Column("ERROR_MESSAGE", String(2000)),
    Column("EXECUTOR_QUERY_ID", String(256)),
    Column("LAST_UPDATE_TIME", Integer),
    Column("SCHEDULED_QUERY_ID", BigInteger),
    Column("START_TIME", Integer),
    Column("STATE", String(256)),
    PrimaryKeyConstraint("SCHEDULED_EXECUTION_ID", name="SCHEDULED_EXECUTIONS_PK"),
    ForeignKeyConstraint(
        ["SCHEDULED_QUERY_ID"],
        ["SCHEDULED_QUERIES.SCHEDULED_QUERY_ID"],
        name="SCHEDULED_EXECUTIONS_SCHQ_FK",
        ondelete="CASCADE",
    ),
    Index("idx_scheduled_executions_last_update_time", "LAST_UPDATE_TIME"),
    Index("idx_scheduled_executions_scheduled_query_id", "SCHEDULED_QUERY_ID"),
    Index("unique_scheduled_executions_id", "SCHEDULED_EXECUTION_ID", unique=True),
)

REPLICATION_METRICS = Table(
    "REPLICATION_METRICS",
    metadata,
    Column("RM_SCHEDULED_EXECUTION_ID", BigInteger, nullable=False, autoincrement=False),
    Column("RM_POLICY", String(256), nullable=False),
    Column("RM_DUMP_EXECUTION_ID", BigInteger, nullable=False),
    Column("RM_METADATA", String(4000)),
    Column("RM_PROGRESS", String(10000)),
    Column("RM_START_TIME", Integer, nullable=False),
    Column("MESSAGE_FORMAT", String(16), server_default="json-0.2"),
    PrimaryKeyConstraint("RM_SCHEDULED_EXECUTION_ID", name="REPLICATION_METRICS_pkey"),
    Index("POLICY_IDX", "RM_POLICY"),
    Index("DUMP_IDX", "RM_DUMP_EXECUTION_ID"),
)

# -- Stored procedures ---------------------------------------------------------------------------

STORED_PROCS = Table(
    "STORED_PROCS",
    metadata,
    Column("SP_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger, nullable=False),
    Column("NAME", String(256), nullable=False),
    Column("OWNER_NAME", String(128), nullable=False),
    Column("SOURCE", Text, nullable=False),
    PrimaryKeyConstraint("SP_ID", name="STORED_PROCS_pkey"),
    ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name="STOREDPROC_FK1", deferrable=True),
    Index("UNIQUESTOREDPROC", "NAME", "DB_ID", unique=True),
)

PACKAGES = Table(
    "PACKAGES",
    metadata,
    Column("PKG_ID", BigInteger, nullable=False, autoincrement=False),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger, nullable=False),
    Column("NAME", String(256), nullable=False),
    Column("OWNER_NAME", String(128), nullable=False),
    Column("HEADER", Text, nullable=False),
    Column("BODY", Text, nullable=False),
    PrimaryKeyConstraint("PKG_ID", name="PACKAGES_pkey"),
    ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name="PACKAGES_FK1", deferrable=True),
    Index("UNIQUEPKG", "NAME", "DB_ID", unique=True),
)

# -- Data connectors -----------------------------------------------------------------------------

DATACONNECTORS = Table(
    "DATACONNECTORS",
    metadata,
    Column("NAME", String(128), nullable=False),
    Column("TYPE", String(32), nullable=False),
    Column("URL", String(4000), nullable=False),
    Column("COMMENT", String(256)),
    Column("OWNER_NAME", String(256)),
    Column("OWNER_TYPE", String(10)),
    Column("CREATE_TIME", Integer, nullable=False),
    PrimaryKeyConstraint("NAME", name="DATACONNECTORS_pkey"),
)

DATACONNECTOR_PARAMS = Table(
    "DATACONNECTOR_PARAMS",
    metadata,
    Column("NAME", String(128), nullable=False),
    Column("PARAM_KEY", String(180), nullable=False),
    Column("PARAM_VALUE", String(4000)),
    PrimaryKeyConstraint("NAME", "PARAM_KEY", name="DATACONNECTOR_PARAMS_pkey"),
    ForeignKeyConstraint(
        ["NAME"], ["DATACONNECTORS.NAME"], name="DATACONNECTOR_NAME_FK1", ondelete="CASCADE"
    ),
)
