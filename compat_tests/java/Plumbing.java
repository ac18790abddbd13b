import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** What every check program here needs: an error as one line or a short trace, and the JSON
 *  requests' maps and lists (Json.java) typed. */
final class Plumbing {
    private Plumbing() {}

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
