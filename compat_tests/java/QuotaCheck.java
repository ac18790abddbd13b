import java.util.*;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Client quotas through the Java client (kafka-clients 4.3.0), in one JVM run: the Admin sets
 * producer_byte_rate on a client-id (AlterClientQuotas) and reads it back (DescribeClientQuotas);
 * then a producer with that client-id sends 1000-byte records for SECONDS, at most 100 unacked,
 * and reports when each was acknowledged (ms since it started) and its produce-throttle-time-max.
 * Prints one JSON object.
 *
 * usage: QuotaCheck BOOTSTRAP TOPIC CLIENT_ID BYTES_PER_SECOND SECONDS
 */
public class QuotaCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], clientId = args[2];
        double quota = Double.parseDouble(args[3]);
        long seconds = Long.parseLong(args[4]);
        Map<String, Object> out = new LinkedHashMap<>();
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, clientId));
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", quota))))).all().get(30, TimeUnit.SECONDS);
            ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, clientId)));
            Map<ClientQuotaEntity, Map<String, Double>> described =
                admin.describeClientQuotas(filter).entities().get(30, TimeUnit.SECONDS);
            out.put("described", described.get(entity));
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        List<Long> acks = Collections.synchronizedList(new ArrayList<>());
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        Semaphore unacked = new Semaphore(100);
        byte[] value = new byte[1000];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            long start = System.nanoTime(), end = start + TimeUnit.SECONDS.toNanos(seconds);
            while (System.nanoTime() < end) {
                if (!unacked.tryAcquire(10, TimeUnit.MILLISECONDS)) continue;
                producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                    if (e != null) errors.add(e.toString());
                    else acks.add((System.nanoTime() - start) / 1_000_000);
                    unacked.release();
                });
            }
            producer.flush();
            for (Map.Entry<org.apache.kafka.common.MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
                String name = m.getKey().name(), group = m.getKey().group();
                if (name.equals("produce-throttle-time-max") && group.equals("producer-metrics")) {
                    out.put("throttleMax", m.getValue().metricValue());
                }
            }
        }
        out.put("errors", errors);
        out.put("acks", new ArrayList<>(acks));
        System.out.println(Json.write(out));
    }
}
