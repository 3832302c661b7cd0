"""Starting from a stock metastore's hive-site.xml: what is read, how, and what is refused."""

from __future__ import annotations

import getpass
import os
import tempfile
from pathlib import Path

import pytest
from sqlalchemy.dialects.postgresql.psycopg2 import PGDialect_psycopg2
from sqlalchemy.engine import make_url

from hms_cache_proxy.config import SettingsError, load_settings

PASSWORD = "p@ss:w/rd&100%"  # every character a URL treats specially


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No HMS_CACHE_PROXY_* variables and no conf/ directory: only what each test gives."""
    for name in list(os.environ):
        if name.upper().startswith("HMS_CACHE_PROXY_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


def hive_site(tmp_path: Path, properties: dict[str, str], name: str = "hive-site.xml") -> Path:
    """A file in the shape Hive ships: declaration, stylesheet, licence comment, descriptions."""
    body = "".join(
        f"  <!-- {key} -->\n  <property>\n    <name>{key}</name>\n"
        f"    <value>{_xml_text(value)}</value>\n"
        f"    <description>What {key} means.</description>\n  </property>\n"
        for key, value in properties.items()
    )
    path = tmp_path / name
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        '<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>\n'
        "<!--\n   Licensed to the Apache Software Foundation (ASF) under one or more\n-->\n"
        f"<configuration>\n{body}</configuration>\n"
    )
    return path


POSTGRES = {
    "javax.jdo.option.ConnectionURL": "jdbc:postgresql://db.example.com:5433/metastore",
    "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
    "javax.jdo.option.ConnectionUserName": "hive",
    "javax.jdo.option.ConnectionPassword": PASSWORD,
    "hive.metastore.warehouse.dir": "/data/warehouse",
    "hive.metastore.uris": "thrift://metastore.example.com:9183",
}


def test_a_postgres_metastore_gives_database_warehouse_and_port(tmp_path: Path) -> None:
    s = load_settings(hive_site=str(hive_site(tmp_path, POSTGRES)))
    url = make_url(s.database_url)
    assert (url.drivername, url.host, url.port, url.database) == (
        "postgresql+psycopg2",
        "db.example.com",
        5433,
        "metastore",
    )
    assert (url.username, url.password) == ("hive", PASSWORD)
    # ... and that is what the driver receives
    _, kwargs = PGDialect_psycopg2().create_connect_args(url)
    assert (kwargs["user"], kwargs["password"]) == ("hive", PASSWORD)
    assert (s.warehouse_dir, s.port) == ("/data/warehouse", 9183)
    assert PASSWORD not in repr(s.redacted())


def test_metastore_names_win_over_hive_names_and_a_port_property_over_the_uris(
    tmp_path: Path,
) -> None:
    props = dict(POSTGRES)
    props.update(
        {
            "metastore.warehouse.dir": "file:///srv/wh",
            "hive.metastore.port": "9200",
            "metastore.thrift.port": "9300",
        }
    )
    s = load_settings(hive_site=str(hive_site(tmp_path, props, "metastore-site.xml")))
    assert (s.warehouse_dir, s.port) == ("file:///srv/wh", 9300)


def test_variables_are_resolved_the_way_hive_resolves_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METASTORE_DB_HOST", "pg.internal")
    props = dict(POSTGRES)
    props.update(
        {
            "javax.jdo.option.ConnectionURL": "jdbc:postgresql://${env:METASTORE_DB_HOST}/${db}",
            "db": "hms_${system:user.name}",
            "hive.metastore.warehouse.dir": "${system:java.io.tmpdir}/${system:user.name}/wh",
            "hive.exec.scratchdir": "${not.known.anywhere}/scratch",  # not read: no refusal
        }
    )
    s = load_settings(hive_site=str(hive_site(tmp_path, props)))
    url = make_url(s.database_url)
    assert (url.host, url.port, url.database) == ("pg.internal", 5432, f"hms_{getpass.getuser()}")
    assert s.warehouse_dir == f"{tempfile.gettempdir()}/{getpass.getuser()}/wh"


def test_an_unresolvable_variable_in_a_property_we_use_is_refused(tmp_path: Path) -> None:
    props = dict(POSTGRES, **{"javax.jdo.option.ConnectionPassword": "${env:NO_SUCH_VAR_X}"})
    path = hive_site(tmp_path, props)
    with pytest.raises(SettingsError) as info:
        load_settings(hive_site=str(path))
    message = str(info.value)
    assert "\n" not in message
    assert "javax.jdo.option.ConnectionPassword" in message and "${env:NO_SUCH_VAR_X}" in message
    # the user's own database_url makes the property irrelevant
    s = load_settings(hive_site=str(path), database_url="sqlite:///own.db")
    assert s.database_url == "sqlite:///own.db"


def test_jdbc_url_forms(tmp_path: Path) -> None:
    def url_of(jdbc: str, **extra: str) -> object:
        props = dict(POSTGRES, **{"javax.jdo.option.ConnectionURL": jdbc}, **extra)
        return make_url(load_settings(hive_site=str(hive_site(tmp_path, props))).database_url)

    plain = url_of("jdbc:postgresql://db/metastore")
    assert (plain.host, plain.port) == ("db", 5432)  # pgjdbc's default port
    local = url_of("jdbc:postgresql:metastore")
    assert (local.host, local.database) == ("localhost", "metastore")
    hosts = url_of("jdbc:postgresql://db1:5432,db2:5433/metastore?targetServerType=primary")
    assert hosts.query["host"] == ("db1:5432", "db2:5433")
    assert hosts.query["target_session_attrs"] == "read-write"
    ssl = url_of("jdbc:postgresql://db/m?ssl=true&sslrootcert=/etc/ca.pem&connectTimeout=5")
    assert dict(ssl.query) == {"sslmode": "verify-full", "sslrootcert": "/etc/ca.pem"}
    mode = url_of("jdbc:postgresql://db/m?sslmode=require")
    assert mode.query["sslmode"] == "require"
    in_url = url_of("jdbc:postgresql://db/m?user=other&password=a%26b%40c")
    assert (in_url.username, in_url.password) == ("other", "a&b@c")  # the URL wins, as in pgjdbc


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        (
            {"javax.jdo.option.ConnectionURL": "jdbc:derby:;databaseName=metastore_db;create=true"},
            "Derby",
        ),
        ({"javax.jdo.option.ConnectionURL": "jdbc:mysql://db:3306/hive"}, "MySQL"),
        ({"javax.jdo.option.ConnectionURL": "jdbc:mariadb://db:3306/hive"}, "MariaDB"),
        ({"javax.jdo.option.ConnectionURL": "jdbc:oracle:thin:@db:1521:XE"}, "Oracle"),
        ({"javax.jdo.option.ConnectionURL": "jdbc:sqlserver://db;databaseName=h"}, "SQL Server"),
        (
            {
                "javax.jdo.option.ConnectionPassword": "",
                "hadoop.security.credential.provider.path": "jceks://file/etc/hive/hive.jceks",
            },
            "credential provider",
        ),
        ({"javax.jdo.option.ConnectionURL": ""}, "no javax.jdo.option.ConnectionURL"),
        ({"hive.metastore.sasl.enabled": "true"}, "Kerberos"),
        ({"metastore.sasl.enabled": "true"}, "Kerberos"),
        ({"metastore.use.SSL": "true"}, "PEM files"),
        ({"metastore.authentication": "LDAP"}, "SASL PLAIN"),
        (
            {"javax.jdo.option.ConnectionURL": "jdbc:postgresql://db/m?currentSchema=hive"},
            "search_path",
        ),
    ],
)
def test_what_cannot_be_served_is_refused_in_one_line(
    tmp_path: Path, properties: dict[str, str], expected: str
) -> None:
    path = hive_site(tmp_path, {k: v for k, v in {**POSTGRES, **properties}.items() if v})
    with pytest.raises(SettingsError) as info:
        load_settings(hive_site=str(path))
    message = str(info.value)
    assert expected in message and str(path) in message
    assert "\n" not in message and "Traceback" not in message


def test_the_users_own_settings_lift_a_refusal_they_cover(tmp_path: Path) -> None:
    props = dict(POSTGRES, **{"javax.jdo.option.ConnectionURL": "jdbc:mysql://db/hive"})
    s = load_settings(hive_site=str(hive_site(tmp_path, props)), database_url="sqlite:///m.db")
    assert (s.database_url, s.port) == ("sqlite:///m.db", 9183)  # the rest still comes from it
    kerberos = hive_site(tmp_path, dict(POSTGRES, **{"hive.metastore.sasl.enabled": "true"}))
    conf = tmp_path / "c.yaml"
    conf.write_text("sasl_enabled: true\nsasl_users: {alice: secret}\n")
    assert load_settings(conf, hive_site=str(kerberos)).sasl_enabled


def test_precedence_hive_site_then_yaml_then_environment_then_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(hive_site(tmp_path, POSTGRES))
    conf = tmp_path / "c.yaml"
    conf.write_text(f"hive_site: {path}\nport: 9084\n")
    assert load_settings(conf).port == 9084
    assert load_settings(conf).warehouse_dir == "/data/warehouse"
    monkeypatch.setenv("HMS_CACHE_PROXY_PORT", "9085")
    assert load_settings(conf).port == 9085
    assert load_settings(conf, port=9086).port == 9086
    # the documented file repeats every default: a copy of it does not mask hive-site
    documented = Path(__file__).resolve().parents[2] / "conf" / "hms-cache-proxy.yaml"
    s = load_settings(documented, hive_site=path)
    assert make_url(s.database_url).host == "db.example.com"
    # and the variable names the file too
    monkeypatch.delenv("HMS_CACHE_PROXY_PORT")
    monkeypatch.setenv("HMS_CACHE_PROXY_HIVE_SITE", path)
    assert load_settings().port == 9183


def test_an_overridden_property_is_noted_for_the_log(tmp_path: Path) -> None:
    notes: list[str] = []
    load_settings(hive_site=str(hive_site(tmp_path, POSTGRES)), port=9999, notes=notes)
    assert any("hive.metastore.uris is overridden by port" in n for n in notes)


def test_a_final_property_is_not_redefined(tmp_path: Path) -> None:
    path = tmp_path / "hive-site.xml"
    path.write_text(
        "<configuration>"
        + "".join(
            f"<property><name>{k}</name><value>{_xml_text(v)}</value></property>"
            for k, v in POSTGRES.items()
        )
        + "<property><name>hive.metastore.port</name><value>9400</value><final>true</final>"
        "</property><property><name>hive.metastore.port</name><value>9500</value></property>"
        "</configuration>"
    )
    assert load_settings(hive_site=str(path)).port == 9400


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "does not exist"),
        ("<configuration><property><name>x</name></configuration>", "not well-formed XML"),
        ("<properties/>", "not a Hadoop configuration file"),
        (
            '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 '
            '"&lol;&lol;&lol;&lol;">]>\n<configuration><property><name>x</name>'
            "<value>&lol2;</value></property></configuration>",
            "<!DOCTYPE>",
        ),
        (
            '<?xml version="1.0"?>\n<!DOCTYPE c SYSTEM "file:///etc/passwd">\n<configuration/>',
            "<!DOCTYPE>",
        ),
    ],
)
def test_a_file_that_cannot_be_read_is_refused_naming_the_setting(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "hive-site.xml"
    if content is not None:
        path.write_text(content)
    flags = {"hive_site": "--hive-site"}
    with pytest.raises(SettingsError) as info:
        load_settings(hive_site=str(path), flag_names=flags)
    message = str(info.value)
    assert message.startswith("--hive-site: ") and expected in message and "\n" not in message


def test_a_bare_warehouse_path_is_qualified_with_the_files_default_filesystem(
    tmp_path: Path,
) -> None:
    props = dict(POSTGRES, **{"fs.defaultFS": "hdfs://namenode:8020"})
    notes: list[str] = []
    s = load_settings(hive_site=str(hive_site(tmp_path, props)), notes=notes)
    assert s.warehouse_dir == "hdfs://namenode:8020/data/warehouse"
    assert any("neither made nor deleted" in n for n in notes)
    local = dict(POSTGRES, **{"fs.defaultFS": "file:///"})
    assert (
        load_settings(hive_site=str(hive_site(tmp_path, local))).warehouse_dir == "/data/warehouse"
    )


def test_the_external_warehouse_is_read_like_the_warehouse(tmp_path: Path) -> None:
    # not set: no external warehouse (and nothing noted about it)
    notes: list[str] = []
    s = load_settings(hive_site=str(hive_site(tmp_path, POSTGRES)), notes=notes)
    assert s.external_warehouse_dir is None and not any("external" in n for n in notes)
    # the metastore. name before the hive. one, variables resolved
    props = dict(
        POSTGRES,
        **{
            "hive.metastore.warehouse.external.dir": "/data/hive-external",
            "metastore.warehouse.external.dir": "${system:java.io.tmpdir}/external",
        },
    )
    path = str(hive_site(tmp_path, props))
    assert load_settings(hive_site=path).external_warehouse_dir == (
        f"{tempfile.gettempdir()}/external"
    )
    only_hive = dict(POSTGRES, **{"hive.metastore.warehouse.external.dir": "/data/external"})
    s = load_settings(hive_site=str(hive_site(tmp_path, only_hive)))
    assert s.external_warehouse_uri() == "file:/data/external"
    assert s.filesystem_root_uris()[:2] == ["file:/data/warehouse", "file:/data/external"]
    # a bare path is on fs.defaultFS, as for the warehouse
    on_hdfs = dict(only_hive, **{"fs.defaultFS": "hdfs://namenode:8020"})
    notes = []
    s = load_settings(hive_site=str(hive_site(tmp_path, on_hdfs)), notes=notes)
    assert s.external_warehouse_dir == "hdfs://namenode:8020/data/external"
    assert any(
        n.endswith(
            "hive.metastore.warehouse.external.dir=hdfs://namenode:8020/data/external: "
            "locations on this filesystem are recorded but their directories are neither "
            "made nor deleted by hms-cache-proxy"
        )
        for n in notes
    ), notes
    # the user's own setting wins, and the log says which property it overrides
    notes = []
    flags = {"external_warehouse_dir": "--external-warehouse-dir"}
    s = load_settings(
        hive_site=path, external_warehouse_dir="/srv/ext", flag_names=flags, notes=notes
    )
    assert s.external_warehouse_dir == "/srv/ext"
    assert any(
        "metastore.warehouse.external.dir is overridden by --external-warehouse-dir" in n
        for n in notes
    ), notes
    # the filesystem root is refused in one line naming the property
    root = dict(POSTGRES, **{"metastore.warehouse.external.dir": "/"})
    with pytest.raises(SettingsError) as info:
        load_settings(hive_site=str(hive_site(tmp_path, root)))
    message = str(info.value)
    assert message.startswith("metastore.warehouse.external.dir in ") and "\n" not in message
    assert "would confine nothing" in message


def test_the_min_history_switches_are_read_under_both_names(tmp_path: Path) -> None:
    s = load_settings(hive_site=str(hive_site(tmp_path, POSTGRES)))
    assert (s.txn_use_min_history_level, s.txn_use_min_history_write_id) == (True, False)
    props = dict(POSTGRES)
    props.update(
        {
            "hive.txn.use.minhistorylevel": "true",
            "metastore.txn.use.minhistorylevel": "FALSE",
            "hive.txn.use.minhistorywriteid": "True",
        }
    )
    s = load_settings(hive_site=str(hive_site(tmp_path, props)))
    assert (s.txn_use_min_history_level, s.txn_use_min_history_write_id) == (False, True)


def test_a_min_history_switch_that_is_not_a_boolean_is_refused(tmp_path: Path) -> None:
    props = dict(POSTGRES)
    props["metastore.txn.use.minhistorylevel"] = "no"
    with pytest.raises(SettingsError, match="metastore.txn.use.minhistorylevel=no: expected true"):
        load_settings(hive_site=str(hive_site(tmp_path, props)))
