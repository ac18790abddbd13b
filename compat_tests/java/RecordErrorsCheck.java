import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java producer on a batch the broker refuses record by record (Produce v8+ record_errors):
 * sends one record per timestamp given, held in one batch by linger.ms, and prints one JSON
 * object: for each record, the exception class and message its send failed with.
 *
 * usage: RecordErrorsCheck BOOTSTRAP TOPIC TIMESTAMP...
 */
public class RecordErrorsCheck {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "500");
        props.put(ProducerConfig.RETRIES_CONFIG, "0");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        props.put(ProducerConfig.ACKS_CONFIG, "1");
        List<Object> records = new ArrayList<>();
        try (Producer<byte[], byte[]> producer =
                 new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 2; i < args.length; i++) {
                sent.add(producer.send(new ProducerRecord<>(args[1], 0, Long.parseLong(args[i]), null,
                                                            ("r" + i).getBytes())));
            }
            for (Future<RecordMetadata> f : sent) {
                Map<String, Object> r = new LinkedHashMap<>();
                try {
                    r.put("offset", f.get().offset());
                } catch (ExecutionException e) {
                    r.put("exception", e.getCause().getClass().getSimpleName());
                    r.put("message", String.valueOf(e.getCause().getMessage()));
                }
                records.add(r);
            }
        }
        System.out.println(Json.write(Map.of("records", records)));
    }
}
