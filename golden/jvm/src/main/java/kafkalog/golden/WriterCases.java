package kafkalog.golden;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.stream.Stream;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * Replays writer cases (golden/corpus/writer's {@code case.json} + {@code input.log}) with the log layer of the
 * Kafka release on the classpath ({@code UnifiedLog}: Scala {@code kafka.log.UnifiedLog} in 4.0, Java
 * {@code org.apache.kafka.storage.internals.log.UnifiedLog} from 4.1), under the case's frozen clock, and writes each
 * case's folder (its {@code case.json}, {@code input.log} and the partition dir the release left, {@code expected/}).
 *
 * <p>Usage: {@code WriterCases OUT_DIR CASE_DIR...}. Only the operations create, append and close are replayed;
 * a case with another operation is skipped (named on stderr). The classes that differ between releases are
 * reached by reflection; the rest compiles against the APIs every 4.x release shares.
 */
public final class WriterCases {
    /** The operations replayed here (golden/corpus/writer/README.md defines them). */
    static final List<String> REPLAYED = List.of("create", "append", "advanceClock", "retention", "crash", "fileAppend",
        "fileWrite", "fileDelete", "open", "attach", "clean", "close");

    /** The broker clock, moved only by each operation's {@code clockMs}: no real time reaches the log layer. */
    static final class FrozenTime implements Time {
        long now;

        FrozenTime(long now) {
            this.now = now;
        }

        @Override public long milliseconds() { return now; }
        @Override public long nanoseconds() { return now * 1_000_000L; }
        @Override public void sleep(long ms) { now += ms; }
        @Override public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            if (!condition.get()) throw new IllegalStateException("waitObject under a frozen clock");
        }
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        for (int i = 1; i < args.length; i++) {
            Path caseDir = Path.of(args[i]);
            Map<String, Object> spec = Json.object(Files.readString(caseDir.resolve("case.json")));
            List<Object> ops = Json.list(spec.get("ops"));
            if (!ops.stream().allMatch(op -> REPLAYED.contains(Json.map(op).get("op")))) {
                System.err.println("WriterCases: " + caseDir.getFileName() + ": not replayed (an operation other than " + REPLAYED + ")");
                continue;
            }
            Path dest = out.resolve(caseDir.getFileName().toString());
            Files.createDirectories(dest);
            Files.copy(caseDir.resolve("case.json"), dest.resolve("case.json"), StandardCopyOption.REPLACE_EXISTING);
            Path input = caseDir.resolve("input.log");
            if (Files.exists(input)) Files.copy(input, dest.resolve("input.log"), StandardCopyOption.REPLACE_EXISTING);
            Path beforeOpen = caseDir.resolve("before-open");
            if (Files.isDirectory(beforeOpen)) copyDir(beforeOpen, dest.resolve("before-open"));
            replay(spec, ops, Files.exists(input) ? Files.readAllBytes(input) : new byte[0], beforeOpen, dest.resolve("expected"));
        }
    }

    static void replay(Map<String, Object> spec, List<Object> ops, byte[] input, Path beforeOpen, Path dir) throws Exception {
        deleteTree(dir);
        Path parent = Files.createTempDirectory("kafkalog-writer-");
        Path partition = parent.resolve(String.valueOf(spec.get("partitionDir")));
        if (!Json.map(ops.get(0)).get("op").equals("create")) copyDir(beforeOpen, partition);  // the case starts from before-open/
        List<ByteBuffer> batches = batches(input);
        // the configs the case set (topicConfigSet), else its whole topic config; a list is Kafka's comma-separated form
        Map<String, Object> props = new HashMap<>();
        Map<String, Object> set = Json.map(spec.get(spec.containsKey("topicConfigSet") ? "topicConfigSet" : "topicConfig"));
        set.forEach((k, v) -> props.put(k, v instanceof List<?> l ? String.join(",", l.stream().map(String::valueOf).toList()) : String.valueOf(v)));
        // From 4.1 LogConfig itself refuses segment.bytes below 1 MiB (KIP-1030; 4.0 checked only at the broker's
        // topic config validation); its test setting internal.segment.bytes takes the small size, and is what the
        // log layer then uses (LogConfig.segmentSize()).
        if (props.containsKey("segment.bytes") && hasField(LogConfig.class, "INTERNAL_SEGMENT_BYTES_CONFIG")) {
            props.put("internal.segment.bytes", props.remove("segment.bytes"));
        }
        Map<String, Object> broker = Json.map(spec.get("broker"));
        FrozenTime time = new FrozenTime(((Number) spec.get("initialClockMs")).longValue());
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        Object log = null;
        try {
            for (Object o : ops) {
                Map<String, Object> op = Json.map(o);
                if (op.get("clockMs") != null) time.now = ((Number) op.get("clockMs")).longValue();
                switch ((String) op.get("op")) {
                    case "advanceClock" -> { }  // clockMs, set above, is the clock after the advance
                    case "create", "open" -> log = create(partition, new LogConfig(props), scheduler, time,
                        ((Number) broker.get("producer.id.expiration.ms")).intValue(),
                        ((Number) broker.getOrDefault("maxTransactionTimeoutMs", 300000L)).intValue(),
                        ((Number) broker.getOrDefault("producerIdExpirationCheckIntervalMs", 600000L)).intValue(),
                        (String) spec.get("topicId"), ((Number) op.getOrDefault("logStartOffset", 0L)).longValue(),
                        ((Number) op.getOrDefault("recoveryPoint", 0L)).longValue(), (Boolean) op.getOrDefault("cleanShutdown", true));
                    case "attach" -> {
                        // Take over the log that wrote before-open/ and that Kafka still held open. A reopen is what
                        // comes closest: cleanly (no recovery), with producer expiration off, since the open log's
                        // in-memory producer state had expired no one (the clean op lists its active producers, checked
                        // below). The reopen loads the active segment's lazy .index/.timeindex, creating them, which the
                        // open log had not: those new files are removed (no append follows an attach).
                        List<String> before;
                        try (Stream<Path> files = Files.list(partition)) {
                            before = files.map(f -> f.getFileName().toString()).toList();
                        }
                        log = create(partition, new LogConfig(props), scheduler, time, Integer.MAX_VALUE, 300000, 600000,
                            (String) spec.get("topicId"), ((Number) op.getOrDefault("logStartOffset", 0L)).longValue(),
                            0L, true);
                        try (Stream<Path> files = Files.list(partition)) {
                            for (Path f : files.filter(f -> !before.contains(f.getFileName().toString())).toList()) Files.deleteIfExists(f);
                        }
                    }
                    case "retention" -> {  // as the broker's retention task: below the high watermark, here the log end
                        call(log, "updateHighWatermark", (Object) call(log, "logEndOffset"));
                        call(log, "deleteOldSegments");
                        awaitDeletions(partition);
                    }
                    case "crash" -> {
                        crash(log);
                        log = null;
                    }
                    case "fileAppend" -> Files.write(partition.resolve((String) op.get("file")), hex((String) op.get("hex")),
                        java.nio.file.StandardOpenOption.APPEND);
                    case "fileWrite" -> {
                        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(partition.resolve((String) op.get("file")),
                                java.nio.file.StandardOpenOption.WRITE)) {
                            ch.write(ByteBuffer.wrap(hex((String) op.get("hex"))), ((Number) op.get("position")).longValue());
                        }
                    }
                    case "fileDelete" -> Files.delete(partition.resolve((String) op.get("file")));
                    case "append" -> {
                        List<Object> range = Json.list(op.get("batches"));
                        int lo = ((Number) range.get(0)).intValue(), hi = ((Number) range.get(1)).intValue();
                        int k = ((Number) op.getOrDefault("batchesPerCall", 1)).intValue();
                        for (int b = lo; b < hi; b += k) {
                            Object records = memoryRecords(batches.subList(b, Math.min(b + k, hi)));
                            String origin = (String) op.get("origin");
                            if (origin.equals("replication")) {
                                call(log, "appendAsFollower", records, leaderEpoch(batches.subList(b, Math.min(b + k, hi))));
                            } else {
                                appendAsLeader(log, records, ((Number) op.get("leaderEpoch")).intValue(), origin);
                            }
                        }
                    }
                    case "clean" -> {
                        clean(log, op, time);
                        awaitDeletions(partition);
                    }
                    case "close" -> {
                        // UnifiedLog.close(), no flush first. From 4.4 LogSegment.close no longer gives the time index
                        // its final entry nor trims the indexes: LogManager.shutdown calls prepareActiveSegmentForClose()
                        // (LogSegment.onBecomeInactiveSegment) before flush and close, and so does this.
                        if (hasMethod(log, "prepareActiveSegmentForClose")) call(log, "prepareActiveSegmentForClose");
                        call(log, "close");
                        log = null;
                    }
                    default -> throw new IllegalArgumentException("op " + op.get("op"));
                }
            }
            if (log != null) crash(log);  // a case that ends without close or crash: files left as they are
        } finally {
            scheduler.shutdown();
        }
        Files.createDirectories(dir);
        try (Stream<Path> files = Files.list(partition)) {
            for (Path f : files.sorted().toList()) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
        deleteTree(parent);
    }

    static Object create(Path dir, LogConfig config, KafkaScheduler scheduler, Time time, int producerIdExpirationMs,
                         int maxTransactionTimeoutMs, int expirationCheckIntervalMs, String topicId, long logStartOffset,
                        long recoveryPoint, boolean cleanShutdown) throws Exception {
        Uuid id = topicId == null ? null : Uuid.fromString(topicId);
        Object[] common = {dir.toFile(), config, logStartOffset, recoveryPoint, scheduler, new BrokerTopicStats(), time,
            maxTransactionTimeoutMs, new ProducerStateManagerConfig(producerIdExpirationMs, false), expirationCheckIntervalMs,
            new LogDirFailureChannel(10), cleanShutdown};
        try {
            Class<?> scala = Class.forName("kafka.log.UnifiedLog");  // 4.0: the Scala log, UnifiedLog.apply
            Object option = id == null ? Class.forName("scala.None$").getField("MODULE$").get(null)
                : Class.forName("scala.Some").getConstructor(Object.class).newInstance(id);
            Object[] all = concat(common, option, true, new ConcurrentHashMap<String, Integer>(), false, noListener());
            return callStatic(scala, "apply", all);
        } catch (ClassNotFoundException e) {  // 4.1+: UnifiedLog.create in kafka-storage
            Class<?> java = Class.forName("org.apache.kafka.storage.internals.log.UnifiedLog");
            return callStatic(java, "create", concat(common, Optional.ofNullable(id)));
        }
    }

    /**
     * One pass of the release's cleaner over [firstDirtyOffset, firstUncleanableOffset) at the clock, as
     * LogCleaner's thread runs it ({@code Cleaner.clean(LogToClean)}: Scala {@code kafka.log.Cleaner} in 4.0, Java in
     * kafka-storage from 4.1), with the offset map and buffers the case gives. The op's {@code highWatermark} (default:
     * the log end) is set first: from 4.4 (KAFKA-20452) the cleaner compares emptied batches with it.
     */
    static void clean(Object log, Map<String, Object> op, Time time) throws Exception {
        long logEnd = (Long) call(log, "logEndOffset");
        call(log, "updateHighWatermark", ((Number) op.getOrDefault("highWatermark", logEnd)).longValue());
        Map<String, Object> om = Json.map(op.get("offsetMap"));
        Object map = new org.apache.kafka.storage.internals.log.SkimpyOffsetMap(((Number) om.get("memoryBytes")).intValue(),
            (String) om.get("hashAlgorithm"));
        Object throttler = new org.apache.kafka.storage.internals.utils.Throttler(Double.MAX_VALUE, 300L, "cleaner-io", "bytes", time);
        Object[] common = {0, map, ((Number) op.get("ioBufferSize")).intValue(), ((Number) op.get("maxIoBufferSize")).intValue(),
            ((Number) op.get("dupBufferLoadFactor")).doubleValue(), throttler, time};
        long firstDirty = ((Number) op.get("firstDirtyOffset")).longValue();
        long firstUncleanable = ((Number) op.get("firstUncleanableOffset")).longValue();
        Object cleaner, toClean;
        try {
            Class<?> scala = Class.forName("kafka.log.Cleaner");  // 4.0
            Class<?> function1 = Class.forName("scala.Function1");
            Object boxedUnit = Class.forName("scala.runtime.BoxedUnit").getField("UNIT").get(null);
            Object checkDone = java.lang.reflect.Proxy.newProxyInstance(function1.getClassLoader(), new Class<?>[]{function1},
                (proxy, m, a) -> m.getName().equals("apply") ? boxedUnit
                    : m.isDefault() ? java.lang.reflect.InvocationHandler.invokeDefault(proxy, m, a) : null);
            cleaner = scala.getConstructors()[0].newInstance(concat(common, checkDone));
            Object tp = call(log, "topicPartition");
            toClean = Class.forName("kafka.log.LogToClean").getConstructors()[0].newInstance(tp, log, firstDirty, firstUncleanable, false);
        } catch (ClassNotFoundException e) {  // 4.1+
            java.util.function.Consumer<Object> checkDone = tp -> { };
            cleaner = Class.forName("org.apache.kafka.storage.internals.log.Cleaner").getConstructors()[0]
                .newInstance(concat(common, checkDone));
            toClean = Class.forName("org.apache.kafka.storage.internals.log.LogToClean").getConstructors()[0]
                .newInstance(log, firstDirty, firstUncleanable, false);
        }
        String want = Json.list(op.getOrDefault("lastRecordsOfActiveProducers", List.of())).stream().map(Json::map)
            // "no data offset" is null (or absent) in case.json and -1 below (SPEC R-CONF-08 item 3)
            .map(r -> r.get("producerId") + "=" + (r.get("lastDataOffset") == null ? -1 : r.get("lastDataOffset")) + "/" + r.get("producerEpoch"))
            .sorted().toList().toString();
        Object records = call(log, "lastRecordsOfActiveProducers");
        if (!(records instanceof Map<?, ?>)) {  // 4.0: a Scala mutable Map
            records = callStatic(Class.forName("scala.jdk.javaapi.CollectionConverters"), "asJava", records);
        }
        List<String> have = new ArrayList<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>) records).entrySet()) {
            java.util.OptionalLong last = (java.util.OptionalLong) member(e.getValue(), "lastDataOffset");
            have.add(e.getKey() + "=" + (last.isPresent() ? last.getAsLong() : -1) + "/" + member(e.getValue(), "producerEpoch"));
        }
        if (!have.stream().sorted().toList().toString().equals(want)) {
            throw new IllegalStateException("active producers " + have + ", the case lists " + want);
        }
        call(cleaner, "clean", toClean);
    }

    static boolean hasMethod(Object o, String name) {
        return java.util.Arrays.stream(o.getClass().getMethods()).anyMatch(m -> m.getName().equals(name));
    }

    static boolean hasField(Class<?> cls, String name) {
        try {
            cls.getField(name);
            return true;
        } catch (NoSuchFieldException e) {
            return false;
        }
    }

    /** A field of a class (LastRecord up to 4.2) or the accessor of a record (from 4.3). */
    static Object member(Object o, String name) throws Exception {
        try {
            return o.getClass().getMethod(name).invoke(o);
        } catch (NoSuchMethodException e) {
            return o.getClass().getField(name).get(o);
        }
    }

    static void copyDir(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path f : files.sorted().toList()) Files.copy(f, to.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** Waits for the scheduler's asynchronous deletion of the {@code .deleted} files (file.delete.delay.ms=0). */
    static void awaitDeletions(Path dir) throws Exception {
        for (int i = 0; i < 1000; i++) {
            try (Stream<Path> files = Files.list(dir)) {
                if (files.noneMatch(f -> f.getFileName().toString().endsWith(".deleted"))) return;
            }
            Thread.sleep(10);
        }
        throw new IllegalStateException(dir + ": .deleted files still there after 10 s");
    }

    static byte[] hex(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    /**
     * Drops the log without a clean close: nothing trimmed, flushed or written. Up to 4.3 that is
     * {@code UnifiedLog.closeHandlers()} (the broker's way after a log dir failure), which only releases the files;
     * 4.4 has no such method, and the log is simply left (its files are what the page cache holds).
     */
    static void crash(Object log) throws Exception {
        try {
            log.getClass().getMethod("closeHandlers").invoke(log);
        } catch (NoSuchMethodException e) {
            // 4.4: nothing to release explicitly
        }
    }

    static Object noListener() throws Exception {
        return Class.forName("org.apache.kafka.storage.internals.log.LogOffsetsListener").getField("NO_OP_OFFSETS_LISTENER").get(null);
    }

    static void appendAsLeader(Object log, Object records, int leaderEpoch, String origin) throws Exception {
        Object appendOrigin = Class.forName("org.apache.kafka.storage.internals.log.AppendOrigin")
            .getMethod("valueOf", String.class).invoke(null, origin.toUpperCase());
        Object requestLocal = Class.forName("org.apache.kafka.server.common.RequestLocal").getMethod("noCaching").invoke(null);
        Object guard = Class.forName("org.apache.kafka.storage.internals.log.VerificationGuard").getField("SENTINEL").get(null);
        for (Method m : log.getClass().getMethods()) {
            if (!m.getName().equals("appendAsLeader")) continue;
            if (m.getParameterCount() == 5) {
                m.invoke(log, records, leaderEpoch, appendOrigin, requestLocal, guard);
                return;
            }
            if (m.getParameterCount() == 6) {  // 4.4: the transaction version the request was verified with; 0 = none
                m.invoke(log, records, leaderEpoch, appendOrigin, requestLocal, guard, (short) 0);
                return;
            }
        }
        throw new NoSuchMethodException("appendAsLeader");
    }

    /** The leader epoch a fetcher passes with a follower append: the partition's current one, here the highest of the
     *  batches' partitionLeaderEpoch (bytes 12-15; -1 for magic 0/1, whose bytes there are a CRC, so v2 only). */
    static int leaderEpoch(List<ByteBuffer> batches) {
        int epoch = -1;
        for (ByteBuffer b : batches) {
            if (b.get(16) == 2) epoch = Math.max(epoch, b.getInt(12));
        }
        return epoch;
    }

    /** MemoryRecords over the batches' bytes (the class moved to {@code record.internal} in 4.3). */
    static Object memoryRecords(List<ByteBuffer> batches) throws Exception {
        int size = batches.stream().mapToInt(ByteBuffer::remaining).sum();
        ByteBuffer buf = ByteBuffer.allocate(size);
        batches.forEach(b -> buf.put(b.duplicate()));
        buf.flip();
        Class<?> cls;
        try {
            cls = Class.forName("org.apache.kafka.common.record.internal.MemoryRecords");
        } catch (ClassNotFoundException e) {
            cls = Class.forName("org.apache.kafka.common.record.MemoryRecords");
        }
        return cls.getMethod("readableRecords", ByteBuffer.class).invoke(null, buf);
    }

    /** The batches of a log file: each is an 8-byte offset, a 4-byte size and that many bytes. */
    static List<ByteBuffer> batches(byte[] input) {
        List<ByteBuffer> out = new ArrayList<>();
        ByteBuffer buf = ByteBuffer.wrap(input);
        while (buf.remaining() >= 12) {
            int size = buf.getInt(buf.position() + 8);
            out.add(ByteBuffer.wrap(input, buf.position(), 12 + size).slice());
            buf.position(buf.position() + 12 + size);
        }
        return out;
    }

    static Object[] concat(Object[] head, Object... tail) {
        Object[] all = new Object[head.length + tail.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(tail, 0, all, head.length, tail.length);
        return all;
    }

    static Object callStatic(Class<?> cls, String name, Object... args) throws Exception {
        return invoke(cls, null, name, args);
    }

    static Object call(Object target, String name, Object... args) throws Exception {
        return invoke(target.getClass(), target, name, args);
    }

    static Object invoke(Class<?> cls, Object target, String name, Object... args) throws Exception {
        for (Method m : cls.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                try {
                    return m.invoke(target, args);
                } catch (IllegalArgumentException e) {
                    continue;  // an overload with other parameter types
                } catch (java.lang.reflect.InvocationTargetException e) {
                    throw (e.getCause() instanceof Exception ex) ? ex : e;
                }
            }
        }
        throw new NoSuchMethodException(cls.getName() + "." + name + "/" + args.length);
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
        }
    }

    /** Just enough JSON for case.json: objects, arrays, strings, numbers (as Long or Double), booleans, null. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> map(Object o) {
            return o == null ? Map.of() : (Map<String, Object>) o;
        }

        @SuppressWarnings("unchecked")
        static List<Object> list(Object o) {
            return (List<Object>) o;
        }

        static Map<String, Object> object(String text) {
            return map(new Json(text).value());
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        private Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (s.charAt(i) == '}') { i++; return m; }
                while (true) {
                    ws();
                    String k = (String) value();
                    ws();
                    i++;  // ':'
                    m.put(k, value());
                    ws();
                    if (s.charAt(i++) == '}') return m;
                }
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (s.charAt(i) == ']') { i++; return l; }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i++) == ']') return l;
                }
            }
            if (c == '"') {
                StringBuilder b = new StringBuilder();
                i++;
                while (s.charAt(i) != '"') {
                    char ch = s.charAt(i++);
                    if (ch == '\\') {
                        char e = s.charAt(i++);
                        switch (e) {
                            case 'n' -> b.append('\n');
                            case 't' -> b.append('\t');
                            case 'u' -> { b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; }
                            default -> b.append(e);
                        }
                    } else {
                        b.append(ch);
                    }
                }
                i++;
                return b.toString();
            }
            int start = i;
            while (i < s.length() && ",}] \n\r\t".indexOf(s.charAt(i)) < 0) i++;
            String tok = s.substring(start, i);
            return switch (tok) {
                case "true" -> Boolean.TRUE;
                case "false" -> Boolean.FALSE;
                case "null" -> null;
                default -> tok.contains(".") || tok.contains("e") || tok.contains("E") ? (Object) Double.parseDouble(tok) : (Object) Long.parseLong(tok);
            };
        }
    }
}
