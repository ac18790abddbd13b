// The Java client calls Spark's Kafka connector (spark-sql-kafka-0-10) makes, in its order and
// with its settings, against a real broker. Its jar is not obtainable here, so this program does
// what KafkaOffsetReaderAdmin (driver), KafkaDataConsumer (executor) and KafkaWriter (sink) do:
//
//   java -cp <jars>:<classes> SparkConnectorCheck BOOTSTRAP TOPIC roundtrip PARTITIONS RECORDS
//     sink: idempotent producer, acks=all, byte[] serializers, explicit partition/timestamp/headers;
//     driver: Admin describeTopics, listTopics (subscribePattern), listOffsets earliest / latest /
//             forTimestamp with isolation read_uncommitted;
//     executor: KafkaConsumer group.id=<prefix>-executor, enable.auto.commit=false,
//               auto.offset.reset=none, assign -> seek -> poll to the range end per partition,
//               seekToBeginning / seekToEnd + position.
//   java ... SparkConnectorCheck BOOTSTRAP TOPIC dataloss
//     executor reads partition 0 from offset 0 after retention deleted its head: with
//     failOnDataLoss=true the connector fails on OffsetOutOfRangeException; with false it moves to
//     the earliest offset (seekToBeginning + position) and reads on.
//
// Prints one JSON object on stdout; the Python side (test_spark_connector_calls.py) checks it.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SparkConnectorCheck {
    static final long BASE_TS = 1_700_000_000_000L;
    static final ListOffsetsOptions READ_UNCOMMITTED = new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED);

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], mode = args[2];
        Map<String, Object> out = mode.equals("roundtrip")
                ? roundtrip(bootstrap, topic, Integer.parseInt(args[3]), Integer.parseInt(args[4]))
                : dataLoss(bootstrap, topic);
        System.out.println(Json.write(out));
        System.out.flush();
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return Admin.create(p);
    }

    // KafkaSourceProvider / KafkaWriter: byte[] serializers; the Java client's defaults since
    // Kafka 3.0 give idempotence and acks=all, set here explicitly as the connector relies on them.
    static KafkaProducer<byte[], byte[]> sinkProducer(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        return new KafkaProducer<>(p);
    }

    // KafkaSourceProvider.kafkaParamsForExecutors.
    static KafkaConsumer<byte[], byte[]> executorConsumer(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("group.id", "spark-kafka-source-" + java.util.UUID.randomUUID() + "-executor");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "none");
        p.put("isolation.level", "read_uncommitted");
        p.put("receive.buffer.bytes", "65536");  // the connector's default for executors
        return new KafkaConsumer<>(p);
    }

    static Map<String, Object> roundtrip(String bootstrap, String topic, int partitions, int n) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaProducer<byte[], byte[]> producer = sinkProducer(bootstrap)) {
            for (int i = 0; i < n; i++) {
                List<Header> headers = new ArrayList<>();
                if (i % 2 == 1) headers.add(new RecordHeader("i", Integer.toString(i).getBytes(StandardCharsets.UTF_8)));
                byte[] key = i % 5 == 0 ? null : ("k" + i).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(topic, i % partitions, BASE_TS + i, key,
                        ("v" + i).getBytes(StandardCharsets.UTF_8), headers)).get();
            }
            producer.flush();
        }
        Map<TopicPartition, Long> earliest, latest, byTime;
        try (Admin admin = admin(bootstrap)) {
            Map<String, TopicDescription> described = admin.describeTopics(List.of(topic)).allTopicNames().get();
            List<TopicPartition> tps = new ArrayList<>();
            described.get(topic).partitions().forEach(p -> tps.add(new TopicPartition(topic, p.partition())));
            Set<String> names = admin.listTopics().names().get();
            Pattern pattern = Pattern.compile(Pattern.quote(topic) + ".*");
            out.put("patternMatches", names.stream().filter(t -> pattern.matcher(t).matches()).sorted().toList());
            out.put("partitions", tps.size());
            earliest = listOffsets(admin, tps, OffsetSpec.earliest());
            latest = listOffsets(admin, tps, OffsetSpec.latest());
            byTime = listOffsets(admin, tps, OffsetSpec.forTimestamp(BASE_TS + n / 2));
        }
        out.put("earliest", byPartition(earliest));
        out.put("latest", byPartition(latest));
        out.put("forTimestamp", byPartition(byTime));
        List<Object> records = new ArrayList<>();
        Map<String, Object> positions = new TreeMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(bootstrap)) {
            for (TopicPartition tp : new TreeMap<String, TopicPartition>(keyed(latest.keySet())).values()) {
                long start = earliest.get(tp), end = latest.get(tp);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                long begin = consumer.position(tp);
                consumer.seekToEnd(List.of(tp));
                long stop = consumer.position(tp);
                positions.put(Integer.toString(tp.partition()), List.of(begin, stop));
                consumer.seek(tp, start);
                readRange(consumer, tp, start, end, records);
            }
        }
        out.put("positions", positions);
        out.put("records", records);
        return out;
    }

    static void readRange(KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp, long start, long end,
                          List<Object> into) {
        long next = start;
        long deadline = System.currentTimeMillis() + 60_000;
        while (next < end) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no data for offset " + next);
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(512)).records(tp)) {
                if (r.offset() >= end) { next = end; break; }
                into.add(record(r));
                next = r.offset() + 1;
            }
        }
    }

    static Map<String, Object> dataLoss(String bootstrap, String topic) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        TopicPartition tp = new TopicPartition(topic, 0);
        long earliest, latest;
        try (Admin admin = admin(bootstrap)) {
            earliest = listOffsets(admin, List.of(tp), OffsetSpec.earliest()).get(tp);
            latest = listOffsets(admin, List.of(tp), OffsetSpec.latest()).get(tp);
        }
        out.put("earliest", earliest);
        out.put("latest", latest);
        try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(bootstrap)) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 0);
            // failOnDataLoss=true: the fetch of a deleted offset must fail, not reset silently.
            try {
                long deadline = System.currentTimeMillis() + 30_000;
                while (System.currentTimeMillis() < deadline) {
                    if (!consumer.poll(Duration.ofMillis(512)).isEmpty()) {
                        out.put("failOnDataLoss", "records returned from a deleted offset");
                        break;
                    }
                }
            } catch (OffsetOutOfRangeException e) {
                out.put("failOnDataLoss", "OffsetOutOfRangeException");
                out.put("outOfRangeOffset", e.offsetOutOfRangePartitions().get(tp));
            }
            // failOnDataLoss=false: move to the earliest offset still there and read on.
            consumer.seekToBeginning(List.of(tp));
            long resumed = consumer.position(tp);
            out.put("resumedAt", resumed);
            List<Object> records = new ArrayList<>();
            readRange(consumer, tp, resumed, latest, records);
            out.put("readAfterLoss", records.size());
        }
        return out;
    }

    static Map<TopicPartition, Long> listOffsets(Admin admin, List<TopicPartition> tps, OffsetSpec spec) throws Exception {
        Map<TopicPartition, OffsetSpec> request = new LinkedHashMap<>();
        for (TopicPartition tp : tps) request.put(tp, spec);
        Map<TopicPartition, ListOffsetsResultInfo> result = admin.listOffsets(request, READ_UNCOMMITTED).all().get();
        Map<TopicPartition, Long> out = new LinkedHashMap<>();
        result.forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    static Map<String, TopicPartition> keyed(Set<TopicPartition> tps) {
        Map<String, TopicPartition> out = new TreeMap<>();
        for (TopicPartition tp : tps) out.put(String.format("%08d", tp.partition()), tp);
        return out;
    }

    static Map<String, Object> byPartition(Map<TopicPartition, Long> offsets) {
        Map<String, Object> out = new TreeMap<>();
        offsets.forEach((tp, o) -> out.put(Integer.toString(tp.partition()), o));
        return out;
    }

    static Map<String, Object> record(ConsumerRecord<byte[], byte[]> r) {
        Base64.Encoder b64 = Base64.getEncoder();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("partition", r.partition());
        m.put("offset", r.offset());
        m.put("timestamp", r.timestamp());
        m.put("timestampType", r.timestampType().id);
        m.put("key", r.key() == null ? null : b64.encodeToString(r.key()));
        m.put("value", r.value() == null ? null : b64.encodeToString(r.value()));
        List<Object> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(List.of(h.key(), h.value() == null ? "" : b64.encodeToString(h.value())));
        }
        m.put("headers", headers);
        return m;
    }
}
