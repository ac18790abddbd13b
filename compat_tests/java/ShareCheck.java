// ShareCheck: one share-group member (KIP-932) with the real Apache Kafka Java client's
// KafkaShareConsumer (kafka-clients 4.3.0), driven by compat_tests/groups/test_share_groups_java.py.
//
//   java -cp <jars>:<classes> ShareCheck BOOTSTRAP SPEC_JSON
//       SPEC_JSON: {"name", "topic", "group", "config": {...},
//                   "actions": {"<value>": "accept" | "release" | "reject"}  (default accept),
//                   "hold": true  (optional: keep the first records it gets, never acknowledge
//                                  them, and stop polling, while staying in the group)}
//       Explicit acknowledgement: every record of a poll is acknowledged as its value's action
//       says, then commitSync() sends them. stdout is a stream of JSON event lines ("ev", "t"):
//         started                                     the consumer exists and has subscribed
//         records  {"records": [[partition, offset, value, deliveryCount, action], ..]}
//         acked    {"errors": {"p": "exception" | null}}   commitSync() returned
//         held     {"records": [..]}                  hold mode: what it keeps unacknowledged
//         error    {"error": "..", "trace": ".."}     anything that ended the loop
//         closed                                      close() returned; the JVM exits next
//       A line "close" on stdin (or stdin's end) closes the consumer and exits; SIGKILL is the
//       other way out.
//
// System.out is re-pointed at stderr, so only protocol lines reach stdout.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ShareCheck {
    private static PrintStream out;
    private static final AtomicBoolean closing = new AtomicBoolean();
    private static KafkaShareConsumer<byte[], byte[]> consumer;

    public static void main(String[] args) {
        out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length != 2) {
            System.err.println("usage: ShareCheck BOOTSTRAP SPEC_JSON");
            System.exit(2);
        }
        System.exit(run(args[0], Plumbing.asMap(Json.parse(args[1]))));
    }

    static int run(String bootstrap, Map<String, Object> spec) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", spec.get("group"));
        p.put("client.id", "sharecheck-" + spec.get("name"));
        p.put("share.acknowledgement.mode", "explicit");
        if (spec.get("config") != null) {
            for (Map.Entry<String, Object> e : Plumbing.asMap(spec.get("config")).entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        }
        Map<String, Object> actions = spec.get("actions") == null ? Map.of() : Plumbing.asMap(spec.get("actions"));
        boolean hold = Boolean.TRUE.equals(spec.get("hold"));
        Thread stdin = new Thread(ShareCheck::watchStdin, "stdin-watch");
        stdin.setDaemon(true);
        try {
            consumer = new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            consumer.subscribe(List.of((String) spec.get("topic")));
            emit("started", Map.of());
            stdin.start();
            while (!closing.get()) {
                ConsumerRecords<byte[], byte[]> batch;
                try {
                    batch = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    break;
                }
                if (batch.isEmpty()) continue;
                List<Object> recs = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    String value = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
                    String action = hold ? "hold" : String.valueOf(actions.getOrDefault(value, "accept"));
                    Optional<Short> count = r.deliveryCount();
                    recs.add(List.of(r.partition(), r.offset(), value, count.isPresent() ? (int) count.get() : -1, action));
                    if (!hold) consumer.acknowledge(r, AcknowledgeType.valueOf(action.toUpperCase()));
                }
                if (hold) {
                    emit("held", Map.of("records", recs));
                    while (!closing.get()) Thread.sleep(50);  // in the group, never acknowledging
                    break;
                }
                emit("records", Map.of("records", recs));
                Map<TopicIdPartition, Optional<KafkaException>> result;
                try {
                    result = consumer.commitSync(Duration.ofSeconds(30));
                } catch (WakeupException e) {
                    result = consumer.commitSync(Duration.ofSeconds(30));
                }
                Map<String, Object> errors = new TreeMap<>();
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : result.entrySet()) {
                    errors.put(String.valueOf(e.getKey().partition()), e.getValue().map(Plumbing::describe).orElse(null));
                }
                emit("acked", Map.of("errors", errors));
            }
            consumer.close(Duration.ofSeconds(20));
            emit("closed", Map.of());
            return 0;
        } catch (Throwable t) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("error", Plumbing.describe(t));
            m.put("trace", Plumbing.trace(t));
            emit("error", m);
            return 1;
        }
    }

    private static void watchStdin() {
        try {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if ("close".equals(line.trim())) break;
            }
        } catch (Exception ignored) {
            // stdin gone: the test is gone too
        }
        closing.set(true);
        consumer.wakeup();
    }

    private static synchronized void emit(String ev, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ev", ev);
        m.put("t", System.currentTimeMillis());
        m.putAll(fields);
        out.println(Json.write(m));
    }
}
