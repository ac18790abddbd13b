/*
 * bench/share_groups.py's consumer side: one JVM, N consumer threads of one group, reading a
 * topic that holds exactly EXPECTED records until the threads together have seen them all.
 *
 *   QueueBench BOOTSTRAP TOPIC GROUP share|classic THREADS EXPECTED TIMEOUT_S
 *
 * share: KafkaShareConsumer, implicit acknowledgement (each poll accepts the previous one's
 * records, as a queue consumer does by default); classic: KafkaConsumer with the consumer
 * group protocol, auto commit, from the earliest offset. Prints one JSON line: the records seen
 * (distinct offsets and deliveries), seconds from the first record to the last, records/s.
 */

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class QueueBench {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], kind = args[3];
        int threads = Integer.parseInt(args[4]);
        long expected = Long.parseLong(args[5]);
        long deadline = System.nanoTime() + Long.parseLong(args[6]) * 1_000_000_000L;
        Set<Long> seen = ConcurrentHashMap.newKeySet();  // partition << 40 | offset
        AtomicLong deliveries = new AtomicLong();
        AtomicLong first = new AtomicLong(), last = new AtomicLong();
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Thread(() -> {
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                if (kind.equals("classic")) {
                    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                }
                try (AutoCloseable c = kind.equals("share") ? new KafkaShareConsumer<byte[], byte[]>(p)
                                                            : new KafkaConsumer<byte[], byte[]>(p)) {
                    if (c instanceof KafkaShareConsumer) ((KafkaShareConsumer<?, ?>) c).subscribe(List.of(topic));
                    else ((KafkaConsumer<?, ?>) c).subscribe(List.of(topic));
                    while (seen.size() < expected && System.nanoTime() < deadline) {
                        ConsumerRecords<byte[], byte[]> recs = c instanceof KafkaShareConsumer
                            ? ((KafkaShareConsumer<byte[], byte[]>) c).poll(Duration.ofMillis(200))
                            : ((KafkaConsumer<byte[], byte[]>) c).poll(Duration.ofMillis(200));
                        if (recs.isEmpty()) continue;
                        long now = System.nanoTime();
                        first.compareAndSet(0, now);
                        for (ConsumerRecord<byte[], byte[]> r : recs) {
                            seen.add(((long) r.partition() << 40) | r.offset());
                        }
                        deliveries.addAndGet(recs.count());
                        last.set(now);
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                }
            });
            workers[i].start();
        }
        for (Thread w : workers) w.join();
        double seconds = (last.get() - first.get()) / 1e9;
        System.out.printf("{\"records\": %d, \"deliveries\": %d, \"seconds\": %.3f, \"records_per_s\": %.0f}%n",
                          seen.size(), deliveries.get(), seconds, seconds > 0 ? seen.size() / seconds : 0.0);
    }
}
