// ClientCheck: the real Apache Kafka Java client (kafka-clients 4.3.0), driven over a line
// protocol by compat_tests/clients/test_java_client.py.
//
//   java -cp <jars>:<classes> ClientCheck BOOTSTRAP
//
// One JVM serves a whole test module: each stdin line is one JSON request
// {"id": n, "op": "...", ...}; each stdout line is the reply {"id": n, "ok": true, "result": ...}
// or {"id": n, "ok": false, "errorClass": "...", "error": "...", "trace": "..."}. Bytes travel as
// base64 (null stays null) so the Python side can compare exact bytes. Clients are created per
// request and closed before the reply, so one request never leaks state into the next.
// System.out is re-pointed at stderr, so nothing but replies ever reaches the protocol stream.
//
// No op hides a failure: a per-record or per-resource error is reported next to the
// successes, and the Python side decides what is expected.

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

public final class ClientCheck {
    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder UNB64 = Base64.getDecoder();
    // Every blocking call is bounded, so a broker that never answers fails the op, not the JVM.
    private static final long WAIT_MS = 40_000;  // > default.api.timeout.ms: the client reports its own timeout first

    private final String bootstrap;

    private ClientCheck(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ClientCheck BOOTSTRAP   (requests as JSON lines on stdin)");
            System.exit(2);
        }
        PrintStream replies = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        ClientCheck check = new ClientCheck(args[0]);
        Plumbing.serve(replies, check::dispatch);
    }

    private Object dispatch(Map<String, Object> req) throws Exception {
        String op = (String) req.get("op");
        switch (op) {
            case "version": return AppInfoParser.getVersion();
            case "produce": return produce(req);
            case "consume": return consume(req);
            case "consumerOffsets": return consumerOffsets(req);
            case "createTopics": return createTopics(req);
            case "listTopics": return listTopics(req);
            case "describeTopics": return describeTopics(req);
            case "describeConfigs": return describeConfigs(req);
            case "incrementalAlterConfigs": return incrementalAlterConfigs(req);
            case "createPartitions": return createPartitions(req);
            case "deleteTopics": return deleteTopics(req);
            case "describeCluster": return describeCluster(req);
            case "listOffsets": return listOffsets(req);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ---- producer ---------------------------------------------------------------------------

    private Object produce(Map<String, Object> req) throws Exception {
        Properties p = props(req);
        p.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        String topic = (String) req.get("topic");
        boolean syncEach = Boolean.TRUE.equals(req.get("syncEach"));
        List<Map<String, Object>> out = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (Object o : Plumbing.asList(req.get("records"))) {
                Map<String, Object> r = Plumbing.asMap(o);
                List<Header> headers = new ArrayList<>();
                for (Object h : Plumbing.asList(r.getOrDefault("headers", List.of()))) {
                    List<Object> kv = Plumbing.asList(h);
                    headers.add(new RecordHeader((String) kv.get(0), bytes(kv.get(1))));
                }
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(
                    topic, intOrNull(r.get("partition")), longOrNull(r.get("timestamp")),
                    bytes(r.get("key")), bytes(r.get("value")), headers);
                Future<RecordMetadata> f = producer.send(record);
                if (syncEach) f.get(WAIT_MS, TimeUnit.MILLISECONDS);
                futures.add(f);
            }
            producer.flush();
            for (Future<RecordMetadata> f : futures) {
                Map<String, Object> m = new LinkedHashMap<>();
                try {
                    RecordMetadata md = f.get(WAIT_MS, TimeUnit.MILLISECONDS);
                    m.put("partition", md.partition());
                    m.put("offset", md.hasOffset() ? md.offset() : null);
                    m.put("timestamp", md.hasTimestamp() ? md.timestamp() : null);
                } catch (ExecutionException e) {
                    m.put("error", Plumbing.describe(e.getCause()));
                }
                out.add(m);
            }
            producer.close(Duration.ofSeconds(10));
        }
        return out;
    }

    // ---- consumer ---------------------------------------------------------------------------

    private KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> req) {
        Properties p = props(req);
        // No group.id: assign() + seek() only; group coordination is not exercised here.
        p.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.putIfAbsent(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c, Map<String, Object> req) {
        String topic = (String) req.get("topic");
        List<TopicPartition> tps = new ArrayList<>();
        if (req.get("partitions") != null) {
            for (Object o : Plumbing.asList(req.get("partitions"))) tps.add(new TopicPartition(topic, ((Number) o).intValue()));
        } else {
            for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofMillis(WAIT_MS))) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
        }
        return tps;
    }

    private Object consume(Map<String, Object> req) {
        long count = ((Number) req.get("count")).longValue();
        long timeoutMs = req.get("timeoutMs") == null ? WAIT_MS : ((Number) req.get("timeoutMs")).longValue();
        Object seek = req.getOrDefault("seek", "beginning");
        Map<String, Object> result = new LinkedHashMap<>();
        List<Map<String, Object>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(req)) {
            List<TopicPartition> tps = partitions(c, req);
            c.assign(tps);
            if ("beginning".equals(seek)) {
                c.seekToBeginning(tps);
            } else if ("end".equals(seek)) {
                c.seekToEnd(tps);
            } else {
                for (Map.Entry<String, Object> e : Plumbing.asMap(seek).entrySet()) {
                    c.seek(new TopicPartition((String) req.get("topic"), Integer.parseInt(e.getKey())),
                           ((Number) e.getValue()).longValue());
                }
            }
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (records.size() < count && System.currentTimeMillis() < deadline) {
                addAll(records, c.poll(Duration.ofMillis(200)));
            }
            // One more short poll: records beyond `count` (duplicates, stray data) must show up.
            addAll(records, c.poll(Duration.ofMillis(500)));
            Map<String, Object> positions = new TreeMap<>();
            for (TopicPartition tp : tps) positions.put(String.valueOf(tp.partition()), c.position(tp, Duration.ofMillis(WAIT_MS)));
            result.put("positions", positions);
        }
        result.put("records", records);
        return result;
    }

    private static void addAll(List<Map<String, Object>> out, ConsumerRecords<byte[], byte[]> batch) {
        for (ConsumerRecord<byte[], byte[]> r : batch) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("partition", r.partition());
            m.put("offset", r.offset());
            m.put("timestamp", r.timestamp());
            m.put("timestampType", r.timestampType().name);
            m.put("key", b64(r.key()));
            m.put("value", b64(r.value()));
            List<Object> headers = new ArrayList<>();
            for (Header h : r.headers()) headers.add(java.util.Arrays.asList(h.key(), b64(h.value())));
            m.put("headers", headers);
            m.put("leaderEpoch", r.leaderEpoch().orElse(null));
            out.add(m);
        }
    }

    private Object consumerOffsets(Map<String, Object> req) {
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(req)) {
            List<TopicPartition> tps = partitions(c, req);
            Duration wait = Duration.ofMillis(WAIT_MS);
            result.put("beginning", byPartition(c.beginningOffsets(tps, wait)));
            result.put("end", byPartition(c.endOffsets(tps, wait)));
            Map<TopicPartition, Long> query = new HashMap<>();
            Map<String, Object> ts = req.get("timestamps") == null ? Map.of() : Plumbing.asMap(req.get("timestamps"));
            for (Map.Entry<String, Object> e : ts.entrySet()) {
                query.put(new TopicPartition((String) req.get("topic"), Integer.parseInt(e.getKey())),
                          ((Number) e.getValue()).longValue());
            }
            Map<String, Object> forTimes = new TreeMap<>();
            if (!query.isEmpty()) {
                for (Map.Entry<TopicPartition, OffsetAndTimestamp> e : c.offsetsForTimes(query, wait).entrySet()) {
                    OffsetAndTimestamp o = e.getValue();
                    Map<String, Object> m = null;
                    if (o != null) {
                        m = new LinkedHashMap<>();
                        m.put("offset", o.offset());
                        m.put("timestamp", o.timestamp());
                        m.put("leaderEpoch", o.leaderEpoch().orElse(null));
                    }
                    forTimes.put(String.valueOf(e.getKey().partition()), m);
                }
            }
            result.put("forTimes", forTimes);
        }
        return result;
    }

    private static Map<String, Object> byPartition(Map<TopicPartition, Long> offsets) {
        Map<String, Object> m = new TreeMap<>();
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) m.put(String.valueOf(e.getKey().partition()), e.getValue());
        return m;
    }

    // ---- admin ------------------------------------------------------------------------------

    private Admin admin(Map<String, Object> req) {
        return Admin.create(props(req));
    }

    private Object createTopics(Map<String, Object> req) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (Object o : Plumbing.asList(req.get("topics"))) {
            Map<String, Object> t = Plumbing.asMap(o);
            NewTopic nt = new NewTopic((String) t.get("name"),
                java.util.Optional.ofNullable(intOrNull(t.get("partitions"))),
                java.util.Optional.ofNullable(t.get("replicationFactor") == null ? null
                    : ((Number) t.get("replicationFactor")).shortValue()));
            if (t.get("configs") != null) {
                Map<String, String> cfg = new HashMap<>();
                for (Map.Entry<String, Object> e : Plumbing.asMap(t.get("configs")).entrySet()) cfg.put(e.getKey(), String.valueOf(e.getValue()));
                nt.configs(cfg);
            }
            topics.add(nt);
        }
        Map<String, Object> out = new TreeMap<>();
        try (Admin a = admin(req)) {
            CreateTopicsOptions opts = new CreateTopicsOptions().validateOnly(Boolean.TRUE.equals(req.get("validateOnly")));
            CreateTopicsResult res = a.createTopics(topics, opts);
            for (NewTopic nt : topics) {
                String name = nt.name();
                Map<String, Object> m = new LinkedHashMap<>();
                try {
                    res.values().get(name).get(WAIT_MS, TimeUnit.MILLISECONDS);
                    m.put("ok", true);
                    m.put("numPartitions", res.numPartitions(name).get());
                    m.put("replicationFactor", res.replicationFactor(name).get());
                    m.put("topicId", String.valueOf(res.topicId(name).get()));
                    Config cfg = res.config(name).get();
                    Map<String, Object> configs = new TreeMap<>();
                    for (ConfigEntry ce : cfg.entries()) configs.put(ce.name(), ce.value());
                    m.put("configs", configs);
                } catch (ExecutionException e) {
                    m.put("ok", false);
                    m.put("error", Plumbing.describe(e.getCause()));
                }
                out.put(name, m);
            }
        }
        return out;
    }

    private Object listTopics(Map<String, Object> req) throws Exception {
        try (Admin a = admin(req)) {
            ListTopicsOptions opts = new ListTopicsOptions().listInternal(Boolean.TRUE.equals(req.get("listInternal")));
            return new java.util.TreeSet<>(a.listTopics(opts).names().get(WAIT_MS, TimeUnit.MILLISECONDS));
        }
    }

    private Object describeTopics(Map<String, Object> req) throws Exception {
        List<String> names = new ArrayList<>();
        for (Object o : Plumbing.asList(req.get("names"))) names.add((String) o);
        Map<String, Object> out = new TreeMap<>();
        try (Admin a = admin(req)) {
            Map<String, KafkaFuture<TopicDescription>> values =
                a.describeTopics(TopicCollection.ofTopicNames(names)).topicNameValues();
            for (String name : names) {
                Map<String, Object> m = new LinkedHashMap<>();
                try {
                    TopicDescription d = values.get(name).get(WAIT_MS, TimeUnit.MILLISECONDS);
                    m.put("ok", true);
                    m.put("name", d.name());
                    m.put("internal", d.isInternal());
                    m.put("topicId", String.valueOf(d.topicId()));
                    List<Object> parts = new ArrayList<>();
                    for (TopicPartitionInfo pi : d.partitions()) {
                        Map<String, Object> pm = new LinkedHashMap<>();
                        pm.put("partition", pi.partition());
                        pm.put("leader", pi.leader() == null ? null : pi.leader().id());
                        pm.put("replicas", nodeIds(pi.replicas()));
                        pm.put("isr", nodeIds(pi.isr()));
                        parts.add(pm);
                    }
                    m.put("partitions", parts);
                } catch (ExecutionException e) {
                    m.put("ok", false);
                    m.put("error", Plumbing.describe(e.getCause()));
                }
                out.put(name, m);
            }
        }
        return out;
    }

    private static List<Object> nodeIds(List<Node> nodes) {
        List<Object> ids = new ArrayList<>();
        for (Node n : nodes) ids.add(n.id());
        return ids;
    }

    private Object describeConfigs(Map<String, Object> req) throws Exception {
        List<ConfigResource> resources = new ArrayList<>();
        for (Object o : Plumbing.asList(req.get("resources"))) {
            Map<String, Object> r = Plumbing.asMap(o);
            resources.add(new ConfigResource(resourceType(r), String.valueOf(r.get("name"))));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin a = admin(req)) {
            Map<ConfigResource, KafkaFuture<Config>> values = a.describeConfigs(resources).values();
            for (ConfigResource r : resources) {
                Map<String, Object> m = new LinkedHashMap<>();
                try {
                    Config cfg = values.get(r).get(WAIT_MS, TimeUnit.MILLISECONDS);
                    Map<String, Object> entries = new TreeMap<>();
                    for (ConfigEntry ce : cfg.entries()) {
                        Map<String, Object> e = new LinkedHashMap<>();
                        e.put("value", ce.value());
                        e.put("source", ce.source().name());
                        e.put("readOnly", ce.isReadOnly());
                        e.put("sensitive", ce.isSensitive());
                        e.put("isDefault", ce.isDefault());
                        e.put("type", ce.type().name());
                        entries.put(ce.name(), e);
                    }
                    m.put("ok", true);
                    m.put("configs", entries);
                } catch (ExecutionException e) {
                    m.put("ok", false);
                    m.put("error", Plumbing.describe(e.getCause()));
                }
                out.put(r.type().name().toLowerCase() + ":" + r.name(), m);
            }
        }
        return out;
    }

    private static ConfigResource.Type resourceType(Map<String, Object> r) {
        return ConfigResource.Type.valueOf(String.valueOf(r.getOrDefault("type", "topic")).toUpperCase());
    }

    /** resources: [{type, name, set: {name: value}, delete: [name]}] -> {"type:name": {ok, error}} */
    private Object incrementalAlterConfigs(Map<String, Object> req) throws Exception {
        Map<ConfigResource, java.util.Collection<AlterConfigOp>> ops = new LinkedHashMap<>();
        for (Object o : Plumbing.asList(req.get("resources"))) {
            Map<String, Object> r = Plumbing.asMap(o);
            List<AlterConfigOp> list = new ArrayList<>();
            for (Map.Entry<String, Object> e : Plumbing.asMap(r.getOrDefault("set", Map.of())).entrySet()) {
                list.add(new AlterConfigOp(new ConfigEntry(e.getKey(), String.valueOf(e.getValue())), AlterConfigOp.OpType.SET));
            }
            for (Object name : Plumbing.asList(r.getOrDefault("delete", List.of()))) {
                list.add(new AlterConfigOp(new ConfigEntry((String) name, null), AlterConfigOp.OpType.DELETE));
            }
            ops.put(new ConfigResource(resourceType(r), String.valueOf(r.get("name"))), list);
        }
        try (Admin a = admin(req)) {
            Map<String, KafkaFuture<Void>> byName = new LinkedHashMap<>();
            for (Map.Entry<ConfigResource, KafkaFuture<Void>> e : a.incrementalAlterConfigs(ops).values().entrySet()) {
                byName.put(e.getKey().type().name().toLowerCase() + ":" + e.getKey().name(), e.getValue());
            }
            return outcomes(byName);
        }
    }

    private Object createPartitions(Map<String, Object> req) throws Exception {
        Map<String, NewPartitions> counts = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : Plumbing.asMap(req.get("counts")).entrySet()) {
            counts.put(e.getKey(), NewPartitions.increaseTo(((Number) e.getValue()).intValue()));
        }
        try (Admin a = admin(req)) {
            return outcomes(a.createPartitions(counts).values());
        }
    }

    private Object deleteTopics(Map<String, Object> req) throws Exception {
        List<String> names = new ArrayList<>();
        for (Object o : Plumbing.asList(req.get("names"))) names.add((String) o);
        try (Admin a = admin(req)) {
            return outcomes(a.deleteTopics(TopicCollection.ofTopicNames(names)).topicNameValues());
        }
    }

    private static Map<String, Object> outcomes(Map<String, KafkaFuture<Void>> values) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<String, KafkaFuture<Void>> e : values.entrySet()) {
            Map<String, Object> m = new LinkedHashMap<>();
            try {
                e.getValue().get(WAIT_MS, TimeUnit.MILLISECONDS);
                m.put("ok", true);
            } catch (ExecutionException ex) {
                m.put("ok", false);
                m.put("error", Plumbing.describe(ex.getCause()));
            }
            out.put(e.getKey(), m);
        }
        return out;
    }

    private Object describeCluster(Map<String, Object> req) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin a = admin(req)) {
            DescribeClusterResult res = a.describeCluster();
            out.put("clusterId", res.clusterId().get(WAIT_MS, TimeUnit.MILLISECONDS));
            Node controller = res.controller().get(WAIT_MS, TimeUnit.MILLISECONDS);
            out.put("controller", controller == null ? null : node(controller));
            List<Object> nodes = new ArrayList<>();
            for (Node n : res.nodes().get(WAIT_MS, TimeUnit.MILLISECONDS)) nodes.add(node(n));
            out.put("nodes", nodes);
        }
        return out;
    }

    private static Map<String, Object> node(Node n) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", n.id());
        m.put("host", n.host());
        m.put("port", n.port());
        m.put("rack", n.rack());
        return m;
    }

    private Object listOffsets(Map<String, Object> req) throws Exception {
        String topic = (String) req.get("topic");
        Map<TopicPartition, OffsetSpec> query = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : Plumbing.asMap(req.get("specs")).entrySet()) {
            query.put(new TopicPartition(topic, Integer.parseInt(e.getKey())), spec(e.getValue()));
        }
        Map<String, Object> out = new TreeMap<>();
        try (Admin a = admin(req)) {
            ListOffsetsResult res = a.listOffsets(query);
            for (TopicPartition tp : query.keySet()) {
                Map<String, Object> m = new LinkedHashMap<>();
                try {
                    ListOffsetsResult.ListOffsetsResultInfo info = res.partitionResult(tp).get(WAIT_MS, TimeUnit.MILLISECONDS);
                    m.put("ok", true);
                    m.put("offset", info.offset());
                    m.put("timestamp", info.timestamp());
                    m.put("leaderEpoch", info.leaderEpoch().orElse(null));
                } catch (ExecutionException ex) {
                    m.put("ok", false);
                    m.put("error", Plumbing.describe(ex.getCause()));
                }
                out.put(String.valueOf(tp.partition()), m);
            }
        }
        return out;
    }

    private static OffsetSpec spec(Object o) {
        if ("earliest".equals(o)) return OffsetSpec.earliest();
        if ("latest".equals(o)) return OffsetSpec.latest();
        if ("maxTimestamp".equals(o)) return OffsetSpec.maxTimestamp();
        return OffsetSpec.forTimestamp(((Number) Plumbing.asMap(o).get("timestamp")).longValue());
    }

    // ---- plumbing ---------------------------------------------------------------------------

    private Properties props(Map<String, Object> req) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "clientcheck-" + req.get("op") + "-" + req.get("id"));
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        if (req.get("config") != null) {
            for (Map.Entry<String, Object> e : Plumbing.asMap(req.get("config")).entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        }
        return p;
    }

    private static byte[] bytes(Object b64) {
        return b64 == null ? null : UNB64.decode((String) b64);
    }

    private static String b64(byte[] b) {
        return b == null ? null : B64.encodeToString(b);
    }

    private static Integer intOrNull(Object o) {
        return o == null ? null : ((Number) o).intValue();
    }

    private static Long longOrNull(Object o) {
        return o == null ? null : ((Number) o).longValue();
    }
}
