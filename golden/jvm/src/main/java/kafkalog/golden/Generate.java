package kafkalog.golden;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Collectors;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;

/**
 * Writes, with the Kafka release on the classpath, one partition dir per internal topic holding every
 * record type and every version that release's generated message classes know, then runs that
 * release's own DumpLogSegments over each log (in a child JVM, stdout and stderr kept apart).
 *
 * <p>Usage: {@code Generate OUT_DIR}. Everything is deterministic: a frozen clock, ids made from
 * counters, field values made from the field's position, so two runs give the same bytes.
 *
 * <p>Field values are filled in by reflection over the generated classes' setters, so a record type
 * or field a release adds is covered without a change here; a field a version does not have is reset
 * to its default when that version's writer rejects it.
 */
public final class Generate {
    /** The frozen clock: every record timestamp is this plus the record's offset. */
    static final long CLOCK_MS = 1_700_030_000_000L;

    private Generate() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Paths.get(args[0]);
        Files.createDirectories(out);
        List<Topic> topics = List.of(
            new Topic("__consumer_offsets-0", "--offsets-decoder",
                coordinatorRecords("org.apache.kafka.coordinator.group.generated", "GroupMetadataKey")),
            new Topic("__share_group_state-0", "--share-group-state-decoder",
                coordinatorRecords("org.apache.kafka.coordinator.share.generated", "ShareSnapshotKey")),
            new Topic("__transaction_state-0", "--transaction-log-decoder",
                coordinatorRecords("org.apache.kafka.coordinator.transaction.generated", "TransactionLogKey")),
            new Topic("__cluster_metadata-0", "--cluster-metadata-decoder", metadataRecords()),
            new Topic("__remote_log_metadata-0", "--remote-log-metadata-decoder", remoteLogMetadataRecords()));
        Path dumps = out.resolve("dump");
        Files.createDirectories(dumps);
        for (Topic topic : topics) {
            Path dir = out.resolve(topic.dir);
            Files.createDirectories(dir);
            Files.write(dir.resolve("00000000000000000000.log"), topic.log);
            String log = topic.dir + "/00000000000000000000.log";
            String name = topic.dir.replaceAll("^_+|-0$", "");
            dump(out, dumps.resolve(name + "-decoded"), "--files", log, topic.decoder);
            dump(out, dumps.resolve(name + "-deep"), "--files", log, "--deep-iteration", "--print-data-log");
            dump(out, dumps.resolve(name + "-skip"), "--files", log, topic.decoder, "--skip-record-metadata");
        }
        // the state files beside the logs: a producer snapshot, the KRaft bootstrap and a metadata snapshot
        dump(out, dumps.resolve("producer_snapshot"), "--files", StateFiles.producerSnapshot(out));
        List<ApiMessageAndVersion> metadata = metadataMessages();
        Map<String, String> checkpoints = new java.util.LinkedHashMap<>();
        String bootstrap = StateFiles.bootstrap(out);
        checkpoints.put(bootstrap.equals("bootstrap.checkpoint") ? "bootstrap_checkpoint" : "zero_checkpoint", bootstrap);
        checkpoints.put("metadata_snapshot", StateFiles.metadataSnapshot(out, 1 + metadata.size(), metadata));
        for (Map.Entry<String, String> c : checkpoints.entrySet()) {
            dump(out, dumps.resolve(c.getKey() + "-decoded"), "--files", c.getValue(), "--cluster-metadata-decoder");
            dump(out, dumps.resolve(c.getKey() + "-deep"), "--files", c.getValue(), "--deep-iteration", "--print-data-log");
        }
    }

    /** One topic's partition dir: its log's bytes and the DumpLogSegments decoder for it. */
    record Topic(String dir, String decoder, byte[] log) {
    }

    // ---------------------------------------------------------------- coordinator topics

    /** A coordinator record type: its id (the key's type prefix) and generated key and value classes. */
    record RecordType(short id, Class<?> key, Class<?> value) {
    }

    /**
     * The log of a coordinator topic: per record type one batch with a record per value version (per
     * version and transaction state for the transaction log; key = int16 type + key fields, value =
     * int16 version + value fields), then a tombstone of the first type's key.
     */
    static byte[] coordinatorRecords(String pkg, String anyKeyClass) throws Exception {
        List<RecordType> types = coordinatorTypes(pkg, anyKeyClass);
        Batches log = new Batches();
        byte[] firstKey = null;
        for (RecordType type : types) {
            List<Object> records = new ArrayList<>();
            ApiMessage key = (ApiMessage) filled(type.key, 1000 * type.id, null);
            short keyVersion = type.id >= key.lowestSupportedVersion() && type.id <= key.highestSupportedVersion()
                ? type.id : key.lowestSupportedVersion();
            byte[] keyBytes = prefixed(type.id, key, keyVersion);
            if (firstKey == null) {
                firstKey = keyBytes;
            }
            ApiMessage proto = (ApiMessage) type.value.getConstructor().newInstance();
            for (short v = proto.lowestSupportedVersion(); v <= proto.highestSupportedVersion(); v++) {
                for (int copy = 0; copy < copies(type.value); copy++) {
                    ApiMessage value = (ApiMessage) filled(type.value, 1000 * type.id + 100 * v + copy, v);
                    records.add(log.record(keyBytes, prefixed(v, value, v)));
                }
            }
            log.batch(records);
        }
        log.batch(List.of(log.record(firstKey, null)));
        return log.bytes();
    }

    /**
     * The record types of a coordinator: its generated {@code CoordinatorRecordType} (4.1 on), or
     * (4.0) every generated {@code *Key} class, whose versions were the record types it is used for.
     */
    static List<RecordType> coordinatorTypes(String pkg, String anyKeyClass) throws Exception {
        List<RecordType> types = new ArrayList<>();
        Class<?> enumClass;
        try {
            enumClass = Class.forName(pkg + ".CoordinatorRecordType");
        } catch (ClassNotFoundException e) {
            enumClass = null;
        }
        if (enumClass != null) {
            for (Object t : enumClass.getEnumConstants()) {
                short id = (short) enumClass.getMethod("id").invoke(t);
                Object key = enumClass.getMethod("newRecordKey").invoke(t);
                Object value = enumClass.getMethod("newRecordValue").invoke(t);
                types.add(new RecordType(id, key.getClass(), value.getClass()));
            }
        } else {
            Class<?> known = Class.forName(pkg + "." + anyKeyClass);
            Path jar = Paths.get(known.getProtectionDomain().getCodeSource().getLocation().toURI());
            String prefix = pkg.replace('.', '/') + "/";
            try (JarFile jf = new JarFile(jar.toFile())) {
                List<String> keys = jf.stream().map(e -> e.getName())
                    .filter(n -> n.startsWith(prefix) && n.endsWith("Key.class") && !n.substring(prefix.length()).contains("$"))
                    .map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.'))
                    .collect(Collectors.toList());
                for (String keyName : keys) {
                    Class<?> keyClass = Class.forName(keyName);
                    Class<?> valueClass = Class.forName(keyName.substring(0, keyName.length() - 3) + "Value");
                    ApiMessage key = (ApiMessage) keyClass.getConstructor().newInstance();
                    for (short id = key.lowestSupportedVersion(); id <= key.highestSupportedVersion(); id++) {
                        types.add(new RecordType(id, keyClass, valueClass));
                    }
                }
            }
        }
        types.sort(Comparator.comparingInt(RecordType::id));
        return types;
    }

    /** How many records of each version a value class gets: one per transaction state for the transaction log. */
    static int copies(Class<?> value) {
        return value.getSimpleName().equals("TransactionLogValue") ? 8 : 1;
    }

    /** {@code prefix} as an int16, then {@code message} written at {@code version}. */
    static byte[] prefixed(short prefix, Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer buffer = ByteBuffer.allocate(2 + size);
        buffer.putShort(prefix);
        message.write(new ByteBufferAccessor(buffer), cache, version);
        return buffer.array();
    }

    // ---------------------------------------------------------------- __cluster_metadata

    /**
     * The metadata log: a LEADER_CHANGE control batch, then per metadata record type one batch with a
     * record per version, framed by the release's {@code MetadataRecordSerde}.
     */
    static byte[] metadataRecords() throws Exception {
        Batches log = new Batches();
        LeaderChangeMessage leaderChange = new LeaderChangeMessage()
            .setLeaderId(1)
            .setVoters(List.of(new LeaderChangeMessage.Voter().setVoterId(1), new LeaderChangeMessage.Voter().setVoterId(2)))
            .setGrantingVoters(List.of(new LeaderChangeMessage.Voter().setVoterId(1)));
        log.leaderChange(3, leaderChange);
        MetadataRecordSerde serde = new MetadataRecordSerde();
        short type = -1;
        List<Object> records = new ArrayList<>();
        for (ApiMessageAndVersion record : metadataMessages()) {
            if (record.message().apiKey() != type && !records.isEmpty()) {
                log.batch(records);
                records = new ArrayList<>();
            }
            type = record.message().apiKey();
            ObjectSerializationCache cache = new ObjectSerializationCache();
            ByteBuffer buffer = ByteBuffer.allocate(serde.recordSize(record, cache));
            serde.write(record, cache, new ByteBufferAccessor(buffer));
            records.add(log.record(null, buffer.array()));
        }
        log.batch(records);
        return log.bytes();
    }

    /** Every metadata record type at every version, in the order of {@code MetadataRecordType}. */
    static List<ApiMessageAndVersion> metadataMessages() throws Exception {
        Class<?> typeEnum = Class.forName("org.apache.kafka.common.metadata.MetadataRecordType");
        List<ApiMessageAndVersion> records = new ArrayList<>();
        for (Object t : typeEnum.getEnumConstants()) {
            ApiMessage proto = (ApiMessage) typeEnum.getMethod("newMetadataRecord").invoke(t);
            short id = proto.apiKey();
            for (short v = proto.lowestSupportedVersion(); v <= proto.highestSupportedVersion(); v++) {
                ApiMessage message = (ApiMessage) filled(proto.getClass(), 1000 * id + 100 * v, v);
                records.add(new ApiMessageAndVersion(message, v));
            }
        }
        return records;
    }

    // ---------------------------------------------------------------- __remote_log_metadata

    /** The remote log metadata log: a segment's life (copy, delete) and a partition's deletion. */
    static byte[] remoteLogMetadataRecords() throws Exception {
        RemoteLogMetadataSerde serde = new RemoteLogMetadataSerde();
        TopicIdPartition partition = new TopicIdPartition(new Uuid(17L, 42L), new TopicPartition("payments", 3));
        RemoteLogSegmentId segment = new RemoteLogSegmentId(partition, new Uuid(5L, 6L));
        List<RemoteLogMetadata> items = List.of(
            new RemoteLogSegmentMetadata(segment, 0L, 99L, CLOCK_MS, 7, CLOCK_MS + 1, 4096,
                Optional.of(new RemoteLogSegmentMetadata.CustomMetadata(new byte[] {1, 2, 3})),
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, 0L, 2, 40L), true),
            new RemoteLogSegmentMetadataUpdate(segment, CLOCK_MS + 2, Optional.empty(),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 7),
            new RemoteLogSegmentMetadataUpdate(segment, CLOCK_MS + 3, Optional.empty(),
                RemoteLogSegmentState.DELETE_SEGMENT_STARTED, 7),
            new RemoteLogSegmentMetadataUpdate(segment, CLOCK_MS + 4, Optional.empty(),
                RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, 7),
            new RemotePartitionDeleteMetadata(partition, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, CLOCK_MS + 5, 7),
            new RemotePartitionDeleteMetadata(partition, RemotePartitionDeleteState.DELETE_PARTITION_STARTED, CLOCK_MS + 6, 7),
            new RemotePartitionDeleteMetadata(partition, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, CLOCK_MS + 7, 7));
        Batches log = new Batches();
        for (RemoteLogMetadata item : items) {
            log.batch(List.of(log.record(null, serde.serialize(item))));
        }
        return log.bytes();
    }

    // ---------------------------------------------------------------- filling generated messages

    /**
     * A new {@code cls} (a generated message or one of its structs) with every field set from
     * {@code seed}; with a {@code version}, fields that version cannot write are reset to default.
     */
    static Object filled(Class<?> cls, int seed, Short version) throws Exception {
        Object message = cls.getConstructor().newInstance();
        int i = 0;
        for (Method setter : setters(cls)) {
            Type type = setter.getGenericParameterTypes()[0];
            Object value = value(type, seed + i, version);
            i++;
            if (value != null) {
                setter.invoke(message, value);
            }
        }
        if (cls.getSimpleName().equals("TransactionLogValue")) {
            // every transaction state id (0 Empty .. 7 PrepareEpochFence), one per copy (the seed's last digits)
            byte status = (byte) (seed % 100);
            cls.getMethod("setTransactionStatus", byte.class).invoke(message, status);
            // a transaction.version feature level that exists (0 to 2)
            for (Method setter : setters(cls)) {
                if (setter.getName().equals("setClientTransactionVersion")) {
                    setter.invoke(message, (short) (seed / 100 % 3));
                }
            }
        }
        if (version != null) {
            pruneFor((Message) message, version);
        }
        return message;
    }

    /**
     * The public one-argument {@code setX} methods of a generated class, in name order (not the
     * linked-collection links {@code setNext}/{@code setPrev} of keyed collections' elements).
     */
    static List<Method> setters(Class<?> cls) {
        return Arrays.stream(cls.getMethods())
            .filter(m -> m.getName().startsWith("set") && m.getParameterCount() == 1 && m.getDeclaringClass() == cls)
            .filter(m -> !m.isBridge() && !m.isSynthetic() && !m.getName().equals("setNext") && !m.getName().equals("setPrev"))
            .sorted(Comparator.comparing(Method::getName))
            .collect(Collectors.toList());
    }

    /** Resets, one by one, the fields that {@code version} refuses to write, until it writes. */
    static void pruneFor(Message message, short version) throws Exception {
        for (int attempt = 0; attempt < 100; attempt++) {
            try {
                MessageUtil.toVersionPrefixedBytes(version, message);
                return;
            } catch (UnsupportedVersionException e) {
                String text = String.valueOf(e.getMessage());
                String marker = "non-default ";
                int at = text.indexOf(marker);
                if (at < 0) {
                    throw e;
                }
                String field = text.substring(at + marker.length()).split(" ")[0];
                resetField(message, field, version);
            }
        }
        throw new IllegalStateException("cannot write " + message.getClass() + " at version " + version);
    }

    /** Sets {@code field} back to its default, in {@code message} or in the struct that holds it. */
    static void resetField(Object message, String field, short version) throws Exception {
        String setterName = "set" + Character.toUpperCase(field.charAt(0)) + field.substring(1);
        for (Method setter : setters(message.getClass())) {
            if (setter.getName().equals(setterName)) {
                Object fresh = message.getClass().getConstructor().newInstance();
                setter.invoke(message, message.getClass().getMethod(field).invoke(fresh));
                return;
            }
        }
        // the field is in a nested struct: prune each struct we hold (they are messages too)
        for (Method setter : setters(message.getClass())) {
            String getter = Character.toLowerCase(setter.getName().charAt(3)) + setter.getName().substring(4);
            Object held = message.getClass().getMethod(getter).invoke(message);
            if (held instanceof Message) {
                pruneFor((Message) held, version);
            } else if (held instanceof Collection) {
                for (Object element : (Collection<?>) held) {
                    if (element instanceof Message) {
                        pruneFor((Message) element, version);
                    }
                }
            }
        }
    }

    /** A value of {@code type} made from {@code seed}, or null for a type left at its default. */
    static Object value(Type type, int seed, Short version) throws Exception {
        if (type == byte.class) {
            return (byte) (seed % 3);
        } else if (type == short.class) {
            return (short) (seed % 30000);
        } else if (type == int.class) {
            return seed % 65000;  // within uint16 too (generated uint16 setters take an int)
        } else if (type == long.class) {
            return CLOCK_MS + seed;
        } else if (type == boolean.class) {
            return true;
        } else if (type == double.class) {
            return seed + 0.5;
        } else if (type == String.class) {
            return "s" + seed;
        } else if (type == Uuid.class) {
            return new Uuid(0x6b61666b616c6f67L, seed);
        } else if (type == byte[].class) {
            return new byte[] {(byte) seed, 1, 2};
        } else if (type == ByteBuffer.class) {
            return ByteBuffer.wrap(new byte[] {(byte) seed, 1, 2});
        } else if (type instanceof ParameterizedType && ((ParameterizedType) type).getRawType() == List.class) {
            Type element = ((ParameterizedType) type).getActualTypeArguments()[0];
            List<Object> list = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                Object e = boxed(element, (seed * 10 + i) % 1_000_000, version);
                if (e == null) {
                    return null;
                }
                list.add(e);
            }
            return list;
        } else if (type instanceof Class && Collection.class.isAssignableFrom((Class<?>) type)) {
            // a generated keyed collection (ImplicitLinkedHashMultiCollection<Element>)
            @SuppressWarnings("unchecked")
            Collection<Object> collection = (Collection<Object>) ((Class<?>) type).getConstructor().newInstance();
            Type element = ((ParameterizedType) ((Class<?>) type).getGenericSuperclass()).getActualTypeArguments()[0];
            for (int i = 0; i < 2; i++) {
                collection.add(filled((Class<?>) element, (seed * 10 + i) % 1_000_000, null));
            }
            return collection;
        } else if (type instanceof Class && Message.class.isAssignableFrom((Class<?>) type)) {
            return filled((Class<?>) type, (seed * 10) % 1_000_000, null);
        }
        return null;
    }

    /** A list element: a boxed scalar or a struct. */
    static Object boxed(Type type, int seed, Short version) throws Exception {
        if (type == Integer.class) {
            return value(int.class, seed, version);
        } else if (type == Long.class) {
            return value(long.class, seed, version);
        } else if (type == Short.class) {
            return value(short.class, seed, version);
        } else if (type == Byte.class) {
            return value(byte.class, seed, version);
        }
        return value(type, seed, version);
    }

    // ---------------------------------------------------------------- logs and DumpLogSegments

    /** A log being built: v2 batches, uncompressed, offsets from 0, timestamps from the frozen clock. */
    static final class Batches {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private long nextOffset;
        private final String pkg = recordPackage();
        private final Class<?> simpleRecord = cls("SimpleRecord");

        /** A record for the next batch (its timestamp: the clock plus the batch's base offset). */
        Object record(byte[] key, byte[] value) throws Exception {
            return simpleRecord.getConstructor(long.class, byte[].class, byte[].class)
                .newInstance(CLOCK_MS + nextOffset, key, value);
        }

        /** Appends one batch of {@code records} (MemoryRecords.withRecords). */
        void batch(List<Object> records) throws Exception {
            Object array = java.lang.reflect.Array.newInstance(simpleRecord, records.size());
            for (int i = 0; i < records.size(); i++) {
                java.lang.reflect.Array.set(array, i, records.get(i));
            }
            Method with = cls("MemoryRecords").getMethod("withRecords", long.class, Compression.class, array.getClass());
            append(with.invoke(null, nextOffset, Compression.NONE, array));
            nextOffset += records.size();
        }

        /** Appends a LEADER_CHANGE control batch (MemoryRecords.withLeaderChangeMessage). */
        void leaderChange(int epoch, LeaderChangeMessage message) throws Exception {
            Method with = cls("MemoryRecords").getMethod("withLeaderChangeMessage",
                long.class, long.class, int.class, ByteBuffer.class, LeaderChangeMessage.class);
            append(with.invoke(null, nextOffset, CLOCK_MS + nextOffset, epoch, ByteBuffer.allocate(256), message));
            nextOffset += 1;
        }

        private void append(Object memoryRecords) throws Exception {
            ByteBuffer buffer = (ByteBuffer) memoryRecords.getClass().getMethod("buffer").invoke(memoryRecords);
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            out.write(bytes);
        }

        byte[] bytes() {
            return out.toByteArray();
        }

        private Class<?> cls(String name) {
            try {
                return Class.forName(pkg + "." + name);
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
        }

        /** {@code org.apache.kafka.common.record}, or {@code ...record.internal} from 4.3. */
        private static String recordPackage() {
            try {
                Class.forName("org.apache.kafka.common.record.internal.MemoryRecords");
                return "org.apache.kafka.common.record.internal";
            } catch (ClassNotFoundException e) {
                return "org.apache.kafka.common.record";
            }
        }
    }

    /**
     * Runs the release's DumpLogSegments (kafka-tools' Java tool from 4.3, core's Scala tool before)
     * in a child JVM in {@code cwd}, writing its stdout to {@code base}.txt and stderr to {@code base}.stderr.
     */
    static void dump(Path cwd, Path base, String... args) throws IOException, InterruptedException {
        String main;
        try {
            Class.forName("org.apache.kafka.tools.DumpLogSegments");
            main = "org.apache.kafka.tools.DumpLogSegments";
        } catch (ClassNotFoundException e) {
            main = "kafka.tools.DumpLogSegments";
        }
        List<String> command = new ArrayList<>(List.of(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp", System.getProperty("java.class.path"), main));
        command.addAll(List.of(args));
        Path stdout = Paths.get(base + ".txt");
        Path stderr = Paths.get(base + ".stderr");
        Process p = new ProcessBuilder(command).directory(cwd.toFile())
            .redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("DumpLogSegments " + String.join(" ", args) + " did not finish");
        }
        // drop SLF4J's notes about which logger binding the classpath lacks: they say nothing about the data
        List<String> errors = Files.readAllLines(stderr, StandardCharsets.UTF_8).stream()
            .filter(line -> !line.startsWith("SLF4J: ")).collect(Collectors.toList());
        if (errors.isEmpty()) {
            Files.delete(stderr);
        } else {
            Files.write(stderr, errors, StandardCharsets.UTF_8);
        }
        if (p.exitValue() != 0) {
            throw new IOException("DumpLogSegments " + String.join(" ", args) + " exited " + p.exitValue()
                + ": " + String.join("\n", errors));
        }
    }
}
