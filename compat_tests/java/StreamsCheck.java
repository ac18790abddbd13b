// StreamsCheck: KIP-1071 streams groups through the real Apache Kafka Java client (kafka-clients
// 4.3.0), driven by compat_tests/groups/test_streams_groups_java.py over JavaClient's request/reply lines:
//
//   java -cp <jars>:<classes> StreamsCheck BOOTSTRAP
//       stdin, a JSON request a line: {"id", "op", ...}; stdout, a reply a line:
//       {"id", "ok": true, "result"} or {"id", "ok": false, "errorClass", "error", "trace"}
//   ops:
//     heartbeat {"group", "member", "epoch", "process", "source", "changelog", "active", "standby"}
//               StreamsGroupHeartbeatRequest v0 built, written and its answer parsed by the client's
//               own classes (what Kafka Streams' StreamsGroupHeartbeatRequestManager sends): epoch 0
//               joins with a one-subtopology topology reading `source`, keeping `changelog`;
//               "active"/"standby" are the owned tasks of subtopology "0" (partition lists)
//               -> {"error", "message", "epoch", "active", "standby", "warmup" (null: unchanged),
//                   "status": [[code, detail], ..]}
//     describe  {"group"}   Admin.describeStreamsGroups
//               -> {"state", "groupEpoch", "assignmentEpoch", "topologyEpoch", "subtopologies":
//                   {id: {"sources", "changelogs": {name: partitions}}},
//                   "members": {memberId: {"process", "active", "standby"}}}
//     list      {}          Admin.listGroups of type streams -> [[groupId, type, protocol], ..]
//
// System.out is re-pointed at stderr, so only protocol lines reach stdout.

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatRequest;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse;

