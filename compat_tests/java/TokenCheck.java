import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.common.utils.SecurityUtils;

/**
 * The Java Admin's delegation token calls (KIP-48), served as JSON lines like ClientCheck:
 * createToken {config, renewers: ["User:bob"], maxLifetimeMs, owner?}, describeTokens {config,
 * owners?}, renewToken {config, hmac (base64), periodMs}, expireToken {config, hmac, periodMs}.
 * A token is answered as {tokenId, owner, requester, renewers, issue, expiry, max, hmac}.
 *
 * usage: TokenCheck BOOTSTRAP   (requests as JSON lines on stdin)
 */
public final class TokenCheck {
    private static final long WAIT_MS = 40_000;
    private final String bootstrap;

    private TokenCheck(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        PrintStream replies = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        TokenCheck check = new TokenCheck(args[0]);
        Plumbing.serve(replies, check::dispatch);
    }

    private Object dispatch(Map<String, Object> req) throws Exception {
        try (Admin admin = Admin.create(props(req))) {
            switch ((String) req.get("op")) {
                case "createToken": {
                    CreateDelegationTokenOptions opts = new CreateDelegationTokenOptions()
                        .renewers(principals(req.get("renewers")));
                    if (req.get("maxLifetimeMs") != null) opts.maxLifetimeMs(((Number) req.get("maxLifetimeMs")).longValue());
                    if (req.get("owner") != null) opts.owner(SecurityUtils.parseKafkaPrincipal((String) req.get("owner")));
                    return token(admin.createDelegationToken(opts).delegationToken().get(WAIT_MS, TimeUnit.MILLISECONDS));
                }
                case "describeTokens": {
                    DescribeDelegationTokenOptions opts = new DescribeDelegationTokenOptions();
                    if (req.get("owners") != null) opts.owners(principals(req.get("owners")));
                    List<Object> out = new ArrayList<>();
                    for (DelegationToken t : admin.describeDelegationToken(opts).delegationTokens()
                            .get(WAIT_MS, TimeUnit.MILLISECONDS)) out.add(token(t));
                    return out;
                }
                case "renewToken":
                    return admin.renewDelegationToken(hmac(req), new RenewDelegationTokenOptions()
                        .renewTimePeriodMs(((Number) req.get("periodMs")).longValue()))
                        .expiryTimestamp().get(WAIT_MS, TimeUnit.MILLISECONDS);
                case "expireToken":
                    return admin.expireDelegationToken(hmac(req), new ExpireDelegationTokenOptions()
                        .expiryTimePeriodMs(((Number) req.get("periodMs")).longValue()))
                        .expiryTimestamp().get(WAIT_MS, TimeUnit.MILLISECONDS);
                default:
                    throw new IllegalArgumentException("unknown op " + req.get("op"));
            }
        }
    }

    private static Map<String, Object> token(DelegationToken token) {
        TokenInformation info = token.tokenInfo();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tokenId", info.tokenId());
        m.put("owner", info.ownerAsString());
        m.put("requester", info.tokenRequester().toString());
        m.put("renewers", new ArrayList<Object>(info.renewersAsString()));
        m.put("issue", info.issueTimestamp());
        m.put("expiry", info.expiryTimestamp());
        m.put("max", info.maxTimestamp());
        m.put("hmac", token.hmacAsBase64String());
        return m;
    }

    private static List<KafkaPrincipal> principals(Object list) {
        List<KafkaPrincipal> out = new ArrayList<>();
        for (Object o : Plumbing.asList(list == null ? List.of() : list)) out.add(SecurityUtils.parseKafkaPrincipal((String) o));
        return out;
    }

    private static byte[] hmac(Map<String, Object> req) {
        return Base64.getDecoder().decode((String) req.get("hmac"));
    }

    private Properties props(Map<String, Object> req) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        if (req.get("config") != null) {
            for (Map.Entry<String, Object> e : Plumbing.asMap(req.get("config")).entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        }
        return p;
    }
}
