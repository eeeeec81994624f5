package kafkalog.golden;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.snapshot.RawSnapshotWriter;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.apache.kafka.storage.internals.log.ProducerAppendInfo;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;

/**
 * The state files a broker keeps beside its logs, each written by the release's own code under the
 * frozen clock: a producer-state {@code .snapshot} (ProducerStateManager.takeSnapshot), the KRaft
 * bootstrap a formatted controller starts from (4.0-4.3 {@code bootstrap.checkpoint}, 4.4 the zero
 * checkpoint {@code 00000000000000000000-0000000000.checkpoint}) and a KRaft metadata snapshot
 * (RecordsSnapshotWriter). Classes that moved between releases are reached by reflection.
 */
final class StateFiles {
    /** The partition dir the producer snapshot is written in. */
    static final String PRODUCER_DIR = "payments-0";

    private StateFiles() {
    }

    /**
     * A producer-state snapshot at offset 14: an idempotent producer (two batches, the snapshot keeps
     * the last), a transactional one with its transaction open, and one whose only entry is a commit
     * marker (no batch metadata). Returns its path relative to {@code out}.
     */
    static String producerSnapshot(Path out) throws Exception {
        Path dir = out.resolve(PRODUCER_DIR);
        Files.createDirectories(dir);
        Time time = new WriterCases.FrozenTime(Generate.CLOCK_MS);
        ProducerStateManager psm = new ProducerStateManager(new TopicPartition("payments", 0), dir.toFile(), 60_000,
            new ProducerStateManagerConfig(86_400_000, false), time);
        dataBatch(psm, 1000L, (short) 0, 0, 4, 0L, false);
        dataBatch(psm, 1000L, (short) 0, 5, 9, 5L, false);
        dataBatch(psm, 2000L, (short) 3, 0, 2, 10L, true);
        ProducerAppendInfo marker = psm.prepareUpdate(3000L, AppendOrigin.REPLICATION);
        endTxnMarker(marker, (short) 5, 13L, Generate.CLOCK_MS + 13);
        psm.update(marker);
        psm.updateMapEndOffset(14L);
        psm.takeSnapshot();
        return PRODUCER_DIR + "/00000000000000000014.snapshot";
    }

    /** A batch of producer {@code pid}'s sequences {@code first..last} at offsets from {@code offset}. */
    private static void dataBatch(ProducerStateManager psm, long pid, short epoch, int first, int last, long offset,
                                  boolean transactional) {
        ProducerAppendInfo info = psm.prepareUpdate(pid, AppendOrigin.REPLICATION);
        long lastOffset = offset + last - first;
        info.appendDataBatch(epoch, first, last, Generate.CLOCK_MS + lastOffset, new LogOffsetMetadata(offset),
            lastOffset, transactional);
        psm.update(info);
    }

    /**
     * A COMMIT marker (coordinator epoch 7): {@code EndTransactionMarker} is in
     * {@code org.apache.kafka.common.record} up to 4.2 and {@code ...record.internal} from 4.3, and 4.4's
     * {@code appendEndTxnMarker} also takes the transaction version (0 here).
     */
    private static void endTxnMarker(ProducerAppendInfo info, short epoch, long offset, long timestamp) throws Exception {
        for (Method m : ProducerAppendInfo.class.getMethods()) {
            if (!m.getName().equals("appendEndTxnMarker")) {
                continue;
            }
            Class<?> markerClass = m.getParameterTypes()[0];
            Class<?> typeClass = Class.forName(markerClass.getPackageName() + ".ControlRecordType");
            Object commit = typeClass.getField("COMMIT").get(null);
            Object marker = markerClass.getConstructor(typeClass, int.class).newInstance(commit, 7);
            if (m.getParameterCount() == 4) {
                m.invoke(info, marker, epoch, offset, timestamp);
            } else {
                m.invoke(info, marker, epoch, offset, timestamp, (short) 0);
            }
            return;
        }
        throw new IllegalStateException("no ProducerAppendInfo.appendEndTxnMarker");
    }

    /**
     * The bootstrap records a controller is formatted with (the release's
     * {@code BootstrapMetadata.fromVersion(MetadataVersion.latestProduction(), ...)}): up to 4.3 written to
     * {@code bootstrap.checkpoint} as {@code BootstrapDirectory.writeBinaryFile} does (a
     * {@code BatchFileWriter}), in 4.4 to the zero snapshot as {@code Formatter.writeBoostrapSnapshot}
     * does (a {@code RecordsSnapshotWriter} at {@code Snapshots.BOOTSTRAP_SNAPSHOT_ID} in
     * {@code __cluster_metadata-0}); both with the frozen clock where Kafka reads {@code Time.SYSTEM}.
     * Returns the file's path relative to {@code out}.
     */
    static String bootstrap(Path out) throws Exception {
        Class<?> bootstrapMetadata = Class.forName("org.apache.kafka.metadata.bootstrap.BootstrapMetadata");
        Object metadata = bootstrapMetadata.getMethod("fromVersion", MetadataVersion.class, String.class)
            .invoke(null, MetadataVersion.latestProduction(), "format command");
        @SuppressWarnings("unchecked")
        List<ApiMessageAndVersion> records = (List<ApiMessageAndVersion>) bootstrapMetadata.getMethod("records").invoke(metadata);
        Class<?> batchFileWriter;
        try {
            Class.forName("org.apache.kafka.metadata.bootstrap.BootstrapDirectory");
            batchFileWriter = Class.forName("org.apache.kafka.metadata.util.BatchFileWriter");
        } catch (ClassNotFoundException e) {
            batchFileWriter = null;
        }
        if (batchFileWriter == null) {
            Object id = Class.forName("org.apache.kafka.snapshot.Snapshots").getField("BOOTSTRAP_SNAPSHOT_ID").get(null);
            return snapshot(out, id, Generate.CLOCK_MS, records);
        }
        Object writer = openBatchFileWriter(batchFileWriter, out.resolve("bootstrap.checkpoint"),
            new WriterCases.FrozenTime(Generate.CLOCK_MS));
        batchFileWriter.getMethod("append", List.class).invoke(writer, records);
        batchFileWriter.getMethod("close").invoke(writer);
        return "bootstrap.checkpoint";
    }

