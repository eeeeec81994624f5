package kafkalog.golden;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashMap;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Message;

/**
 * Writes the message layouts of the Kafka release on the classpath to one JSON file: kafkalog's
 * {@code codec/kafkalog/internal/data/messages-<release>.json}, which its decoders read instead of
 * hand-kept tables.
 *
 * <p>Usage: {@code Schemas OUT_FILE RELEASE}. Which messages, and under which record type or api key
 * each topic has them, comes from the release's classes by reflection: the coordinators'
 * {@code CoordinatorRecordType} (4.1 on; in 4.0 every generated {@code *Key} class, as
 * {@link Generate#coordinatorTypes} finds them), {@code MetadataRecordType} (clients' and the
 * storage module's for {@code __remote_log_metadata}) and {@code ControlRecordType}. Each message's
 * valid versions are its generated class's {@code lowestSupportedVersion()}..{@code
 * highestSupportedVersion()}. Its fields are the message spec bundled in the same jar beside the class
 * ({@code common/message/X.json}, {@code common/metadata/X.json}, {@code message/X.json}): the spec the
 * class was generated from, and the only form that keeps the field names as the generated
 * {@code *JsonConverter}s (and so DumpLogSegments) print them (the classes' {@code SCHEMAS} hold
 * snake_case names). Descriptions and code-generation hints are left out; everything else is kept.
 * The output is deterministic: keys sorted, fields in declaration order, one message per line.
 */
public final class Schemas {
    /** The spec keys kept for a field or struct (all others are documentation or code-generation hints). */
    static final List<String> FIELD_KEYS = List.of(
        "name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default", "flexibleVersions", "fields");

    /** The control records that are messages, by {@code ControlRecordType} name (Kafka's ControlRecordUtils). */
    static final Map<String, String> CONTROL_MESSAGES = Map.of(
        "LEADER_CHANGE", "LeaderChangeMessage",
        "SNAPSHOT_HEADER", "SnapshotHeaderRecord",
        "SNAPSHOT_FOOTER", "SnapshotFooterRecord",
        "KRAFT_VERSION", "KRaftVersionRecord",
        "KRAFT_VOTERS", "VotersRecord");

    static final String CLIENT_MESSAGES = "org.apache.kafka.common.message.";

    /** Every message met, by name: its layout. */
    final TreeMap<String, Map<String, Object>> messages = new TreeMap<>();

