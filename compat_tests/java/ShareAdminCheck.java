// ShareAdminCheck: the share-group calls of the real Apache Kafka Java client's Admin
// (kafka-clients 4.3.0, KIP-932), driven by compat_tests/groups/test_share_groups_java.py through
// java_share_members.ShareAdmin, over JavaClient's request/reply line protocol:
//
//   java -cp <jars>:<classes> ShareAdminCheck BOOTSTRAP
//       stdin, a JSON request a line: {"id", "op", ...}; stdout, a reply a line:
//       {"id", "ok": true, "result"} or {"id", "ok": false, "errorClass", "error", "trace"}
//   ops:
//     listOffsets   {"group", "partitions": [[topic, p], ..] | null}  listShareGroupOffsets
//                   -> {"topic:p": {"start", "leaderEpoch", "lag"} | null}
//     alterOffsets  {"group", "offsets": [[topic, p, offset], ..]}   alterShareGroupOffsets
//                   -> {"topic:p": null | "exception: message"}
//     deleteOffsets {"group", "topics": [..]}                         deleteShareGroupOffsets
//                   -> {"topic": null | "exception: message"}
//     deleteGroups  {"groups": [..]}                                  deleteShareGroups
//                   -> {"group": null | "exception: message"}
//     describe      {"groups": [..]}                                  describeShareGroups
//                   -> {"group": {"state", "members"} | "exception: message"}
//   A per-partition, per-topic or per-group failure is a value; anything else fails the op.
//
// System.out is re-pointed at stderr, so only protocol lines reach stdout.

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

public final class ShareAdminCheck {
    private static final long WAIT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", "shareadmincheck");
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(p)) {
            Plumbing.serve(out, req -> op(admin, req));
        }
    }

    private static Object op(Admin a, Map<String, Object> req) throws Exception {
        String group = (String) req.get("group");
        switch ((String) req.get("op")) {
            case "listOffsets": {
                ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
                if (req.get("partitions") != null) {
                    List<TopicPartition> tps = new ArrayList<>();
                    for (Object o : Plumbing.asList(req.get("partitions"))) tps.add(partition(Plumbing.asList(o)));
                    spec.topicPartitions(tps);
                }
                Map<TopicPartition, SharePartitionOffsetInfo> got = a.listShareGroupOffsets(Map.of(group, spec))
                    .partitionsToOffsetInfo(group).get(WAIT_MS, TimeUnit.MILLISECONDS);
                Map<String, Object> result = new TreeMap<>();
                for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : got.entrySet()) {
                    SharePartitionOffsetInfo info = e.getValue();
                    Map<String, Object> m = null;
                    if (info != null) {
                        m = new LinkedHashMap<>();
                        m.put("start", info.startOffset());
                        m.put("leaderEpoch", info.leaderEpoch().orElse(null));
                        m.put("lag", info.lag().orElse(null));
                    }
                    result.put(e.getKey().topic() + ":" + e.getKey().partition(), m);
                }
                return result;
            }
            case "alterOffsets": {
                Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
                for (Object o : Plumbing.asList(req.get("offsets"))) {
                    List<Object> l = Plumbing.asList(o);
                    offsets.put(partition(l), ((Number) l.get(2)).longValue());
                }
                var altered = a.alterShareGroupOffsets(group, offsets);
                Map<String, Object> result = new TreeMap<>();
                for (TopicPartition tp : offsets.keySet()) {
                    result.put(tp.topic() + ":" + tp.partition(), outcome(altered.partitionResult(tp)));
                }
                return result;
            }
            case "deleteOffsets": {
                List<String> topics = strings(req.get("topics"));
                var deleted = a.deleteShareGroupOffsets(group, new HashSet<>(topics));
                Map<String, Object> result = new TreeMap<>();
                for (String t : topics) result.put(t, outcome(deleted.topicResult(t)));
                return result;
            }
            case "deleteGroups": {
                List<String> groups = strings(req.get("groups"));
                Map<String, KafkaFuture<Void>> deleted = a.deleteShareGroups(groups).deletedGroups();
                Map<String, Object> result = new TreeMap<>();
                for (String g : groups) result.put(g, outcome(deleted.get(g)));
                return result;
            }
            case "describe": {
                List<String> groups = strings(req.get("groups"));
                Map<String, KafkaFuture<ShareGroupDescription>> described = a.describeShareGroups(groups).describedGroups();
                Map<String, Object> result = new TreeMap<>();
                for (String g : groups) {
                    try {
                        ShareGroupDescription d = described.get(g).get(WAIT_MS, TimeUnit.MILLISECONDS);
                        Map<String, Object> m = new LinkedHashMap<>();
                        m.put("state", d.groupState().toString());
                        m.put("members", d.members().size());
                        result.put(g, m);
                    } catch (ExecutionException e) {
                        result.put(g, Plumbing.describe(e));
                    }
                }
                return result;
            }
            default:
                throw new IllegalArgumentException("unknown op " + req.get("op"));
        }
    }

    /** null when the future completed, else the exception's class and message. */
    private static String outcome(KafkaFuture<Void> f) throws Exception {
        try {
            f.get(WAIT_MS, TimeUnit.MILLISECONDS);
            return null;
        } catch (ExecutionException e) {
            return Plumbing.describe(e);
        }
    }

    private static TopicPartition partition(List<Object> l) {
        return new TopicPartition((String) l.get(0), ((Number) l.get(1)).intValue());
    }

    private static List<String> strings(Object o) {
        List<String> out = new ArrayList<>();
        for (Object x : Plumbing.asList(o)) out.add((String) x);
        return out;
    }
}