    /**
     * A KRaft snapshot of the metadata log, ending at {@code endOffset} in epoch 3, holding
     * {@code records}: {@code RecordsSnapshotWriter} over {@code FileRawSnapshotWriter.create} as the
     * controller writes one. Returns its path relative to {@code out}.
     */
    static String metadataSnapshot(Path out, long endOffset, List<ApiMessageAndVersion> records) throws Exception {
        Method create = createMethod();
        Object id = create.getParameterTypes()[1].getConstructor(long.class, int.class).newInstance(endOffset, 3);
        return snapshot(out, id, Generate.CLOCK_MS + endOffset - 1, records);
    }

    /** {@code records} in a snapshot {@code id} (an OffsetAndEpoch) of {@code __cluster_metadata-0}. */
    private static String snapshot(Path out, Object id, long lastContainedLogTimestamp, List<ApiMessageAndVersion> records)
            throws Exception {
        Path dir = out.resolve("__cluster_metadata-0");
        Files.createDirectories(dir);
        RawSnapshotWriter raw = (RawSnapshotWriter) createMethod().invoke(null, dir, id);
        RecordsSnapshotWriter.Builder builder = new RecordsSnapshotWriter.Builder()
            .setTime(new WriterCases.FrozenTime(Generate.CLOCK_MS))
            .setLastContainedLogTimestamp(lastContainedLogTimestamp)
            .setRawSnapshotWriter(raw);
        // the controller's batch limit, 8 MiB (setMaxBatchSize up to 4.0, setMaxBatchSizeBytes from 4.1)
        for (Method m : RecordsSnapshotWriter.Builder.class.getMethods()) {
            if (m.getName().startsWith("setMaxBatchSize")) {
                m.invoke(builder, 8 * 1024 * 1024);
            }
        }
        RecordsSnapshotWriter<ApiMessageAndVersion> writer = builder.build(new MetadataRecordSerde());
        writer.append(records);
        writer.freeze();
        writer.close();
        long offset = (long) id.getClass().getMethod("offset").invoke(id);
        int epoch = (int) id.getClass().getMethod("epoch").invoke(id);
        return String.format("__cluster_metadata-0/%020d-%010d.checkpoint", offset, epoch);
    }

    /** {@code FileRawSnapshotWriter.create(Path, OffsetAndEpoch)}: OffsetAndEpoch left raft for server-common in 4.1. */
    private static Method createMethod() {
        for (Method m : org.apache.kafka.snapshot.FileRawSnapshotWriter.class.getMethods()) {
            if (m.getName().equals("create") && Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 2) {
                return m;
            }
        }
        throw new IllegalStateException("no FileRawSnapshotWriter.create");
    }

    /**
     * {@code BatchFileWriter.open(path)} of 4.0-4.3, step by step, with {@code time} where it takes
     * {@code Time.SYSTEM}: a {@code BatchAccumulator} (epoch 0, base offset 0, linger and batch count
     * unbounded, 8 MiB batches from a {@code BatchMemoryPool} of five), its snapshot header (version 0,
     * last contained log timestamp 0) appended at {@code time} and drained, the file created new.
     */
    static Object openBatchFileWriter(Class<?> batchFileWriter, Path file, Time time) throws Exception {
        Class<?> accumulatorClass = Class.forName("org.apache.kafka.raft.internals.BatchAccumulator");
        Object pool = Class.forName("org.apache.kafka.raft.internals.BatchMemoryPool")
            .getConstructor(int.class, int.class).newInstance(5, 8 * 1024 * 1024);
        java.lang.reflect.Constructor<?> make = null;
        for (java.lang.reflect.Constructor<?> c : accumulatorClass.getConstructors()) {
            if (c.getParameterCount() == 9) {
                make = c;
            }
        }
        Object accumulator = make.newInstance(0, 0L, Integer.MAX_VALUE, 8 * 1024 * 1024, Integer.MAX_VALUE, pool, time,
            org.apache.kafka.common.compress.Compression.NONE, new MetadataRecordSerde());
        org.apache.kafka.common.message.SnapshotHeaderRecord header = new org.apache.kafka.common.message.SnapshotHeaderRecord()
            .setVersion((short) 0).setLastContainedLogTimestamp(0);
        accumulatorClass.getMethod("appendSnapshotHeaderRecord", header.getClass(), long.class)
            .invoke(accumulator, header, time.milliseconds());
        accumulatorClass.getMethod("forceDrain").invoke(accumulator);
        java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(file,
            java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE);
        java.lang.reflect.Constructor<?> writer = batchFileWriter.getDeclaredConstructor(
            java.nio.channels.FileChannel.class, accumulatorClass, Time.class);
        writer.setAccessible(true);
        return writer.newInstance(channel, accumulator, time);
    }
}