    private Schemas() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Paths.get(args[0]);
        Schemas s = new Schemas();
        TreeMap<String, Object> doc = new TreeMap<>();
        doc.put("release", args[1]);
        doc.put("groupCoordinator", s.coordinator("org.apache.kafka.coordinator.group.generated", "GroupMetadataKey"));
        doc.put("shareCoordinator", s.coordinator("org.apache.kafka.coordinator.share.generated", "ShareSnapshotKey"));
        doc.put("transactionCoordinator",
            s.coordinator("org.apache.kafka.coordinator.transaction.generated", "TransactionLogKey"));
        doc.put("metadata", s.metadataTypes("org.apache.kafka.common.metadata.MetadataRecordType"));
        doc.put("remoteLogMetadata",
            s.metadataTypes("org.apache.kafka.server.log.remote.metadata.storage.generated.MetadataRecordType"));
        doc.put("control", s.controlTypes());
        List<Object> protocol = new ArrayList<>();
        for (String name : List.of("ConsumerProtocolSubscription", "ConsumerProtocolAssignment")) {
            protocol.add(s.message(Class.forName(CLIENT_MESSAGES + name)));
        }
        doc.put("consumerProtocol", protocol);
        doc.put("messages", s.messages);
        StringBuilder text = new StringBuilder("{\n");
        int i = 0;
        for (Map.Entry<String, Object> e : doc.entrySet()) {
            Json.write(text.append(i++ == 0 ? "" : ",\n"), e.getKey());
            text.append(": ");
            if (e.getValue() instanceof TreeMap<?, ?> map) {  // the messages: one a line
                text.append("{\n");
                int j = 0;
                for (Map.Entry<?, ?> me : map.entrySet()) {
                    Json.write(text.append(j++ == 0 ? "  " : ",\n  "), me.getKey());
                    Json.write(text.append(": "), me.getValue());
                }
                text.append("\n}");
            } else {
                Json.write(text, e.getValue());
            }
        }
        text.append("\n}\n");
        Files.createDirectories(out.toAbsolutePath().getParent());
        Files.writeString(out, text.toString(), StandardCharsets.UTF_8);
    }

    /** A coordinator's record types: [[type, key message, value message], ...] by type. */
    List<Object> coordinator(String pkg, String anyKeyClass) throws Exception {
        List<Object> types = new ArrayList<>();
        for (Generate.RecordType t : Generate.coordinatorTypes(pkg, anyKeyClass)) {
            types.add(List.of(new Json.Num(Short.toString(t.id())), message(t.key()), message(t.value())));
        }
        return types;
    }

    /** A {@code MetadataRecordType}'s records: [[api key, type name, message], ...] by api key. */
    List<Object> metadataTypes(String enumName) throws Exception {
        Class<?> typeEnum = Class.forName(enumName);
        TreeMap<Short, Object> byKey = new TreeMap<>();
        for (Object t : typeEnum.getEnumConstants()) {
            ApiMessage proto = (ApiMessage) typeEnum.getMethod("newMetadataRecord").invoke(t);
            byKey.put(proto.apiKey(),
                List.of(new Json.Num(Short.toString(proto.apiKey())), ((Enum<?>) t).name(), message(proto.getClass())));
        }
        return new ArrayList<>(byKey.values());
    }

    /** The control records that are messages: [[type id, ControlRecordType name, message], ...] by id. */
    List<Object> controlTypes() throws Exception {
        Class<?> typeEnum;
        try {
            typeEnum = Class.forName("org.apache.kafka.common.record.internal.ControlRecordType");  // 4.3 on
        } catch (ClassNotFoundException e) {
            typeEnum = Class.forName("org.apache.kafka.common.record.ControlRecordType");
        }
        TreeMap<Short, Object> byId = new TreeMap<>();
        for (Object t : typeEnum.getEnumConstants()) {
            String name = ((Enum<?>) t).name();
            String cls = CONTROL_MESSAGES.get(name);
            if (cls != null) {
                short id = (short) typeEnum.getMethod("type").invoke(t);
                byId.put(id, List.of(new Json.Num(Short.toString(id)), name, message(Class.forName(CLIENT_MESSAGES + cls))));
            }
        }
        if (byId.size() != CONTROL_MESSAGES.size()) {
            throw new IllegalStateException("ControlRecordType lacks some of " + CONTROL_MESSAGES.keySet());
        }
        return new ArrayList<>(byId.values());
    }

    /** Records the generated message class {@code cls}'s layout under its name; returns the name. */
    String message(Class<?> cls) throws Exception {
        String name = cls.getSimpleName();
        if (messages.containsKey(name)) {
            return name;
        }
        Message proto = (Message) cls.getConstructor().newInstance();
        Map<?, ?> spec = (Map<?, ?>) spec(cls);
        if (!name.equals(spec.get("name"))) {
            throw new IllegalStateException(cls + ": its spec is named " + spec.get("name"));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("validVersions", proto.lowestSupportedVersion() + "-" + proto.highestSupportedVersion());
        out.put("flexibleVersions", spec.containsKey("flexibleVersions") ? spec.get("flexibleVersions") : "none");
        out.put("fields", fields(spec.get("fields")));
        if (spec.containsKey("commonStructs")) {
            out.put("commonStructs", fields(spec.get("commonStructs")));
        }
        messages.put(name, out);
        return name;
    }

    /** Fields or structs with only {@link #FIELD_KEYS}, in that order, nested fields likewise. */
    static List<Object> fields(Object fields) {
        List<Object> out = new ArrayList<>();
        for (Object o : (List<?>) fields) {
            Map<?, ?> f = (Map<?, ?>) o;
            Map<String, Object> kept = new LinkedHashMap<>();
            for (String k : FIELD_KEYS) {
                if (f.containsKey(k)) {
                    kept.put(k, k.equals("fields") ? fields(f.get(k)) : f.get(k));
                }
            }
            out.add(kept);
        }
        return out;
    }

    /** The message specs of each jar met, by name. */
    final Map<Path, Map<String, Object>> specs = new LinkedHashMap<>();

    /**
     * The message spec named as {@code cls} in the jar that holds it, parsed. The file is usually
     * {@code <Name>.json}, not always (4.x's {@code ZkMigrationRecord.json} declares
     * ZkMigrationStateRecord), so every spec of the jar is read once and found by its {@code name}.
     */
    Object spec(Class<?> cls) throws Exception {
        Path jar = Paths.get(cls.getProtectionDomain().getCodeSource().getLocation().toURI());
        Map<String, Object> byName = specs.get(jar);
        if (byName == null) {
            byName = new LinkedHashMap<>();
            try (JarFile jf = new JarFile(jar.toFile())) {
                for (JarEntry e : (Iterable<JarEntry>) jf.stream()::iterator) {
                    if (e.getName().endsWith(".json")) {
                        try (InputStream in = jf.getInputStream(e)) {
                            Object doc = new Json(new String(in.readAllBytes(), StandardCharsets.UTF_8)).value();
                            if (doc instanceof Map<?, ?> m && m.get("name") instanceof String name && m.containsKey("fields")) {
                                byName.put(name, doc);
                            }
                        }
                    }
                }
            }
            specs.put(jar, byName);
        }
        Object spec = byName.get(cls.getSimpleName());
        if (spec == null) {
            throw new IllegalStateException(cls + ": no message spec of that name in " + jar.getFileName());
        }
        return spec;
    }

    /**
     * The JSON of Kafka's message specs (with {@code //} and {@code /*} comments), read into maps
     * (in order), lists, strings, {@link Num}s (a number's text, unchanged), booleans and null; and
     * written back compactly. Kafka's jars bring no JSON library the generator can compile against in
     * every release.
     */
    static final class Json {
        /** A number as its text. */
        record Num(String text) {
        }

        final String s;
        int pos;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            skip();
            char c = s.charAt(pos);
            switch (c) {
                case '{': {
                    pos++;
                    Map<String, Object> map = new LinkedHashMap<>();
                    skip();
                    if (s.charAt(pos) == '}') {
                        pos++;
                        return map;
                    }
                    while (true) {
                        skip();
                        String k = (String) value();
                        skip();
                        expect(':');
                        map.put(k, value());
                        skip();
                        if (s.charAt(pos++) == '}') {
                            return map;
                        }
                    }
                }
                case '[': {
                    pos++;
                    List<Object> list = new ArrayList<>();
                    skip();
                    if (s.charAt(pos) == ']') {
                        pos++;
                        return list;
                    }
                    while (true) {
                        list.add(value());
                        skip();
                        if (s.charAt(pos++) == ']') {
                            return list;
                        }
                    }
                }
                case '"': {
                    StringBuilder b = new StringBuilder();
                    pos++;
                    while ((c = s.charAt(pos++)) != '"') {
                        if (c == '\\') {
                            c = s.charAt(pos++);
                            switch (c) {
                                case 'n' -> b.append('\n');
                                case 't' -> b.append('\t');
                                case 'r' -> b.append('\r');
                                case 'b' -> b.append('\b');
                                case 'f' -> b.append('\f');
                                case 'u' -> {
                                    b.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
                                    pos += 4;
                                }
                                default -> b.append(c);
                            }
                        } else {
                            b.append(c);
                        }
                    }
                    return b.toString();
                }
                default:
                    for (String word : List.of("true", "false", "null")) {
                        if (s.startsWith(word, pos)) {
                            pos += word.length();
                            return word.equals("null") ? null : Boolean.valueOf(word);
                        }
                    }
                    int start = pos;
                    while (pos < s.length() && "+-0123456789.eExX".indexOf(s.charAt(pos)) >= 0) {
                        pos++;
                    }
                    if (start == pos) {
                        throw new IllegalArgumentException("bad JSON at " + pos);
                    }
                    return new Num(s.substring(start, pos));
            }
        }

        void expect(char c) {
            if (s.charAt(pos++) != c) {
                throw new IllegalArgumentException("expected " + c + " at " + (pos - 1));
            }
        }

        /** Skips white space and comments. */
        void skip() {
            while (pos < s.length()) {
                if (Character.isWhitespace(s.charAt(pos))) {
                    pos++;
                } else if (s.startsWith("//", pos)) {
                    pos = s.indexOf('\n', pos);
                    pos = pos < 0 ? s.length() : pos;
                } else if (s.startsWith("/*", pos)) {
                    pos = s.indexOf("*/", pos) + 2;
                } else {
                    return;
                }
            }
        }

        static void write(StringBuilder out, Object v) {
            if (v == null) {
                out.append("null");
            } else if (v instanceof String str) {
                out.append('"');
                for (char c : str.toCharArray()) {
                    if (c == '"' || c == '\\') {
                        out.append('\\').append(c);
                    } else if (c < 0x20 || c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
                out.append('"');
            } else if (v instanceof Num n) {
                out.append(n.text());
            } else if (v instanceof Boolean b) {
                out.append(b);
            } else if (v instanceof Map<?, ?> map) {
                out.append('{');
                int i = 0;
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    write(out.append(i++ == 0 ? "" : ","), e.getKey());
                    write(out.append(':'), e.getValue());
                }
                out.append('}');
            } else {
                out.append('[');
                int i = 0;
                for (Object e : (List<?>) v) {
                    write(out.append(i++ == 0 ? "" : ","), e);
                }
                out.append(']');
            }
        }
    }
}
