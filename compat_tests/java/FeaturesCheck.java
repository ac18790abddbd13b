import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;

/**
 * The Java Admin on UpdateFeatures and ApiVersions' features (issue 36 item 3): describeFeatures,
 * a downgrade of transaction.version without the downgrade type (refused), a safe downgrade of
 * it to 1, a validate-only downgrade of group.version, an upgrade past what the broker supports
 * (refused), then transaction.version back to 2. Prints one JSON object of what it saw.
 *
 * usage: FeaturesCheck BOOTSTRAP
 */
public class FeaturesCheck {
    static Map<String, Object> described(Admin admin) throws Exception {
        FeatureMetadata m = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<String, FinalizedVersionRange> f : m.finalizedFeatures().entrySet())
            out.put(f.getKey(), (int) f.getValue().maxVersionLevel());
        out.put("epoch", m.finalizedFeaturesEpoch().orElse(-1L));
        for (Map.Entry<String, SupportedVersionRange> f : m.supportedFeatures().entrySet())
            out.put("supported " + f.getKey(), f.getValue().minVersion() + "-" + f.getValue().maxVersion());
        return out;
    }

    static String update(Admin admin, String feature, int level, FeatureUpdate.UpgradeType type, boolean validateOnly)
            throws Exception {
        try {
            admin.updateFeatures(Map.of(feature, new FeatureUpdate((short) level, type)),
                new UpdateFeaturesOptions().validateOnly(validateOnly)).all().get(30, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props)) {
            out.put("before", described(admin));
            out.put("downgradeAsUpgrade", update(admin, "transaction.version", 1, FeatureUpdate.UpgradeType.UPGRADE, false));
            out.put("downgrade", update(admin, "transaction.version", 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false));
            out.put("afterDowngrade", described(admin));
            out.put("validateOnly", update(admin, "group.version", 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, true));
            out.put("tooHigh", update(admin, "share.version", 5, FeatureUpdate.UpgradeType.UPGRADE, false));
            out.put("upgrade", update(admin, "transaction.version", 2, FeatureUpdate.UpgradeType.UPGRADE, false));
            out.put("after", described(admin));
        }
        System.out.println(Json.write(out));
    }
}
