// TxnCheck: transactions with the real Apache Kafka Java client (kafka-clients 4.3.0), driven by
// compat_tests/transactions/test_java_transactions.py over ClientCheck's JSON-line request/reply protocol:
//
//   java -cp <jars>:<classes> TxnCheck BOOTSTRAP
//
// Ops (values travel as UTF-8 strings):
//   version
//   transactions {"topic", "partition", "tid", "transactions": [{"values": [..], "end": "commit"|"abort"}]}
//       one KafkaProducer with transactional.id `tid`: initTransactions, then per entry
//       beginTransaction, send each value (acked), commit or abort. Returns the acked offsets per entry.
//   read {"topic", "partition", "isolation"}
//       assign + seekToBeginning with isolation.level `isolation`, poll until the position reaches
//       endOffsets (for read_committed the last stable offset). Returns [[offset, value], ..].
//   transform {"source", "sink", "group", "tid", "count", "end"}
//       consume-transform-produce: a consumer subscribed in `group` polls `count` records of
//       `source`; one transaction sends "out:" + value of each to `sink` (same partition) and
//       sendOffsetsToTransaction(next offsets, consumer.groupMetadata()), then commits or aborts.
//       Returns {"offsets": {partition: next offset sent}, "generation": g, "memberId": ".."}.
//   zombie {"topic", "tid"}
//       producer A (transactional.id `tid`) sends "zombie" to partition 0 in an open transaction;
//       producer B, same id, initTransactions (fencing A: the coordinator aborts A's transaction),
//       sends "fresh" to partition 0 and commits. Then A, unaware, sends "late" to partition 1 at
//       its old epoch and, that failing, aborts. Returns {"sendError": class, "abortError": class}
//       (null where nothing was thrown).
// Clients are made per request and closed before the reply. System.out is re-pointed at stderr.

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class TxnCheck {
    private static final long WAIT_MS = 40_000;

    private final String bootstrap;

    private TxnCheck(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: TxnCheck BOOTSTRAP   (requests as JSON lines on stdin)");
            System.exit(2);
        }
        PrintStream replies = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        TxnCheck check = new TxnCheck(args[0]);
        Plumbing.serve(replies, check::dispatch);
    }

    private Object dispatch(Map<String, Object> req) throws Exception {
        String op = (String) req.get("op");
        switch (op) {
            case "version": return org.apache.kafka.common.utils.AppInfoParser.getVersion();
            case "transactions": return transactions(req);
            case "read": return read(req);
            case "transform": return transform(req);
            case "zombie": return zombie(req);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private KafkaProducer<byte[], byte[]> producer(String tid) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "txncheck-" + tid);
        p.put("transactional.id", tid);
        p.put("max.block.ms", "30000");
        p.put("delivery.timeout.ms", "60000");  // >= linger.ms + request.timeout.ms
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        producer.initTransactions();
        return producer;
    }

    private KafkaConsumer<byte[], byte[]> consumer(String group, String isolation) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "txncheck-consumer");
        if (group != null) p.put("group.id", group);
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("session.timeout.ms", "6000");
        p.put("heartbeat.interval.ms", "1000");
        p.put("default.api.timeout.ms", "30000");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private Object transactions(Map<String, Object> req) throws Exception {
        String topic = (String) req.get("topic");
        int partition = ((Number) req.get("partition")).intValue();
        List<Object> out = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer((String) req.get("tid"))) {
            for (Object o : Plumbing.asList(req.get("transactions"))) {
                Map<String, Object> txn = Plumbing.asMap(o);
                producer.beginTransaction();
                List<Object> offsets = new ArrayList<>();
                for (Object v : Plumbing.asList(txn.get("values"))) {
                    byte[] value = ((String) v).getBytes(StandardCharsets.UTF_8);
                    offsets.add(producer.send(new ProducerRecord<>(topic, partition, null, value))
                                        .get(WAIT_MS, TimeUnit.MILLISECONDS).offset());
                }
                end(producer, (String) txn.get("end"));
                out.add(offsets);
            }
        }
        return out;
    }

    private static void end(KafkaProducer<byte[], byte[]> producer, String how) {
        if ("commit".equals(how)) producer.commitTransaction();
        else if ("abort".equals(how)) producer.abortTransaction();
        else throw new IllegalArgumentException("end " + how);
    }

    private Object read(Map<String, Object> req) {
        TopicPartition tp = new TopicPartition((String) req.get("topic"), ((Number) req.get("partition")).intValue());
        List<Object> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(null, (String) req.get("isolation"))) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp), Duration.ofMillis(WAIT_MS)).get(tp);
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (c.position(tp, Duration.ofMillis(WAIT_MS)) < end) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("position " + c.position(tp) + " never reached " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    out.add(List.of(r.offset(), new String(r.value(), StandardCharsets.UTF_8)));
                }
            }
        }
        return out;
    }

    private Object transform(Map<String, Object> req) throws Exception {
        String sink = (String) req.get("sink");
        int count = ((Number) req.get("count")).intValue();
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer((String) req.get("group"), "read_committed");
             KafkaProducer<byte[], byte[]> producer = producer((String) req.get("tid"))) {
            c.subscribe(List.of((String) req.get("source")));
            List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (batch.size() < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("polled " + batch.size() + " of " + count + " records");
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (batch.size() < count) batch.add(r);
                }
            }
            Map<TopicPartition, OffsetAndMetadata> next = new TreeMap<>(
                (a, b) -> a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition())
                                                      : a.topic().compareTo(b.topic()));
            producer.beginTransaction();
            for (ConsumerRecord<byte[], byte[]> r : batch) {
                byte[] value = ("out:" + new String(r.value(), StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(sink, r.partition(), null, value));
                next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            ConsumerGroupMetadata group = c.groupMetadata();
            producer.sendOffsetsToTransaction(next, group);
            end(producer, (String) req.get("end"));
            Map<String, Object> offsets = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet()) {
                offsets.put(String.valueOf(e.getKey().partition()), e.getValue().offset());
            }
            result.put("offsets", offsets);
            result.put("generation", group.generationId());
            result.put("memberId", group.memberId());
        }
        return result;
    }

    private Object zombie(Map<String, Object> req) throws Exception {
        String topic = (String) req.get("topic");
        String tid = (String) req.get("tid");
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaProducer<byte[], byte[]> zombie = producer(tid)) {
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, 0, null, bytes("zombie"))).get(WAIT_MS, TimeUnit.MILLISECONDS);
            try (KafkaProducer<byte[], byte[]> fresh = producer(tid)) {
                fresh.beginTransaction();
                fresh.send(new ProducerRecord<>(topic, 0, null, bytes("fresh"))).get(WAIT_MS, TimeUnit.MILLISECONDS);
                fresh.commitTransaction();
            }
            result.put("sendError", thrown(() ->
                zombie.send(new ProducerRecord<>(topic, 1, null, bytes("late"))).get(WAIT_MS, TimeUnit.MILLISECONDS)));
            result.put("abortError", thrown(zombie::abortTransaction));
        }
        return result;
    }

    private interface Step {
        void run() throws Exception;
    }

    private static String thrown(Step step) {
        try {
            step.run();
            return null;
        } catch (Exception e) {
            return Plumbing.unwrap(e).getClass().getName();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
