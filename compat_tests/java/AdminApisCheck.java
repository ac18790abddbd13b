import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The Java Admin on the admin APIs of issue 16 item 5, in one JVM run: incrementalAlterConfigs
 * (then describeConfigs), describeLogDirs, alterConsumerGroupOffsets + deleteConsumerGroupOffsets
 * (OffsetDelete) + listConsumerGroupOffsets, describeTopics (DescribeTopicPartitions in
 * kafka-clients 4.x when the broker lists it). Prints one JSON object of what it saw.
 *
 * usage: AdminApisCheck BOOTSTRAP TOPIC GROUP   (the topic exists, with 2 partitions)
 */
public class AdminApisCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND),
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
            Config config = admin.describeConfigs(List.of(res)).all().get(30, TimeUnit.SECONDS).get(res);
            out.put("cleanup.policy", config.get("cleanup.policy").value());
            out.put("retention.ms", config.get("retention.ms").value());

            Map<String, Object> sizes = new TreeMap<>();
            for (Map<String, LogDirDescription> dirs : admin.describeLogDirs(List.of(1)).allDescriptions()
                    .get(30, TimeUnit.SECONDS).values()) {
                for (Map.Entry<String, LogDirDescription> dir : dirs.entrySet()) {
                    for (Map.Entry<TopicPartition, ReplicaInfo> r : dir.getValue().replicaInfos().entrySet()) {
                        if (r.getKey().topic().equals(topic)) {
                            sizes.put(String.valueOf(r.getKey().partition()), r.getValue().size());
                            out.put("logDir", dir.getKey());
                        }
                    }
                }
            }
            out.put("sizes", sizes);

            TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
            admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(1), p1, new OffsetAndMetadata(0)))
                .all().get(30, TimeUnit.SECONDS);
            admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all().get(30, TimeUnit.SECONDS);
            List<Object> left = new ArrayList<>();
            for (TopicPartition tp : admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                    .get(30, TimeUnit.SECONDS).keySet()) {
                left.add(tp.partition());
            }
            out.put("offsetsLeft", left);

            TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames()
                .get(30, TimeUnit.SECONDS).get(topic);
            List<Object> partitions = new ArrayList<>();
            for (TopicPartitionInfo info : description.partitions()) partitions.add(info.partition());
            out.put("partitions", partitions);
        }
        System.out.println(Json.write(out));
    }
}
