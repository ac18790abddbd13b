import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** What every check program here needs: the request loop, an error as one line or a short trace,
 *  and the JSON requests' maps and lists (Json.java) typed. */
final class Plumbing {
    private Plumbing() {}

    interface Handler {
        Object handle(Map<String, Object> request) throws Exception;
    }

    /** Answer each JSON line of stdin with one JSON line on `replies`: {"id", "ok": true, "result"},
     *  or {"id", "ok": false, "errorClass", "error", "trace"} when the handler threw. */
    static void serve(PrintStream replies, Handler handler) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> reply = new LinkedHashMap<>();
            try {
                Map<String, Object> request = asMap(Json.parse(line));
                reply.put("id", request.get("id"));
                Object result = handler.handle(request);
                reply.put("ok", true);
                reply.put("result", result);
            } catch (Throwable t) {
                Throwable cause = unwrap(t);
                reply.put("ok", false);
                reply.put("errorClass", cause.getClass().getName());
                reply.put("error", String.valueOf(cause.getMessage()));
                reply.put("trace", trace(cause));
            }
            replies.println(Json.write(reply));
        }
    }

    /** The cause a future's failure wraps. */
    static Throwable unwrap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** "class: message" of the unwrapped error: what the Python side asserts on. */
    static String describe(Throwable t) {
        t = unwrap(t);
        return t.getClass().getName() + ": " + t.getMessage();
    }

    /** The stack trace, cut at 4,000 characters (it goes into one JSON line). */
    static String trace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        String s = w.toString();
        return s.length() > 4000 ? s.substring(0, 4000) : s;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> asMap(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> asList(Object o) {
        return (List<Object>) o;
    }
}