public final class StreamsCheck {
    private static final long WAIT_MS = 60_000;
    private static int correlationId = 0;

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        String[] hostPort = args[0].split(",")[0].split(":");
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", "streamscheck");
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(p);
             Socket socket = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            socket.setSoTimeout(30_000);
            DataOutputStream to = new DataOutputStream(socket.getOutputStream());
            DataInputStream from = new DataInputStream(socket.getInputStream());
            Plumbing.serve(out, req -> {
                switch ((String) req.get("op")) {
                    case "heartbeat": return heartbeat(to, from, req);
                    case "describe": return describe(admin, (String) req.get("group"));
                    case "list": return list(admin);
                    default: throw new IllegalArgumentException("unknown op " + req.get("op"));
                }
            });
        }
    }

    private static Object heartbeat(DataOutputStream to, DataInputStream from, Map<String, Object> req)
            throws Exception {
        int epoch = ((Number) req.get("epoch")).intValue();
        StreamsGroupHeartbeatRequestData data = new StreamsGroupHeartbeatRequestData()
            .setGroupId((String) req.get("group"))
            .setMemberId((String) req.get("member"))
            .setMemberEpoch(epoch)
            .setEndpointInformationEpoch(0)
            .setActiveTasks(tasks(req.get("active")))
            .setStandbyTasks(tasks(req.get("standby")))
            .setWarmupTasks(new ArrayList<>());
        if (epoch == 0) {
            StreamsGroupHeartbeatRequestData.TopicInfo changelog = new StreamsGroupHeartbeatRequestData.TopicInfo()
                .setName((String) req.get("changelog")).setPartitions(0).setReplicationFactor((short) 0)
                .setTopicConfigs(new ArrayList<>());
            StreamsGroupHeartbeatRequestData.Subtopology sub = new StreamsGroupHeartbeatRequestData.Subtopology()
                .setSubtopologyId("0")
                .setSourceTopics(List.of((String) req.get("source")))
                .setStateChangelogTopics(List.of(changelog))
                .setRepartitionSourceTopics(new ArrayList<>())
                .setCopartitionGroups(new ArrayList<>());
            data.setRebalanceTimeoutMs(30_000)
                .setProcessId((String) req.get("process"))
                .setClientTags(new ArrayList<>())
                .setTopology(new StreamsGroupHeartbeatRequestData.Topology().setEpoch(1)
                    .setSubtopologies(List.of(sub)));
        }
        short version = 0;
        RequestHeader header = new RequestHeader(ApiKeys.STREAMS_GROUP_HEARTBEAT, version, "streamscheck",
                                                 ++correlationId);
        ByteBuffer request = new StreamsGroupHeartbeatRequest.Builder(data).build(version).serializeWithHeader(header);
        byte[] bytes = new byte[request.remaining()];
        request.get(bytes);
        to.writeInt(bytes.length);
        to.write(bytes);
        to.flush();
        byte[] reply = new byte[from.readInt()];
        from.readFully(reply);
        StreamsGroupHeartbeatResponseData r =
            ((StreamsGroupHeartbeatResponse) AbstractResponse.parseResponse(ByteBuffer.wrap(reply), header)).data();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("error", (int) r.errorCode());
        m.put("message", r.errorMessage());
        m.put("epoch", r.memberEpoch());
        m.put("active", partitions(r.activeTasks()));
        m.put("standby", partitions(r.standbyTasks()));
        m.put("warmup", partitions(r.warmupTasks()));
        List<Object> status = new ArrayList<>();
        if (r.status() != null) {
            for (StreamsGroupHeartbeatResponseData.Status s : r.status()) {
                status.add(List.of((int) s.statusCode(), s.statusDetail()));
            }
        }
        m.put("status", status);
        return m;
    }

    private static List<StreamsGroupHeartbeatRequestData.TaskIds> tasks(Object partitions) {
        List<StreamsGroupHeartbeatRequestData.TaskIds> out = new ArrayList<>();
        List<Integer> ps = new ArrayList<>();
        for (Object o : Plumbing.asList(partitions)) ps.add(((Number) o).intValue());
        if (!ps.isEmpty()) out.add(new StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId("0").setPartitions(ps));
        return out;
    }

    private static List<Integer> partitions(List<StreamsGroupHeartbeatResponseData.TaskIds> tasks) {
        if (tasks == null) return null;
        List<Integer> out = new ArrayList<>();
        for (StreamsGroupHeartbeatResponseData.TaskIds t : tasks) out.addAll(t.partitions());
        out.sort(null);
        return out;
    }

    private static Object describe(Admin admin, String group) throws Exception {
        StreamsGroupDescription d = admin.describeStreamsGroups(List.of(group)).all()
            .get(WAIT_MS, TimeUnit.MILLISECONDS).get(group);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("state", d.groupState().toString());
        m.put("groupEpoch", d.groupEpoch());
        m.put("assignmentEpoch", d.targetAssignmentEpoch());
        m.put("topologyEpoch", d.topologyEpoch());
        Map<String, Object> subs = new TreeMap<>();
        for (StreamsGroupSubtopologyDescription s : d.subtopologies()) {
            Map<String, Object> changelogs = new TreeMap<>();
            s.stateChangelogTopics().forEach((name, info) -> changelogs.put(name, info.partitions()));
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("sources", s.sourceTopics());
            one.put("changelogs", changelogs);
            subs.put(s.subtopologyId(), one);
        }
        m.put("subtopologies", subs);
        Map<String, Object> members = new TreeMap<>();
        for (StreamsGroupMemberDescription member : d.members()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("process", member.processId());
            one.put("active", flat(member.assignment().activeTasks()));
            one.put("standby", flat(member.assignment().standbyTasks()));
            members.put(member.memberId(), one);
        }
        m.put("members", members);
        return m;
    }

    private static List<Integer> flat(List<StreamsGroupMemberAssignment.TaskIds> tasks) {
        List<Integer> out = new ArrayList<>();
        for (StreamsGroupMemberAssignment.TaskIds t : tasks) out.addAll(t.partitions());
        out.sort(null);
        return out;
    }

    private static Object list(Admin admin) throws Exception {
        List<Object> out = new ArrayList<>();
        for (GroupListing g : admin.listGroups(new ListGroupsOptions().withTypes(Set.of(GroupType.STREAMS)))
                .all().get(WAIT_MS, TimeUnit.MILLISECONDS)) {
            out.add(List.of(g.groupId(), g.type().map(Object::toString).orElse(""), g.protocol()));
        }
        return out;
    }
}
