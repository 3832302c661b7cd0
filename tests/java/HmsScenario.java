// A fixed scenario of metastore calls made through Hive 2.3.10's own client
// (HiveMetaStoreClient, as Spark embeds it). Each call prints one normalised line, so that two
// runs against two servers can be compared line by line
// (tests/integration/test_java_client_scenario.py).
//
// Usage: java HmsScenario <thrift uri> <warehouse dir> <result file> <timing file>
//
// A line is "NNN call | summary": the result in a canonical form, or "!ExceptionClass".
// The canonical form prints Thrift structs field by field (a field sent with the value a new
// struct has reads as one left unset; Hive 3's catalog names are left out), sorts a call's
// list answer (its order is not part of the API), and masks what differs between any two
// runs: times, the warehouse path (<wh>), and transaction, lock, event and compaction ids,
// printed as offsets from the first one seen. Call names are unique: the test allows
// documented differences by name. Wall times go to the timing file, which is not compared.

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.hive.common.ValidTxnList;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.TableType;
import org.apache.hadoop.hive.metastore.api.*;
import org.apache.hadoop.hive.metastore.partition.spec.PartitionSpecProxy;
import org.apache.thrift.TBase;
import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.meta_data.FieldMetaData;

public class HmsScenario {
    interface Call {
        Object run() throws Exception;
    }

    private static final String DB = "jsc_db";
    private static final String DB2 = "jsc_db2";
    private static final String ORC_IN = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat";
    private static final String ORC_OUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat";
    private static final String ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde";
    private static final String TEXT_IN = "org.apache.hadoop.mapred.TextInputFormat";
    private static final String TEXT_OUT =
            "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat";
    private static final String LAZY = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe";

    private final IMetaStoreClient client;
    private final String warehouse;
    private final PrintWriter out;
    private final PrintWriter times;
    private final Map<String, Long> bases = new HashMap<>();
    private int seq = 0;

    HmsScenario(IMetaStoreClient client, String warehouse, PrintWriter out, PrintWriter times) {
        this.client = client;
        this.warehouse = warehouse;
        this.out = out;
        this.times = times;
    }

