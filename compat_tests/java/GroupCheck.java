// GroupCheck: consumer groups with the real Apache Kafka Java client (kafka-clients 4.3.0),
// driven by compat_tests/groups/test_groups_java.py. Two modes:
//
//   java -cp <jars>:<classes> GroupCheck member BOOTSTRAP SPEC_JSON
//       One group member, for as long as the test wants it: KafkaConsumer.subscribe() with a
//       ConsumerRebalanceListener, a poll loop that reports every record it gets and then
//       commitSync()s exactly what it got. SPEC_JSON: {"name", "topic", "group", "config": {...},
//       "stopAfter": n (optional: close by itself once n records are consumed and committed)}.
//       stdout is a stream of JSON event lines, each with "ev" and "t" (epoch ms):
//         started                                   the consumer exists and has subscribed
//         revoked   {"partitions": [..]}            onPartitionsRevoked
//         lost      {"partitions": [..]}            onPartitionsLost
//         assigned  {"added": [..], "assignment": [..], "committed": {"p": offset|null},
//                    "generation": g, "memberId": ".."}
//         records   {"records": [[partition, offset, value-as-UTF-8], ..]}   one poll's records
//         committed {"offsets": {"p": next offset}}  after commitSync() returned
//         commitFailed {"error": "..", "offsets": {..}}   commitSync() threw
//         error     {"error": "..", "trace": ".."}  anything else that ended the loop
//         closed                                    consumer.close() returned; the JVM exits next
//       A line "close" on stdin (or stdin's end) makes the member finish the record batch in
//       hand, commit it, close the consumer (LeaveGroup) and exit. SIGKILL is the other way out.
//
//   java -cp <jars>:<classes> GroupCheck admin BOOTSTRAP
//       Admin client ops over the same JSON-line request/reply protocol as ClientCheck (driven
//       by test_groups_java.GroupAdmin, a java_client.JavaClient that starts this mode instead):
//       version, listGroups (listConsumerGroups, optionally filtered by state), describeGroups
//       (describeConsumerGroups), listGroupOffsets (listConsumerGroupOffsets), deleteGroups
//       (deleteConsumerGroups). One Admin per request, closed before the reply.
//
// System.out is re-pointed at stderr in both modes, so only protocol lines reach stdout.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class GroupCheck {
    private static final long WAIT_MS = 40_000;
    private static PrintStream out;

    public static void main(String[] args) throws Exception {
        out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length >= 3 && "member".equals(args[0])) {
            System.exit(new Member(args[1], Plumbing.asMap(Json.parse(args[2]))).run());
        } else if (args.length == 2 && "admin".equals(args[0])) {
            adminLoop(args[1]);
        } else {
            System.err.println("usage: GroupCheck member BOOTSTRAP SPEC_JSON | GroupCheck admin BOOTSTRAP");
            System.exit(2);
        }
    }

    // ---- one group member --------------------------------------------------------------------

    static final class Member implements ConsumerRebalanceListener {
        private final String bootstrap;
        private final Map<String, Object> spec;
        private final String topic;
        private final AtomicBoolean closing = new AtomicBoolean();
        private KafkaConsumer<byte[], byte[]> consumer;

        Member(String bootstrap, Map<String, Object> spec) {
            this.bootstrap = bootstrap;
            this.spec = spec;
            this.topic = (String) spec.get("topic");
        }

        int run() {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, spec.get("group"));
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "groupcheck-" + spec.get("name"));
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            if (spec.get("config") != null) {
                for (Map.Entry<String, Object> e : Plumbing.asMap(spec.get("config")).entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
            }
            long stopAfter = spec.get("stopAfter") == null ? Long.MAX_VALUE : ((Number) spec.get("stopAfter")).longValue();
            long processMs = spec.get("processMs") == null ? 0 : ((Number) spec.get("processMs")).longValue();
            long consumed = 0;
            Thread stdin = new Thread(this::watchStdin, "stdin-watch");
            stdin.setDaemon(true);
            try {
                consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                consumer.subscribe(List.of(topic), this);
                emit("started", Map.of("groupProtocol", String.valueOf(p.getProperty(ConsumerConfig.GROUP_PROTOCOL_CONFIG))));
                stdin.start();
                while (!closing.get() && consumed < stopAfter) {
                    ConsumerRecords<byte[], byte[]> batch;
                    try {
                        batch = consumer.poll(Duration.ofMillis(200));
                    } catch (WakeupException e) {
                        break;  // "close" arrived while polling: nothing was handed out
                    }
                    if (batch.isEmpty()) continue;
                    List<Object> recs = new ArrayList<>();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<byte[], byte[]> r : batch) {
                        recs.add(List.of(r.partition(), r.offset(), r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8)));
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    consumed += recs.size();
                    emit("records", Map.of("records", recs));
                    if (processMs > 0) Thread.sleep(processMs);
                    try {
                        consumer.commitSync(next, Duration.ofMillis(WAIT_MS));
                        emit("committed", Map.of("offsets", byPartition(next)));
                    } catch (WakeupException e) {
                        // A close request interrupted the commit: finish it before leaving.
                        consumer.commitSync(next, Duration.ofMillis(WAIT_MS));
                        emit("committed", Map.of("offsets", byPartition(next)));
                        break;
                    } catch (Exception e) {
                        Map<String, Object> m = new LinkedHashMap<>();
                        m.put("error", Plumbing.describe(e));
                        m.put("offsets", byPartition(next));
                        emit("commitFailed", m);
                    }
                }
                consumer.close(Duration.ofSeconds(20));
                emit("closed", Map.of("consumed", consumed));
                return 0;
            } catch (Throwable t) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("error", Plumbing.describe(t));
                m.put("trace", Plumbing.trace(t));
                emit("error", m);
                return 1;
            }
        }

        private void watchStdin() {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null) {
                    if ("close".equals(line.trim())) break;
                }
            } catch (Exception ignored) {
                // stdin gone: the test is gone too; leave the group
            }
            closing.set(true);
            consumer.wakeup();
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            emit("revoked", Map.of("partitions", partitionList(partitions)));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            emit("lost", Map.of("partitions", partitionList(partitions)));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("added", partitionList(partitions));
            m.put("assignment", partitionList(consumer.assignment()));
            // What the group has committed for the new partitions: where this member will start.
            Map<String, Object> committed = new TreeMap<>();
            if (!partitions.isEmpty()) {
                Map<TopicPartition, OffsetAndMetadata> c = consumer.committed(Set.copyOf(partitions), Duration.ofMillis(WAIT_MS));
                for (TopicPartition tp : partitions) {
                    OffsetAndMetadata om = c.get(tp);
                    committed.put(String.valueOf(tp.partition()), om == null ? null : om.offset());
                }
            }
            m.put("committed", committed);
            ConsumerGroupMetadata gm = consumer.groupMetadata();
            m.put("generation", gm.generationId());
            m.put("memberId", gm.memberId());
            emit("assigned", m);
        }
    }

    private static synchronized void emit(String ev, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ev", ev);
        m.put("t", System.currentTimeMillis());
        m.putAll(fields);
        out.println(Json.write(m));
    }

    private static List<Object> partitionList(Collection<TopicPartition> tps) {
        TreeSet<Integer> s = new TreeSet<>();
        for (TopicPartition tp : tps) s.add(tp.partition());
        return new ArrayList<>(s);
    }

    private static Map<String, Object> byPartition(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Object> m = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            m.put(String.valueOf(e.getKey().partition()), e.getValue() == null ? null : e.getValue().offset());
        }
        return m;
    }

    // ---- admin -------------------------------------------------------------------------------

    private static void adminLoop(String bootstrap) throws Exception {
        Plumbing.serve(out, req -> adminOp(bootstrap, req));
    }

    private static Object adminOp(String bootstrap, Map<String, Object> req) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "groupcheck-admin-" + req.get("op") + "-" + req.get("id"));
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        String op = (String) req.get("op");
        try (Admin a = Admin.create(p)) {
            switch (op) {
                case "version": return org.apache.kafka.common.utils.AppInfoParser.getVersion();
                case "listGroups": return listGroups(a, req);
                case "describeGroups": return describeGroups(a, req);
                case "listGroupOffsets": return listGroupOffsets(a, req);
                case "deleteGroups": return deleteGroups(a, req);
                default: throw new IllegalArgumentException("unknown op " + op);
            }
        }
    }

    @SuppressWarnings("deprecation")
    private static Object listGroups(Admin a, Map<String, Object> req) throws Exception {
        ListConsumerGroupsOptions opts = new ListConsumerGroupsOptions();
        if (req.get("states") != null) {
            Set<GroupState> states = new java.util.HashSet<>();
            for (Object s : Plumbing.asList(req.get("states"))) states.add(GroupState.parse((String) s));
            opts.inGroupStates(states);
        }
        Map<String, Object> out = new TreeMap<>();
        for (ConsumerGroupListing l : a.listConsumerGroups(opts).all().get(WAIT_MS, TimeUnit.MILLISECONDS)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("state", l.groupState().map(GroupState::toString).orElse(null));
            m.put("type", l.type().map(Object::toString).orElse(null));
            m.put("simple", l.isSimpleConsumerGroup());
            out.put(l.groupId(), m);
        }
        return out;
    }

    private static Object describeGroups(Admin a, Map<String, Object> req) throws Exception {
        List<String> names = new ArrayList<>();
        for (Object o : Plumbing.asList(req.get("groups"))) names.add((String) o);
        Map<String, KafkaFuture<ConsumerGroupDescription>> values = a.describeConsumerGroups(names).describedGroups();
        Map<String, Object> out = new TreeMap<>();
        for (String name : names) {
            Map<String, Object> m = new LinkedHashMap<>();
            try {
                ConsumerGroupDescription d = values.get(name).get(WAIT_MS, TimeUnit.MILLISECONDS);
                m.put("ok", true);
                m.put("state", d.groupState().toString());
                m.put("type", String.valueOf(d.type()));
                m.put("simple", d.isSimpleConsumerGroup());
                m.put("assignor", d.partitionAssignor());
                m.put("coordinator", d.coordinator() == null ? null : d.coordinator().id());
                List<Object> members = new ArrayList<>();
                for (MemberDescription md : d.members()) {
                    Map<String, Object> mm = new LinkedHashMap<>();
                    mm.put("memberId", md.consumerId());
                    mm.put("clientId", md.clientId());
                    mm.put("host", md.host());
                    mm.put("instanceId", md.groupInstanceId().orElse(null));
                    mm.put("assignment", partitionList(md.assignment().topicPartitions()));
                    Set<String> topics = new TreeSet<>();
                    for (TopicPartition tp : md.assignment().topicPartitions()) topics.add(tp.topic());
                    mm.put("topics", new ArrayList<>(topics));
                    members.add(mm);
                }
                m.put("members", members);
            } catch (ExecutionException e) {
                m.put("ok", false);
                m.put("error", Plumbing.describe(e.getCause()));
            }
            out.put(name, m);
        }
        return out;
    }

    private static Object listGroupOffsets(Admin a, Map<String, Object> req) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = a.listConsumerGroupOffsets((String) req.get("group"))
            .partitionsToOffsetAndMetadata().get(WAIT_MS, TimeUnit.MILLISECONDS);
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            out.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue() == null ? null : e.getValue().offset());
        }
        return out;
    }

    private static Object deleteGroups(Admin a, Map<String, Object> req) throws Exception {
        List<String> names = new ArrayList<>();
        for (Object o : Plumbing.asList(req.get("groups"))) names.add((String) o);
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<String, KafkaFuture<Void>> e : a.deleteConsumerGroups(names).deletedGroups().entrySet()) {
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
}
