import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The training run of helpers/jvm.py's class data sharing archive: loads the classes the checks
 * here use (producer, transactional producer, consumer, share consumer, Admin, the JSON lines)
 * by running each client briefly against BOOTSTRAP, a port where nothing listens, so every call
 * times out quickly. The JVM then writes the classes it loaded to the archive at exit, and each
 * later check JVM maps them instead of reading, parsing and verifying them from the jars.
 *
 * usage: WarmUp BOOTSTRAP   (prints one JSON line; a failure of any client is expected, not an error)
 */
public final class WarmUp {
    private static final int WAIT_MS = 300;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties producerProps = common(bootstrap);
        producerProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(WAIT_MS));
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.send(new ProducerRecord<>("warm-up", 0, null, new byte[1])).get(WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (Exception expected) {
            // nothing listens: the send times out, having loaded the producer's classes
        }
        producerProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "warm-up");
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
        } catch (Exception expected) {
        }
        Properties consumerProps = common(bootstrap);
        consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, "warm-up");
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(consumerProps, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("warm-up"));
            consumer.poll(Duration.ofMillis(WAIT_MS));
        } catch (Exception expected) {
        }
        try (KafkaShareConsumer<byte[], byte[]> consumer =
                 new KafkaShareConsumer<>(consumerProps, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("warm-up"));
            consumer.poll(Duration.ofMillis(WAIT_MS));
        } catch (Exception expected) {
        }
        Properties adminProps = common(bootstrap);
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(WAIT_MS));
        adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(WAIT_MS));
        try (Admin admin = Admin.create(adminProps)) {
            admin.listTopics().names().get(WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (Exception expected) {
        }
        System.out.println(Json.write(Map.of("warmedUp", Json.parse("[true]"))));
    }

    private static Properties common(String bootstrap) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        return props;
    }
}