    public static void main(String[] args) throws Exception {
        HiveConf conf = new HiveConf();
        conf.setVar(HiveConf.ConfVars.METASTOREURIS, args[0]);
        conf.setIntVar(HiveConf.ConfVars.METASTORETHRIFTCONNECTIONRETRIES, 1);
        conf.setIntVar(HiveConf.ConfVars.METASTORETHRIFTFAILURERETRIES, 0);
        conf.set("hive.metastore.client.socket.timeout", "120");
        String warehouse = Paths.get(args[1]).toAbsolutePath().normalize().toString();
        long started = System.nanoTime();
        IMetaStoreClient client = new HiveMetaStoreClient(conf);
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(args[2]),
                        StandardCharsets.UTF_8));
                PrintWriter times = new PrintWriter(Files.newBufferedWriter(Paths.get(args[3]),
                        StandardCharsets.UTF_8))) {
            HmsScenario s = new HmsScenario(client, warehouse, out, times);
            s.scenario();
            times.printf("total %d calls %.1f ms%n", s.seq, (System.nanoTime() - started) / 1e6);
        } finally {
            client.close();
        }
    }

    // -- running and printing ---------------------------------------------------------------

    private void call(String name, Call c) {
        seq++;
        long t0 = System.nanoTime();
        String line;
        try {
            Object result = c.run();
            line = canon(result, "");
        } catch (Exception e) {
            line = "!" + e.getClass().getSimpleName();
            if (e instanceof org.apache.thrift.protocol.TProtocolException
                    || e instanceof org.apache.thrift.transport.TTransportException) {
                // The connection is out of step after an answer it could not read: start over,
                // as RetryingMetaStoreClient would.
                try {
                    client.reconnect();
                } catch (Exception again) {
                    line += " (reconnect failed: " + again.getClass().getSimpleName() + ")";
                }
            }
        }
        long t1 = System.nanoTime();
        out.printf("%03d %s | %s%n", seq, name, line);
        times.printf("%03d %s %.2f ms%n", seq, name, (t1 - t0) / 1e6);
    }

    private long offset(String kind, long value) {
        Long base = bases.get(kind);
        if (base == null) {
            bases.put(kind, value);
            base = value;
        }
        return value - base;
    }

    private static final Map<String, String> ID_KINDS = new HashMap<>();
    private static final List<String> MASKED = Arrays.asList(
            "createTime", "lastAccessTime", "lastAnalyzed", "eventTime", "lastheartbeat",
            "acquiredat", "startedTime", "lastHeartbeatTime", "grantTime", "hostname",
            "enqueueTime", "start", "message", "messageFormat", "lastUpdateTime",
            "transient_lastDdlTime");

    // Hive 3 catalogs: a Hive 2.3 server never fills these fields of its own structs (see
    // docs/compatibility.md, "Hive's own client, compared"), so they are left out.
    private static final List<String> CATALOG_FIELDS = Arrays.asList("catName", "catalogName");

    static {
        for (String f : Arrays.asList("txnid", "txnId", "txn_ids", "txn_high_water_mark",
                "min_open_txn", "open_txns", "aborted", "nosuch", "txnIds", "id@TxnInfo")) {
            ID_KINDS.put(f, "txn");
        }
        ID_KINDS.put("lockid", "lock");
        ID_KINDS.put("eventId", "event");
        ID_KINDS.put("id@ShowCompactResponseElement", "compaction");
        ID_KINDS.put("id@CompactionResponse", "compaction");
    }

    private String masked(String field, String kind, Object value) {
        if (value instanceof Long || value instanceof Integer) {
            return String.valueOf(offset(kind, ((Number) value).longValue()));
        }
        if (value instanceof java.util.Collection) {
            List<String> parts = new ArrayList<>();
            for (Object v : (java.util.Collection<?>) value) {
                parts.add(masked(field, kind, v));
            }
            Collections.sort(parts);
            return parts.toString();
        }
        return canon(value, field);
    }

    private String location(String s) {
        for (String prefix : new String[] {"file://" + warehouse, "file:" + warehouse, warehouse}) {
            if (s.startsWith(prefix)) {
                return "<wh>" + s.substring(prefix.length());
            }
        }
        return s.replaceFirst("^([a-z]+)://[^/]*", "$1://<host>");
    }

    @SuppressWarnings("unchecked")
    private String canon(Object o, String field) {
        if (o == null) {
            return "null";
        }
        if (o instanceof String) {
            String s = (String) o;
            if (field.toLowerCase().contains("location") || field.equals("rootPath")
                    || s.startsWith("file:")) {
                return location(s);
            }
            return "'" + s + "'";
        }
        if (o instanceof TBase) {
            TBase<?, TFieldIdEnum> t = (TBase<?, TFieldIdEnum>) o;
            String type = o.getClass().getSimpleName();
            StringBuilder b = new StringBuilder(type).append('{');
            Map<? extends TFieldIdEnum, FieldMetaData> meta =
                    FieldMetaData.getStructMetaDataMap((Class<? extends TBase>) o.getClass());
            TBase<?, TFieldIdEnum> fresh = null;
            try {
                fresh = (TBase<?, TFieldIdEnum>) o.getClass().getDeclaredConstructor()
                        .newInstance();
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
            boolean first = true;
            for (TFieldIdEnum f : meta.keySet()) {
                String name = f.getFieldName();
                if (!t.isSet(f) || CATALOG_FIELDS.contains(name)) {
                    continue;
                }
                Object v = t.getFieldValue(f);
                String kind = ID_KINDS.get(name + "@" + type);
                if (kind == null) {
                    kind = ID_KINDS.get(name);
                }
                if (kind == null && v != null && v.equals(fresh.getFieldValue(f))) {
                    continue; // a field sent with its default value reads as one left unset
                }
                String text;
                if (MASKED.contains(name)) {
                    text = "<masked>";
                } else if (kind != null) {
                    text = masked(name, kind, v);
                } else {
                    text = canon(v, name);
                }
                b.append(first ? "" : ", ").append(name).append('=').append(text);
                first = false;
            }
            return b.append('}').toString();
        }
        if (o instanceof Map) {
            TreeMap<String, String> sorted = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                String k = String.valueOf(e.getKey());
                sorted.put(k, MASKED.contains(k) ? "<masked>" : canon(e.getValue(), k));
            }
            return sorted.toString();
        }
        if (o instanceof java.util.Collection) {
            List<String> parts = new ArrayList<>();
            for (Object v : (java.util.Collection<?>) o) {
                parts.add(canon(v, field));
            }
            if (field.isEmpty()) {
                // A call's list answer: its order is not part of the API (and Hive's own
                // differs between its SQL and JDO paths), so it is compared sorted.
                Collections.sort(parts);
            }
            return parts.toString();
        }
        if (o instanceof ValidTxnList) {
            ValidTxnList v = (ValidTxnList) o;
            List<String> invalid = new ArrayList<>();
            for (long id : v.getInvalidTransactions()) {
                invalid.add(String.valueOf(offset("txn", id)));
            }
            return "ValidTxnList{hwm=" + offset("txn", v.getHighWatermark()) + ", invalid="
                    + invalid + "}";
        }
        if (o instanceof PartitionSpecProxy) {
            try {
                return canon(((PartitionSpecProxy) o).toPartitionSpec(), field);
            } catch (Exception e) {
                return "!" + e.getClass().getSimpleName();
            }
        }
        if (o instanceof Enum || o instanceof Number || o instanceof Boolean) {
            return o.toString();
        }
        if (o instanceof byte[]) {
            return "bytes" + ((byte[]) o).length;
        }
        return o.getClass().getSimpleName() + ":" + o;
    }

    // -- builders ----------------------------------------------------------------------------

    private static List<FieldSchema> cols(String... spec) {
        List<FieldSchema> out = new ArrayList<>();
        for (String s : spec) {
            String[] p = s.split(":", 2);
            out.add(new FieldSchema(p[0], p[1], "c " + p[0]));
        }
        return out;
    }

    private static StorageDescriptor sd(List<FieldSchema> cols, String location, boolean orc) {
        StorageDescriptor sd = new StorageDescriptor();
        sd.setCols(cols);
        sd.setLocation(location);
        sd.setInputFormat(orc ? ORC_IN : TEXT_IN);
        sd.setOutputFormat(orc ? ORC_OUT : TEXT_OUT);
        sd.setCompressed(false);
        sd.setNumBuckets(-1);
        Map<String, String> serdeParams = new HashMap<>();
        serdeParams.put("serialization.format", "1");
        sd.setSerdeInfo(new SerDeInfo(null, orc ? ORC_SERDE : LAZY, serdeParams));
        sd.setBucketCols(new ArrayList<>());
        sd.setSortCols(new ArrayList<>());
        sd.setParameters(new HashMap<>());
        return sd;
    }

    private static Table table(String db, String name, List<FieldSchema> keys,
            Map<String, String> params, String type, String location, boolean orc) {
        Table t = new Table();
        t.setDbName(db);
        t.setTableName(name);
        t.setOwner("alice");
        t.setSd(sd(cols("id:bigint", "name:string", "amount:double"), location, orc));
        t.setPartitionKeys(keys);
        t.setParameters(params);
        t.setTableType(type);
        return t;
    }

    private static Map<String, String> map(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    private Partition partition(String tbl, String ds, String hr) throws Exception {
        Table t = client.getTable(DB, tbl);
        Partition p = new Partition();
        p.setDbName(DB);
        p.setTableName(tbl);
        p.setValues(Arrays.asList(ds, hr));
        StorageDescriptor s = t.getSd().deepCopy();
        s.setLocation(null);
        p.setSd(s);
        p.setParameters(map("origin", "java"));
        return p;
    }

    private static ColumnStatistics stats(String db, String tbl, String partName, long seed) {
        ColumnStatisticsDesc desc = new ColumnStatisticsDesc(partName == null, db, tbl);
        if (partName != null) {
            desc.setPartName(partName);
        }
        List<ColumnStatisticsObj> objs = new ArrayList<>();
        LongColumnStatsData l = new LongColumnStatsData(seed, 100 + seed);
        l.setLowValue(seed);
        l.setHighValue(1000 + seed);
        objs.add(new ColumnStatisticsObj("id", "bigint", ColumnStatisticsData.longStats(l)));
        StringColumnStatsData s = new StringColumnStatsData(20 + seed, 5.5, 2, 40 + seed);
        objs.add(new ColumnStatisticsObj("name", "string", ColumnStatisticsData.stringStats(s)));
        DoubleColumnStatsData d = new DoubleColumnStatsData(1, 30 + seed);
        d.setLowValue(0.5);
        d.setHighValue(99.5 + seed);
        objs.add(new ColumnStatisticsObj("amount", "double",
                ColumnStatisticsData.doubleStats(d)));
        return new ColumnStatistics(desc, objs);
    }

    private static LockComponent component(LockType type, LockLevel level, String db,
            String tbl, String part, DataOperationType op) {
        LockComponent c = new LockComponent(type, level, db);
        if (tbl != null) {
            c.setTablename(tbl);
        }
        if (part != null) {
            c.setPartitionname(part);
        }
        if (op != null) {
            c.setOperationType(op);
            c.setIsAcid(true);
        }
        return c;
    }

    private static HiveObjectRef tableRef(String db, String tbl) {
        return new HiveObjectRef(HiveObjectType.TABLE, db, tbl, null, null);
    }

    private static PrivilegeBag privileges(String principal, PrincipalType type, String priv,
            HiveObjectRef ref) {
        PrivilegeGrantInfo info = new PrivilegeGrantInfo(priv, 0, "admin", PrincipalType.USER,
                false);
        return new PrivilegeBag(Collections.singletonList(
                new HiveObjectPrivilege(ref, principal, type, info)));
    }

    // -- the scenario -------------------------------------------------------------------------

    void scenario() throws Exception {
        databases();
        tables();
        partitions();
        exchanges();
        expectedParameterAlters();
        statistics();
        rereads();
        constraints();
        transactions();
        transactionLoop();
        roles();
        notificationsAndConfig();
        errors();
        functions();
        cleanup();
    }

    private void databases() {
        call("getAllDatabases", () -> client.getAllDatabases());
        call("getDatabase default", () -> client.getDatabase("default"));
        call("createDatabase", () -> {
            Database d = new Database(DB, "java scenario", null, map("k", "v"));
            d.setOwnerName("alice"); // as Spark sets it
            d.setOwnerType(PrincipalType.USER);
            client.createDatabase(d);
            return "ok";
        });
        call("createDatabase located", () -> {
            client.createDatabase(new Database(DB2, null, "file:" + warehouse + "/elsewhere/db2",
                    new HashMap<>()));
            return "ok";
        });
        call("createDatabase again", () -> {
            client.createDatabase(new Database(DB, null, null, null));
            return "ok";
        });
        for (String name : new String[] {DB, DB2, "JSC_DB", "jsc_missing"}) {
            call("getDatabase " + name, () -> client.getDatabase(name));
        }
        call("alterDatabase", () -> {
            Database d = client.getDatabase(DB);
            d.putToParameters("altered", "yes");
            d.setDescription("changed");
            client.alterDatabase(DB, d);
            return client.getDatabase(DB);
        });
        call("alterDatabase owner", () -> {
            Database d = client.getDatabase(DB2);
            d.setOwnerName("bob");
            d.setOwnerType(PrincipalType.USER);
            client.alterDatabase(DB2, d);
            return client.getDatabase(DB2);
        });
        for (String pattern : new String[] {"jsc_*", "jsc_db|default", "*", "nothing*",
                "JSC*"}) {
            call("getDatabases " + pattern, () -> client.getDatabases(pattern));
        }
        call("createDatabase bad name", () -> {
            client.createDatabase(new Database("bad name!", null, null, null));
            return "ok";
        });
        call("dropDatabase bad name ignored", () -> {
            client.dropDatabase("bad name!", true, true, false);
            return "ok";
        });
        call("createDatabase tmp", () -> {
            client.createDatabase(new Database("jsc_tmp", null, null, null));
            return "ok";
        });
        call("dropDatabase tmp", () -> {
            client.dropDatabase("jsc_tmp");
            return "ok";
        });
        call("getDatabase dropped", () -> client.getDatabase("jsc_tmp"));
        call("dropDatabase missing ignored", () -> {
            client.dropDatabase("jsc_missing", true, true, false);
            return "ok";
        });
    }

    private void tables() throws Exception {
        call("createTable managed", () -> {
            client.createTable(table(DB, "t_plain", new ArrayList<>(), map("p", "1"),
                    "MANAGED_TABLE", null, false));
            return "ok";
        });
        call("createTable external", () -> {
            client.createTable(table(DB, "t_ext", new ArrayList<>(), map("EXTERNAL", "TRUE"),
                    "EXTERNAL_TABLE", "file:" + warehouse + "/ext/t_ext", false));
            return "ok";
        });
        call("createTable partitioned", () -> {
            client.createTable(table(DB, "t_part", cols("ds:string", "hr:int"),
                    map("p", "2"), "MANAGED_TABLE", null, false));
            return "ok";
        });
        call("createTable acid", () -> {
            Table t = table(DB, "t_acid", cols("ds:string", "hr:int"),
                    map("transactional", "true"), "MANAGED_TABLE", null, true);
            t.getSd().setNumBuckets(2);
            t.getSd().setBucketCols(Collections.singletonList("id"));
            client.createTable(t);
            return "ok";
        });
        call("createTable insert-only", () -> {
            client.createTable(table(DB2, "t_mm", new ArrayList<>(),
                    map("transactional", "true", "transactional_properties", "insert_only"),
                    "MANAGED_TABLE", null, false));
            return "ok";
        });
        call("createTable stats", () -> {
            client.createTable(table(DB, "t_stats", cols("ds:string", "hr:int"),
                    new HashMap<>(), "MANAGED_TABLE", null, false));
            return "ok";
        });
        call("createTable view", () -> {
            Table v = table(DB, "v_plain", new ArrayList<>(), new HashMap<>(),
                    "VIRTUAL_VIEW", null, false);
            v.setViewOriginalText("select * from t_plain");
            v.setViewExpandedText("select `t_plain`.`id` from `jsc_db`.`t_plain`");
            v.getSd().setInputFormat(null);
            v.getSd().setOutputFormat(null);
            client.createTable(v);
            return "ok";
        });
        for (int i = 0; i < 5; i++) {
            String name = "t_many" + i;
            call("createTable " + name, () -> {
                client.createTable(table(DB, name, new ArrayList<>(), map("i", name),
                        "MANAGED_TABLE", null, false));
                return "ok";
            });
        }
        call("createTable again", () -> {
            client.createTable(table(DB, "t_plain", new ArrayList<>(), null, "MANAGED_TABLE",
                    null, false));
            return "ok";
        });
        call("createTable missing db", () -> {
            client.createTable(table("jsc_missing", "t", new ArrayList<>(), null,
                    "MANAGED_TABLE", null, false));
            return "ok";
        });
        call("createTable bad type", () -> {
            Table t = table(DB, "t_bad", new ArrayList<>(), null, "MANAGED_TABLE", null, false);
            t.getSd().setCols(cols("a:notatype<"));
            client.createTable(t);
            return "ok";
        });
        call("createTable bad name", () -> {
            client.createTable(table(DB, "bad name!", new ArrayList<>(), null, "MANAGED_TABLE",
                    null, false));
            return "ok";
        });
        call("dropTable bad name ignored", () -> {
            client.dropTable(DB, "bad name!", true, true);
            return "ok";
        });
        for (String name : new String[] {"t_plain", "t_ext", "t_part", "t_acid", "v_plain",
                "T_PLAIN", "t_missing"}) {
            call("getTable " + name, () -> client.getTable(DB, name));
        }
        call("getTable t_mm", () -> client.getTable(DB2, "t_mm"));
        call("getTable missing db", () -> client.getTable("jsc_missing", "t_plain"));
        for (String pattern : new String[] {"*", "t_p*", "t_many*|v_*", "nothing", "T_*"}) {
            call("getTables " + pattern, () -> client.getTables(DB, pattern));
        }
        call("getAllTables", () -> client.getAllTables(DB));
        call("getAllTables missing db", () -> client.getAllTables("jsc_missing"));
        for (TableType type : new TableType[] {TableType.EXTERNAL_TABLE, TableType.VIRTUAL_VIEW,
                TableType.MANAGED_TABLE}) {
            call("getTables by type " + type, () -> client.getTables(DB, "*", type));
        }
        call("getTableMeta", () -> {
            List<TableMeta> metas = client.getTableMeta(DB, "t_*", null);
            List<String> out = new ArrayList<>();
            for (TableMeta m : metas) {
                out.add(canon(m, ""));
            }
            Collections.sort(out);
            return out;
        });
        call("getTableMeta views", () -> client.getTableMeta(DB, "*",
                Collections.singletonList("VIRTUAL_VIEW")));
        call("tableExists", () -> client.tableExists(DB, "t_plain"));
        call("tableExists missing", () -> client.tableExists(DB, "t_missing"));
        call("getFields", () -> client.getFields(DB, "t_plain"));
        call("getSchema partitioned", () -> client.getSchema(DB, "t_part"));
        call("getFields missing", () -> client.getFields(DB, "t_missing"));
        call("getSchema missing db", () -> client.getSchema("jsc_missing", "t"));
        call("getTableObjectsByName", () -> client.getTableObjectsByName(DB,
                Arrays.asList("t_ext", "t_missing", "t_plain")));
        call("getTableObjectsByName missing db", () -> client.getTableObjectsByName(
                "jsc_missing", Arrays.asList("t_plain")));
        for (String filter : new String[] {"hive_filter_field_owner__ = \"alice\"",
                "hive_filter_field_params__p = \"1\"",
                "hive_filter_field_params__i <> \"t_many1\"",
                "hive_filter_field_last_access__ = 0",
                "hive_filter_field_params__p = \"1\" or hive_filter_field_params__p = \"2\"",
                // LIKE takes a JDOQL matches() pattern, run by DataNucleus as SQL LIKE.
                "hive_filter_field_owner__ like \"ali.*\"",
                "hive_filter_field_owner__ like \"a.ice\"",
                "hive_filter_field_owner__ like \"ali%\"",
                "hive_filter_field_owner__ like \"al[i]ce\"",
                "hive_filter_field_owner__ like \"alice|bob\"",
                "hive_filter_field_owner__ like \"(?i)ALI.*\"",
                "hive_filter_field_owner__ like \"alic\"",
                "hive_filter_field_params__p like \"[12]\"",
                "hive_filter_field_params__p like \".\""}) {
            call("listTableNamesByFilter " + filter,
                    () -> client.listTableNamesByFilter(DB, filter, (short) -1));
        }
        call("alter_table add column", () -> {
            Table t = client.getTable(DB, "t_plain");
            t.getSd().addToCols(new FieldSchema("extra", "int", null));
            t.putToParameters("altered", "1");
            client.alter_table(DB, "t_plain", t);
            return client.getTable(DB, "t_plain");
        });
        call("alter_table rename", () -> {
            Table t = client.getTable(DB, "t_many4");
            t.setTableName("t_renamed");
            client.alter_table(DB, "t_many4", t);
            return client.getTable(DB, "t_renamed");
        });
        call("getTable renamed away", () -> client.getTable(DB, "t_many4"));
        call("alter_table cascade", () -> {
            Table t = client.getTable(DB, "t_many3");
            t.putToParameters("cascaded", "1");
            client.alter_table(DB, "t_many3", t, true);
            return client.getTable(DB, "t_many3");
        });
        call("alter_table missing", () -> {
            Table t = client.getTable(DB, "t_many2");
            t.setTableName("t_nowhere");
            client.alter_table(DB, "t_nowhere", t);
            return "ok";
        });
        call("alter_table rename to existing", () -> {
            Table t = client.getTable(DB, "t_many2");
            t.setTableName("t_many1");
            client.alter_table(DB, "t_many2", t);
            return "ok";
        });
        call("alter_table incompatible column type", () -> {
            Table t = client.getTable(DB, "t_many1");
            t.getSd().getCols().get(0).setType("map<string,int>");
            client.alter_table(DB, "t_many1", t);
            return "ok";
        });
        call("alter_table external", () -> {
            Table t = client.getTable(DB, "t_many0");
            t.putToParameters("EXTERNAL", "TRUE");
            t.setTableType("EXTERNAL_TABLE");
            client.alter_table(DB, "t_many0", t);
            return client.getTable(DB, "t_many0");
        });
        call("dropTable external", () -> {
            client.dropTable(DB, "t_ext", false, false);
            return "ok";
        });
        call("dropTable missing", () -> {
            client.dropTable(DB, "t_missing", true, false);
            return "ok";
        });
        call("dropTable missing ignored", () -> {
            client.dropTable(DB, "t_missing", true, true);
            return "ok";
        });
        call("dropTable missing db", () -> {
            client.dropTable("jsc_missing", "t", true, false);
            return "ok";
        });
        call("getAllTables after", () -> client.getAllTables(DB));
    }

    // ALTER TABLE ... EXCHANGE PARTITION: partitions move from a source table to a
    // destination table of the same schema; a partial spec moves every partition under it.
    private void exchanges() throws Exception {
        for (String name : new String[] {"t_xsrc", "t_xdst"}) {
            call("createTable " + name, () -> {
                client.createTable(table(DB, name, cols("ds:string", "hr:int"),
                        new HashMap<>(), "MANAGED_TABLE", null, false));
                return "ok";
            });
        }
        call("createTable t_xother", () -> {
            client.createTable(table(DB, "t_xother", cols("ds:string"), new HashMap<>(),
                    "MANAGED_TABLE", null, false));
            return "ok";
        });
        for (String day : new String[] {"2024-02-01", "2024-02-02", "2024-02-03"}) {
            for (String hr : new String[] {"0", "1"}) {
                call("add_partition t_xsrc " + day + "/" + hr,
                        () -> client.add_partition(partition("t_xsrc", day, hr)));
            }
        }
        call("add_partition t_xdst 2024-02-03/0",
                () -> client.add_partition(partition("t_xdst", "2024-02-03", "0")));
        call("exchange_partition", () -> client.exchange_partition(
                map("ds", "2024-02-01", "hr", "0"), DB, "t_xsrc", DB, "t_xdst"));
        call("exchange_partitions prefix", () -> {
            List<String> names = new ArrayList<>();
            for (Partition p : client.exchange_partitions(map("ds", "2024-02-02"), DB,
                    "t_xsrc", DB, "t_xdst")) {
                names.add(p.getValues().toString());
            }
            return names;
        });
        call("exchange_partition already in destination", () -> client.exchange_partition(
                map("ds", "2024-02-03", "hr", "0"), DB, "t_xsrc", DB, "t_xdst"));
        call("exchange_partition other schema", () -> client.exchange_partition(
                map("ds", "2024-02-03"), DB, "t_xsrc", DB, "t_xother"));
        call("exchange_partition missing table", () -> client.exchange_partition(
                map("ds", "2024-02-03", "hr", "1"), DB, "t_xsrc", DB, "t_xmissing"));
        for (String name : new String[] {"t_xsrc", "t_xdst"}) {
            call("listPartitionNames after exchange " + name,
                    () -> client.listPartitionNames(DB, name, (short) -1));
            call("getPartition after exchange " + name, () -> client.getPartition(DB, name,
                    Arrays.asList("2024-02-02", "1")));
        }
    }

    // Iceberg's lock-free commit: alter_table with an EnvironmentContext naming the
    // metadata_location it read. Hive 4 refuses the alter when the table moved on.
    private void expectedParameterAlters() throws Exception {
        call("createTable t_ice", () -> {
            client.createTable(table(DB, "t_ice", new ArrayList<>(),
                    map("EXTERNAL", "TRUE", "table_type", "ICEBERG", "metadata_location", "m1"),
                    "EXTERNAL_TABLE",
                    "file:" + warehouse + "/ext/t_ice", false));
            return "ok";
        });
        call("alter_table expected parameter", () -> {
            Table t = client.getTable(DB, "t_ice");
            t.putToParameters("metadata_location", "m2");
            t.putToParameters("previous_metadata_location", "m1");
            client.alter_table_with_environmentContext(DB, "t_ice", t, new EnvironmentContext(
                    map("expected_parameter_key", "metadata_location",
                            "expected_parameter_value", "m1")));
            return client.getTable(DB, "t_ice").getParameters().get("metadata_location");
        });
        call("alter_table expected parameter stale", () -> {
            Table t = client.getTable(DB, "t_ice");
            t.putToParameters("metadata_location", "m3");
            t.putToParameters("previous_metadata_location", "m1");
            client.alter_table_with_environmentContext(DB, "t_ice", t, new EnvironmentContext(
                    map("expected_parameter_key", "metadata_location",
                            "expected_parameter_value", "m1")));
            return client.getTable(DB, "t_ice").getParameters().get("metadata_location");
        });
        // Stock 2.3.10 loses the table itself when it refuses the stale alter (its rollback
        // undoes the create); dropping it ignoring a missing table keeps later listings alike.
        call("dropTable t_ice ignoring missing", () -> {
            client.dropTable(DB, "t_ice", false, true);
            return "ok";
        });
    }

    private void partitions() throws Exception {
        String[] days = {"2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"};
        for (int h = 0; h < 6; h++) {
            String hr = String.valueOf(h);
            call("add_partition " + days[0] + "/" + h,
                    () -> client.add_partition(partition("t_part", days[0], hr)));
        }
        call("add_partitions batch", () -> {
            List<Partition> ps = new ArrayList<>();
            for (int d = 1; d < 3; d++) {
                for (int h = 0; h < 6; h++) {
                    ps.add(partition("t_part", days[d], String.valueOf(h)));
                }
            }
            return client.add_partitions(ps);
        });
        call("add_partitions ifNotExists", () -> client.add_partitions(Arrays.asList(
                partition("t_part", days[0], "0"), partition("t_part", days[3], "0")), true,
                true));
        call("add_partitions duplicate", () -> client.add_partitions(Arrays.asList(
                partition("t_part", days[0], "1"), partition("t_part", days[3], "1"))));
        call("add_partition duplicate", () -> client.add_partition(
                partition("t_part", days[0], "2")));
        call("add_partition wrong arity", () -> {
            Partition p = partition("t_part", days[3], "5");
            p.setValues(Arrays.asList(days[3]));
            return client.add_partition(p);
        });
        call("add_partition missing table", () -> {
            Partition p = partition("t_part", days[3], "5");
            p.setTableName("t_missing");
            return client.add_partition(p);
        });
        call("add_partition unpartitioned", () -> {
            Partition p = partition("t_part", days[3], "5");
            p.setTableName("t_plain");
            return client.add_partition(p);
        });
        for (int d = 0; d < 3; d++) {
            for (int h = 0; h < 6; h += 2) {
                String day = days[d];
                String hr = String.valueOf(h);
                call("getPartition " + day + "/" + hr,
                        () -> client.getPartition(DB, "t_part", Arrays.asList(day, hr)));
                call("getPartition by name " + day + "/" + hr, () -> client.getPartition(DB,
                        "t_part", "ds=" + day + "/hr=" + hr));
            }
        }
        call("getPartition missing", () -> client.getPartition(DB, "t_part",
                Arrays.asList("1999-01-01", "0")));
        call("getPartition missing by name", () -> client.getPartition(DB, "t_part",
                "ds=1999-01-01/hr=0"));
        call("getPartition bad name", () -> client.getPartition(DB, "t_part", "nonsense"));
        call("getPartition missing table", () -> client.getPartition(DB, "t_missing",
                Arrays.asList("1999-01-01", "0")));
        call("listPartitionNames", () -> client.listPartitionNames(DB, "t_part", (short) -1));
        call("listPartitionNames max 4", () -> client.listPartitionNames(DB, "t_part",
                (short) 4).size());
        call("listPartitionNames by values", () -> client.listPartitionNames(DB, "t_part",
                Arrays.asList(days[1], ""), (short) -1));
        call("listPartitionNames missing table", () -> client.listPartitionNames(DB,
                "t_missing", (short) -1));
        call("listPartitions", () -> client.listPartitions(DB, "t_part", (short) -1).size());
        call("listPartitions by values", () -> client.listPartitions(DB, "t_part",
                Arrays.asList(days[2], "3"), (short) -1));
        for (String filter : new String[] {"ds = \"2024-01-02\"", "hr > 3",
                "ds >= \"2024-01-02\" and hr < 2", "ds like \"2024-01-0%\"",
                "ds = \"2024-01-01\" or hr = 5", "ds <> \"2024-01-01\"", "nosuchkey = 1",
                "ds = = 3"}) {
            call("listPartitionsByFilter " + filter, () -> {
                List<String> names = new ArrayList<>();
                for (Partition p : client.listPartitionsByFilter(DB, "t_part", filter,
                        (short) -1)) {
                    names.add(p.getValues().toString());
                }
                return names;
            });
            call("getNumPartitionsByFilter " + filter,
                    () -> client.getNumPartitionsByFilter(DB, "t_part", filter));
        }
        call("getPartitionsByNames", () -> client.getPartitionsByNames(DB, "t_part",
                Arrays.asList("ds=2024-01-01/hr=1", "ds=2024-01-02/hr=5",
                        "ds=1999-01-01/hr=0")));
        call("listPartitionSpecs", () -> client.listPartitionSpecs(DB, "t_part", -1));
        call("listPartitionSpecsByFilter", () -> client.listPartitionSpecsByFilter(DB,
                "t_part", "hr = 1", -1));
        call("partitionNameToVals", () -> client.partitionNameToVals("ds=2024-01-01/hr=3"));
        call("partitionNameToSpec", () -> client.partitionNameToSpec("ds=a%2Fb/hr=3"));
        call("partitionNameToVals empty", () -> client.partitionNameToVals(""));
        call("validatePartitionNameCharacters", () -> {
            client.validatePartitionNameCharacters(Arrays.asList("x", "y"));
            return "ok";
        });
        for (int h = 0; h < 3; h++) {
            String hr = String.valueOf(h);
            call("alter_partition " + hr, () -> {
                Partition p = client.getPartition(DB, "t_part", Arrays.asList(days[0], hr));
                p.putToParameters("altered", hr);
                client.alter_partition(DB, "t_part", p);
                return client.getPartition(DB, "t_part", Arrays.asList(days[0], hr));
            });
        }
        call("alter_partition missing", () -> {
            Partition p = client.getPartition(DB, "t_part", Arrays.asList(days[0], "0"));
            p.setValues(Arrays.asList("1999-01-01", "0"));
            client.alter_partition(DB, "t_part", p);
            return "ok";
        });
        call("alter_partitions batch", () -> {
            List<Partition> ps = client.listPartitions(DB, "t_part",
                    Arrays.asList(days[1], ""), (short) -1);
            for (Partition p : ps) {
                p.putToParameters("batch", "1");
            }
            client.alter_partitions(DB, "t_part", ps);
            List<String> seen = new ArrayList<>();
            for (Partition p : client.listPartitions(DB, "t_part", Arrays.asList(days[1], ""),
                    (short) -1)) {
                seen.add(p.getValues() + "=" + p.getParameters().get("batch"));
            }
            return seen;
        });
        call("renamePartition", () -> {
            Partition p = client.getPartition(DB, "t_part", Arrays.asList(days[2], "5"));
            p.setValues(Arrays.asList(days[3], "5"));
            client.renamePartition(DB, "t_part", Arrays.asList(days[2], "5"), p);
            return client.getPartition(DB, "t_part", Arrays.asList(days[3], "5"));
        });
        call("renamePartition onto existing", () -> {
            Partition p = client.getPartition(DB, "t_part", Arrays.asList(days[2], "4"));
            p.setValues(Arrays.asList(days[2], "3"));
            client.renamePartition(DB, "t_part", Arrays.asList(days[2], "4"), p);
            return "ok";
        });
        call("renamePartition missing", () -> {
            Partition p = client.getPartition(DB, "t_part", Arrays.asList(days[2], "4"));
            p.setValues(Arrays.asList(days[3], "4"));
            client.renamePartition(DB, "t_part", Arrays.asList("1999-01-01", "4"), p);
            return "ok";
        });
        call("appendPartition", () -> client.appendPartition(DB, "t_part",
                Arrays.asList(days[3], "2")));
        call("appendPartition by name", () -> client.appendPartition(DB, "t_part",
                "ds=" + days[3] + "/hr=3"));
        call("appendPartition existing", () -> client.appendPartition(DB, "t_part",
                Arrays.asList(days[3], "2")));
        call("dropPartition", () -> client.dropPartition(DB, "t_part",
                Arrays.asList(days[2], "0"), true));
        call("dropPartition by name", () -> client.dropPartition(DB, "t_part",
                "ds=" + days[2] + "/hr=1", true));
        call("dropPartition missing", () -> client.dropPartition(DB, "t_part",
                Arrays.asList("1999-01-01", "0"), true));
        call("dropPartition missing by name", () -> client.dropPartition(DB, "t_part",
                "ds=1999-01-01/hr=0", true));
        call("listPartitionNames after", () -> client.listPartitionNames(DB, "t_part",
                (short) -1));
        call("markPartitionForEvent", () -> {
            client.markPartitionForEvent(DB, "t_part", map("ds", days[0], "hr", "0"),
                    PartitionEventType.LOAD_DONE);
            return "ok";
        });
        call("isPartitionMarkedForEvent", () -> client.isPartitionMarkedForEvent(DB, "t_part",
                map("ds", days[0], "hr", "0"), PartitionEventType.LOAD_DONE));
        call("isPartitionMarkedForEvent other", () -> client.isPartitionMarkedForEvent(DB,
                "t_part", map("ds", days[0], "hr", "1"), PartitionEventType.LOAD_DONE));
        call("markPartitionForEvent missing table", () -> {
            client.markPartitionForEvent(DB, "t_missing", map("ds", days[0], "hr", "0"),
                    PartitionEventType.LOAD_DONE);
            return "ok";
        });
    }

    private void statistics() throws Exception {
        call("updateTableColumnStatistics", () -> client.updateTableColumnStatistics(
                stats(DB, "t_plain", null, 1)));
        call("getTableColumnStatistics", () -> client.getTableColumnStatistics(DB, "t_plain",
                Arrays.asList("id", "name", "amount")));
        call("getTableColumnStatistics some", () -> client.getTableColumnStatistics(DB,
                "t_plain", Arrays.asList("name", "nosuch")));
        call("updateTableColumnStatistics again", () -> client.updateTableColumnStatistics(
                stats(DB, "t_plain", null, 7)));
        call("getTableColumnStatistics again", () -> client.getTableColumnStatistics(DB,
                "t_plain", Arrays.asList("id", "name", "amount")));
        call("getTable after stats", () -> client.getTable(DB, "t_plain").getParameters());
        call("updateTableColumnStatistics missing column", () -> {
            ColumnStatistics cs = stats(DB, "t_plain", null, 1);
            cs.getStatsObj().get(0).setColName("nosuch");
            return client.updateTableColumnStatistics(cs);
        });
        call("updateTableColumnStatistics missing table", () ->
                client.updateTableColumnStatistics(stats(DB, "t_missing", null, 1)));
        List<String> parts = new ArrayList<>();
        for (int h = 0; h < 4; h++) {
            String hr = String.valueOf(h);
            String name = "ds=2024-02-01/hr=" + hr;
            long seed = h * 10L;
            parts.add(name);
            call("add_partition stats " + hr, () -> client.add_partition(
                    partition("t_stats", "2024-02-01", hr)));
            call("updatePartitionColumnStatistics " + hr,
                    () -> client.updatePartitionColumnStatistics(
                            stats(DB, "t_stats", name, seed)));
        }
        call("getPartitionColumnStatistics", () -> client.getPartitionColumnStatistics(DB,
                "t_stats", parts, Arrays.asList("id", "name", "amount")));
        call("getAggrColStatsFor", () -> client.getAggrColStatsFor(DB, "t_stats",
                Arrays.asList("id", "name", "amount"), parts));
        call("getAggrColStatsFor two", () -> client.getAggrColStatsFor(DB, "t_stats",
                Arrays.asList("id"), parts.subList(0, 2)));
        call("getAggrColStatsFor none", () -> client.getAggrColStatsFor(DB, "t_stats",
                Arrays.asList("id"), new ArrayList<>()));
        call("setPartitionColumnStatistics", () -> client.setPartitionColumnStatistics(
                new SetPartitionsStatsRequest(Arrays.asList(
                        stats(DB, "t_stats", parts.get(0), 3),
                        stats(DB, "t_stats", parts.get(1), 4)))));
        call("getPartitionColumnStatistics after set", () ->
                client.getPartitionColumnStatistics(DB, "t_stats", parts.subList(0, 2),
                        Arrays.asList("id")));
        call("updatePartitionColumnStatistics missing partition", () ->
                client.updatePartitionColumnStatistics(
                        stats(DB, "t_stats", "ds=1999-01-01/hr=0", 1)));
        call("deletePartitionColumnStatistics", () -> client.deletePartitionColumnStatistics(
                DB, "t_stats", parts.get(0), "id"));
        call("getPartitionColumnStatistics after delete", () ->
                client.getPartitionColumnStatistics(DB, "t_stats", parts.subList(0, 1),
                        Arrays.asList("id", "name")));
        call("deletePartitionColumnStatistics again", () ->
                client.deletePartitionColumnStatistics(DB, "t_stats", parts.get(0), "id"));
        call("deleteTableColumnStatistics", () -> client.deleteTableColumnStatistics(DB,
                "t_plain", "name"));
        call("getTableColumnStatistics after delete", () -> client.getTableColumnStatistics(
                DB, "t_plain", Arrays.asList("id", "name", "amount")));
        call("deleteTableColumnStatistics again", () -> client.deleteTableColumnStatistics(
                DB, "t_plain", "name"));
        call("deleteTableColumnStatistics missing table", () ->
                client.deleteTableColumnStatistics(DB, "t_missing", "name"));
    }

    private void transactions() throws Exception {
        long[] txn = new long[4];
        call("openTxn", () -> txn[0] = client.openTxn("alice"));
        call("openTxns 3", () -> {
            OpenTxnsResponse r = client.openTxns("alice", 3);
            txn[1] = r.getTxn_ids().get(0);
            txn[2] = r.getTxn_ids().get(1);
            txn[3] = r.getTxn_ids().get(2);
            return r;
        });
        call("getValidTxns", () -> client.getValidTxns());
        call("getValidTxns current", () -> client.getValidTxns(txn[1]));
        call("showTxns", () -> {
            List<String> open = new ArrayList<>();
            for (TxnInfo t : client.showTxns().getOpen_txns()) {
                open.add(offset("txn", t.getId()) + ":" + t.getState() + ":" + t.getUser());
            }
            Collections.sort(open);
            return open;
        });
        long[] lock = new long[3];
        call("lock shared read", () -> {
            LockRequest r = new LockRequest(Collections.singletonList(component(
                    LockType.SHARED_READ, LockLevel.TABLE, DB, "t_plain", null, null)),
                    "alice", "host");
            r.setTxnid(txn[0]);
            LockResponse resp = client.lock(r);
            lock[0] = resp.getLockid();
            return resp;
        });
        call("checkLock", () -> client.checkLock(lock[0]));
        call("lock exclusive waits", () -> {
            LockRequest r = new LockRequest(Collections.singletonList(component(
                    LockType.EXCLUSIVE, LockLevel.TABLE, DB, "t_plain", null, null)),
                    "alice", "host");
            r.setTxnid(txn[1]);
            LockResponse resp = client.lock(r);
            lock[1] = resp.getLockid();
            return resp;
        });
        call("checkLock waiting", () -> client.checkLock(lock[1]));
        call("lock acid insert", () -> {
            LockRequest r = new LockRequest(Collections.singletonList(component(
                    LockType.SHARED_READ, LockLevel.PARTITION, DB, "t_acid",
                    "ds=2024-01-01/hr=0", DataOperationType.INSERT)), "alice", "host");
            r.setTxnid(txn[2]);
            LockResponse resp = client.lock(r);
            lock[2] = resp.getLockid();
            return resp;
        });
        call("showLocks", () -> {
            List<String> locks = new ArrayList<>();
            for (ShowLocksResponseElement e : client.showLocks().getLocks()) {
                locks.add(offset("lock", e.getLockid()) + ":" + e.getDbname() + "."
                        + e.getTablename() + ":" + e.getPartname() + ":" + e.getState() + ":"
                        + e.getType() + ":" + offset("txn", e.getTxnid()));
            }
            Collections.sort(locks);
            return locks;
        });
        call("heartbeat", () -> {
            client.heartbeat(txn[0], lock[0]);
            return "ok";
        });
        call("heartbeatTxnRange", () -> client.heartbeatTxnRange(txn[0], txn[3]));
        call("heartbeat missing txn", () -> {
            client.heartbeat(txn[0] + 1000, 0);
            return "ok";
        });
        call("unlock in txn", () -> {
            client.unlock(lock[0]);
            return "ok";
        });
        call("commitTxn", () -> {
            client.commitTxn(txn[0]);
            return "ok";
        });
        call("checkLock after commit", () -> client.checkLock(lock[0]));
        call("checkLock freed waiter", () -> client.checkLock(lock[1]));
        call("rollbackTxn", () -> {
            client.rollbackTxn(txn[1]);
            return "ok";
        });
        call("commitTxn aborted", () -> {
            client.commitTxn(txn[1]);
            return "ok";
        });
        call("commitTxn missing", () -> {
            client.commitTxn(txn[3] + 1000);
            return "ok";
        });
        call("commitTxn acid", () -> {
            client.commitTxn(txn[2]);
            return "ok";
        });
        call("abortTxns", () -> {
            client.abortTxns(Collections.singletonList(txn[3]));
            return "ok";
        });
        call("getValidTxns after", () -> client.getValidTxns());
        call("lock without txn", () -> {
            LockRequest r = new LockRequest(Collections.singletonList(component(
                    LockType.SHARED_WRITE, LockLevel.DB, DB, null, null, null)), "alice",
                    "host");
            LockResponse resp = client.lock(r);
            lock[0] = resp.getLockid();
            return resp;
        });
        call("unlock", () -> {
            client.unlock(lock[0]);
            return "ok";
        });
        call("unlock missing", () -> {
            client.unlock(lock[0] + 1000);
            return "ok";
        });
        call("checkLock missing", () -> client.checkLock(lock[0] + 1000));
        call("compact2", () -> client.compact2(DB, "t_acid", "ds=2024-01-01/hr=0",
                CompactionType.MINOR, null));
        call("compact2 again", () -> client.compact2(DB, "t_acid", "ds=2024-01-01/hr=0",
                CompactionType.MINOR, null));
        call("showCompactions", () -> {
            List<String> rows = new ArrayList<>();
            for (ShowCompactResponseElement e : client.showCompactions().getCompacts()) {
                rows.add(e.getDbname() + "." + e.getTablename() + ":" + e.getPartitionname()
                        + ":" + e.getType() + ":" + e.getState());
            }
            return rows;
        });
    }

    // Reads of what the writes above left, as an engine planning queries makes them.
    private void rereads() {
        for (String t : new String[] {"t_plain", "t_part", "t_acid", "t_stats", "t_many0",
                "t_many1", "t_many2", "t_many3", "t_renamed", "v_plain"}) {
            call("reread getTable " + t, () -> client.getTable(DB, t));
            call("reread getSchema " + t, () -> client.getSchema(DB, t));
            call("reread getFields " + t, () -> client.getFields(DB, t));
        }
        for (String day : new String[] {"2024-01-01", "2024-01-02", "2024-01-03",
                "2024-01-04"}) {
            call("reread listPartitions " + day, () -> client.listPartitions(DB, "t_part",
                    Arrays.asList(day, ""), (short) -1));
            call("reread listPartitionNames " + day, () -> client.listPartitionNames(DB,
                    "t_part", Arrays.asList(day, ""), (short) -1));
            call("reread getPartitionsByNames " + day, () -> client.getPartitionsByNames(DB,
                    "t_part", Arrays.asList("ds=" + day + "/hr=0", "ds=" + day + "/hr=3")));
            call("reread getNumPartitionsByFilter " + day, () ->
                    client.getNumPartitionsByFilter(DB, "t_part", "ds = \"" + day + "\""));
        }
        for (int h = 0; h < 6; h++) {
            String filter = "hr = " + h;
            call("reread listPartitionsByFilter " + filter, () -> {
                List<String> names = new ArrayList<>();
                for (Partition p : client.listPartitionsByFilter(DB, "t_part", filter,
                        (short) -1)) {
                    names.add(p.getValues().toString());
                }
                return names;
            });
        }
        for (String col : new String[] {"id", "name", "amount"}) {
            call("reread getTableColumnStatistics " + col, () ->
                    client.getTableColumnStatistics(DB, "t_plain", Arrays.asList(col)));
        }
        for (int h = 0; h < 4; h++) {
            String name = "ds=2024-02-01/hr=" + h;
            call("reread getPartitionColumnStatistics " + name, () ->
                    client.getPartitionColumnStatistics(DB, "t_stats", Arrays.asList(name),
                            Arrays.asList("id", "name", "amount")));
        }
        for (int h = 0; h < 6; h++) {
            String name = "ds=2024-01-01/hr=" + h;
            call("reread getPartition " + name, () -> client.getPartition(DB, "t_part", name));
            if (h % 2 == 0) {
                call("reread partitionNameToVals " + name,
                        () -> client.partitionNameToVals(name));
            }
        }
        call("reread isPartitionMarkedForEvent", () -> client.isPartitionMarkedForEvent(DB,
                "t_part", map("ds", "2024-01-01", "hr", "0"), PartitionEventType.LOAD_DONE));
        call("reread getDatabase", () -> client.getDatabase(DB));
        call("reread getDatabase upper case", () -> client.getDatabase("JSC_DB"));
        call("reread getDatabases", () -> client.getDatabases("jsc*"));
        call("reread getAllDatabases", () -> client.getAllDatabases());
        call("reread getAllTables", () -> client.getAllTables(DB));
    }

    // Primary and foreign keys, as Hive 2.3's DDL makes and reads them.
    private void constraints() {
        call("createTableWithConstraints", () -> {
            client.createTableWithConstraints(table(DB, "t_pk", new ArrayList<>(),
                    new HashMap<>(), "MANAGED_TABLE", null, false),
                    Collections.singletonList(new SQLPrimaryKey(DB, "t_pk", "id", 1, "jsc_pk",
                            false, false, true)), new ArrayList<>()); // 2.3: null fails
            return "ok";
        });
        call("getPrimaryKeys", () -> client.getPrimaryKeys(new PrimaryKeysRequest(DB, "t_pk")));
        call("createTable referencing", () -> {
            client.createTable(table(DB, "t_fk", new ArrayList<>(), new HashMap<>(),
                    "MANAGED_TABLE", null, false));
            return "ok";
        });
        call("addForeignKey", () -> {
            client.addForeignKey(Collections.singletonList(new SQLForeignKey(DB, "t_pk", "id",
                    DB, "t_fk", "id", 1, 0, 0, "jsc_fk", "jsc_pk", false, false, true)));
            return "ok";
        });
        call("getForeignKeys", () -> client.getForeignKeys(new ForeignKeysRequest(DB, "t_pk",
                DB, "t_fk")));
        call("getForeignKeys of the referencing table", () -> client.getForeignKeys(
                new ForeignKeysRequest(null, null, DB, "t_fk")));
        call("addPrimaryKey name taken", () -> {
            client.addPrimaryKey(Collections.singletonList(new SQLPrimaryKey(DB, "t_fk", "id",
                    1, "jsc_pk", false, false, true)));
            return "ok";
        });
        call("dropConstraint", () -> {
            client.dropConstraint(DB, "t_fk", "jsc_fk");
            return "ok";
        });
        call("getForeignKeys after drop", () -> client.getForeignKeys(new ForeignKeysRequest(
                DB, "t_pk", DB, "t_fk")));
        call("getPrimaryKeys missing table", () -> client.getPrimaryKeys(
                new PrimaryKeysRequest(DB, "t_missing")));
    }

    // What a writing engine does per statement: a txn, a lock on what it writes, a commit.
    private void transactionLoop() {
        for (int i = 0; i < 5; i++) {
            String part = "ds=2024-03-0" + (i + 1) + "/hr=0";
            long[] txn = new long[1];
            long[] lock = new long[1];
            call("loop openTxn " + i, () -> offset("txn", txn[0] = client.openTxn("bob")));
            call("loop lock " + i, () -> {
                LockRequest r = new LockRequest(Collections.singletonList(component(
                        LockType.SHARED_READ, LockLevel.PARTITION, DB, "t_acid", part,
                        DataOperationType.INSERT)), "bob", "host");
                r.setTxnid(txn[0]);
                LockResponse resp = client.lock(r);
                lock[0] = resp.getLockid();
                return resp;
            });
            call("loop commitTxn " + i, () -> {
                client.commitTxn(txn[0]);
                return client.checkLock(lock[0]).getState();
            });
        }
    }

    private void roles() {
        call("listRoleNames", () -> client.listRoleNames());
        call("create_role", () -> client.create_role(new Role("jsc_role", 0, "admin")));
        call("create_role again", () -> client.create_role(new Role("jsc_role", 0, "admin")));
        call("grant_role", () -> client.grant_role("jsc_role", "alice", PrincipalType.USER,
                "admin", PrincipalType.USER, true));
        call("list_roles", () -> client.list_roles("alice", PrincipalType.USER));
        call("get_principals_in_role", () -> client.get_principals_in_role(
                new GetPrincipalsInRoleRequest("jsc_role")));
        call("get_role_grants_for_principal", () -> client.get_role_grants_for_principal(
                new GetRoleGrantsForPrincipalRequest("alice", PrincipalType.USER)));
        call("grant_privileges", () -> client.grant_privileges(privileges("jsc_role",
                PrincipalType.ROLE, "SELECT", tableRef(DB, "t_plain"))));
        call("grant_privileges user", () -> client.grant_privileges(privileges("alice",
                PrincipalType.USER, "INSERT", tableRef(DB, "t_plain"))));
        call("list_privileges", () -> client.list_privileges("jsc_role", PrincipalType.ROLE,
                tableRef(DB, "t_plain")));
        call("list_privileges user", () -> client.list_privileges("alice", PrincipalType.USER,
                tableRef(DB, "t_plain")));
        call("get_privilege_set", () -> client.get_privilege_set(tableRef(DB, "t_plain"),
                "alice", new ArrayList<>()));
        call("revoke_privileges", () -> client.revoke_privileges(privileges("alice",
                PrincipalType.USER, "INSERT", tableRef(DB, "t_plain")), false));
        call("list_privileges user after", () -> client.list_privileges("alice",
                PrincipalType.USER, tableRef(DB, "t_plain")));
        call("revoke_role", () -> client.revoke_role("jsc_role", "alice", PrincipalType.USER,
                false));
        call("list_roles after", () -> client.list_roles("alice", PrincipalType.USER));
        call("drop_role", () -> client.drop_role("jsc_role"));
        call("drop_role missing", () -> client.drop_role("jsc_role"));
        call("listRoleNames after", () -> client.listRoleNames());
    }

    private void notificationsAndConfig() {
        call("getCurrentNotificationEventId", () -> client.getCurrentNotificationEventId());
        call("getNextNotification", () -> {
            List<String> types = new ArrayList<>();
            for (NotificationEvent e : client.getNextNotification(0, 10000, null).getEvents()) {
                types.add(e.getEventType());
            }
            return types;
        });
        call("getConfigValue batch", () -> client.getConfigValue(
                "hive.metastore.batch.retrieve.max", "x"));
        call("getConfigValue unknown hive key", () -> client.getConfigValue(
                "hive.jsc.nosuch", "dflt"));
        call("getConfigValue secret", () -> client.getConfigValue(
                "javax.jdo.option.ConnectionPassword", "x"));
        call("getMetaConf", () -> client.getMetaConf("hive.metastore.try.direct.sql"));
        call("setMetaConf", () -> {
            client.setMetaConf("hive.metastore.partition.name.whitelist.pattern", "[a-z0-9-]*");
            return client.getMetaConf("hive.metastore.partition.name.whitelist.pattern");
        });
        call("validatePartitionNameCharacters whitelisted", () -> {
            client.validatePartitionNameCharacters(Arrays.asList("ok-1", "Not OK"));
            return "ok";
        });
        call("setMetaConf not allowed", () -> {
            client.setMetaConf("hive.jsc.nosuch", "1");
            return "ok";
        });
    }

    private void errors() {
        call("createTable no sd cols", () -> {
            Table t = table(DB, "t_nocols", new ArrayList<>(), null, "MANAGED_TABLE", null,
                    false);
            t.getSd().setCols(new ArrayList<>());
            client.createTable(t);
            return client.getTable(DB, "t_nocols").getSd().getCols();
        });
        call("add_partition bad value", () -> client.add_partition(partition("t_part",
                "Bad Value", "0")));
        call("getPartitionsByNames missing table", () -> client.getPartitionsByNames(DB,
                "t_missing", Arrays.asList("ds=1/hr=1")));
        call("listPartitionsByFilter missing table", () -> client.listPartitionsByFilter(DB,
                "t_missing", "hr = 1", (short) -1));
        call("dropDatabase not empty", () -> {
            client.dropDatabase(DB, true, false, false);
            return "ok";
        });
        call("dropDatabase missing", () -> {
            client.dropDatabase("jsc_missing", true, false, false);
            return "ok";
        });
        call("alterDatabase missing", () -> {
            client.alterDatabase("jsc_missing", new Database("jsc_missing", null, null, null));
            return "ok";
        });
        call("getTableColumnStatistics missing table", () ->
                client.getTableColumnStatistics(DB, "t_missing", Arrays.asList("id")));
        call("getFunction missing db", () -> client.getFunction("jsc_missing", "f"));
    }

    private void functions() {
        ResourceUri jar = new ResourceUri(ResourceType.JAR, "file:" + warehouse + "/udf.jar");
        call("createFunction", () -> {
            client.createFunction(new Function("jsc_upper", DB, "com.example.Upper", "alice",
                    PrincipalType.USER, 0, FunctionType.JAVA, Collections.singletonList(jar)));
            return "ok";
        });
        call("createFunction again", () -> {
            client.createFunction(new Function("jsc_upper", DB, "com.example.Upper", "alice",
                    PrincipalType.USER, 0, FunctionType.JAVA, new ArrayList<>()));
            return "ok";
        });
        call("getFunction", () -> client.getFunction(DB, "jsc_upper"));
        call("getFunction missing", () -> client.getFunction(DB, "jsc_none"));
        call("alterFunction", () -> {
            Function f = client.getFunction(DB, "jsc_upper");
            f.setClassName("com.example.Upper2");
            client.alterFunction(DB, "jsc_upper", f);
            return client.getFunction(DB, "jsc_upper");
        });
        call("getFunctions", () -> client.getFunctions(DB, "jsc_*"));
        call("getAllFunctions", () -> client.getAllFunctions());
        call("dropFunction", () -> {
            client.dropFunction(DB, "jsc_upper");
            return "ok";
        });
        call("dropFunction missing", () -> {
            client.dropFunction(DB, "jsc_upper");
            return "ok";
        });
    }

    private void cleanup() {
        for (String t : new String[] {"t_plain", "t_part", "t_stats", "v_plain"}) {
            call("dropTable " + t, () -> {
                client.dropTable(DB, t, true, false);
                return "ok";
            });
        }
        call("getAllTables end", () -> client.getAllTables(DB));
        call("dropDatabase cascade", () -> {
            client.dropDatabase(DB, true, false, true);
            return "ok";
        });
        call("dropDatabase located", () -> {
            client.dropDatabase(DB2, true, false, true);
            return "ok";
        });
        call("getAllDatabases end", () -> client.getAllDatabases());
    }
}
