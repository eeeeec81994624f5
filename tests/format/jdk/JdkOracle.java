// Expected outputs for kafkalog's tests, computed by the JDK (and snappy-java) that Kafka runs on.
// Not part of the test run: the files it wrote are committed next to it. To regenerate (JDK 17):
//   java JdkOracle.java utf8 < utf8.in > utf8.out
//   java JdkOracle.java epoch < checkpoint.in > epoch.out      (also: offset, pm)
//   java -cp snappy-java-1.1.10.x.jar JdkOracle.java snappy < snappy.in > snappy.out
//   java -cp snappy-java-1.1.10.x.jar JdkOracle.java snappy-write < compress.in > snappy-write.out
//   java -cp lz4-java-1.8.0.jar JdkOracle.java lz4 < compress.in > lz4.out
// (README.md in this folder says which jars and native libraries wrote the committed tables.)
// Each input line is the hex of one byte string; each output line answers the input line of the
// same number. The checkpoint modes read as Kafka's readers do at 1eb7644 (CheckpointFile,
// LeaderEpochCheckpointFile, OffsetCheckpointFile, PartitionMetadataReadBuffer, Uuid.fromString),
// with the same JDK calls: BufferedReader.readLine, Pattern.split, Integer.parseInt,
// Long.parseLong, Base64.getUrlDecoder.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.regex.Pattern;

public class JdkOracle {
    static final Pattern WS = Pattern.compile("\\s+");
    static final Pattern COLON_WS = Pattern.compile(":\\s+");

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    static String units(String s) {  // UTF-16 code units, 4 hex digits each
        StringBuilder sb = new StringBuilder();
        for (char c : s.toCharArray()) sb.append(String.format("%04x", (int) c));
        return sb.toString();
    }

    static List<String> lines(byte[] b) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(new ByteArrayInputStream(b),
            StandardCharsets.UTF_8.newDecoder()));  // a decoder that reports malformed input, as Files.newBufferedReader
        List<String> out = new ArrayList<>();
        for (String l = r.readLine(); l != null; l = r.readLine()) out.add(l);
        return out;
    }

    static String checkpoint(byte[] b, boolean offsets) throws IOException {
        List<String> ls = lines(b);
        if (ls.isEmpty()) return "ok";
        if (Integer.parseInt(ls.get(0)) != 0) return "error version";
        if (ls.size() == 1) return "ok";
        int count = Integer.parseInt(ls.get(1));
        List<String> entries = new ArrayList<>(count);  // a negative count fails here, as in Kafka
        for (String l : ls.subList(2, ls.size())) {
            String[] p = WS.split(l);
            if (offsets && p.length == 3)
                entries.add(units(p[0]) + "," + Integer.parseInt(p[1]) + "," + Long.parseLong(p[2]));
            else if (!offsets && p.length == 2)
                entries.add(Integer.parseInt(p[0]) + "," + Long.parseLong(p[1]));
            else return "error fields";
        }
        if (entries.size() != count) return "error count";
        return "ok " + String.join(" ", entries);
    }

    static String partitionMetadata(byte[] b) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(new ByteArrayInputStream(b),
            StandardCharsets.UTF_8.newDecoder()));
        String[] v = COLON_WS.split(r.readLine());
        if (v.length != 2) return "error fields";
        int version = Integer.parseInt(v[1]);
        if (version < 0) return "error version";
        String[] t = COLON_WS.split(r.readLine());
        if (t.length != 2) return "error fields";
        if (t[1].length() > 24) return "error long";
        byte[] id = Base64.getUrlDecoder().decode(t[1]);
        if (id.length != 16) return "error size";
        if (Arrays.equals(id, new byte[16])) return "error zero";
        return "ok " + version + " " + Base64.getUrlEncoder().withoutPadding().encodeToString(id);
    }

    static String snappy(byte[] b) throws Exception {
        Class<?> cls = Class.forName("org.xerial.snappy.SnappyInputStream");
        InputStream in = (InputStream) cls.getConstructor(InputStream.class).newInstance(new ByteArrayInputStream(b));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        for (int n = in.read(buf); n != -1; n = in.read(buf)) out.write(buf, 0, n);
        StringBuilder sb = new StringBuilder("ok ");
        for (byte x : out.toByteArray()) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    static String hex(byte[] b, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) sb.append(String.format("%02x", b[i]));
        return sb.toString();
    }

    // What Kafka's SnappyOutputStream writes for the input (the whole stream), then what
    // Snappy.compress makes of the whole input at once (one raw block of several 64 KiB fragments;
    // "-" for shorter inputs).
    static String snappyWrite(byte[] b) throws Exception {
        Class<?> cls = Class.forName("org.xerial.snappy.SnappyOutputStream");
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        OutputStream out = (OutputStream) cls.getConstructor(OutputStream.class).newInstance(sink);
        out.write(b);
        out.close();
        if (b.length <= 65536) return "ok " + hex(sink.toByteArray(), sink.size()) + " -";  // one fragment: the stream has it
        byte[] raw = (byte[]) Class.forName("org.xerial.snappy.Snappy").getMethod("compress", byte[].class).invoke(null, (Object) b);
        return "ok " + hex(sink.toByteArray(), sink.size()) + " " + hex(raw, raw.length);
    }

    static final int[] LZ4_LEVELS = {9, 1, 2, 5, 12, 17};  // 9: the fast compressor, as Kafka's default

    // The raw LZ4 blocks lz4-java makes of each 64 KiB piece of the input (':' between pieces), by
    // the compressor Kafka's Lz4BlockOutputStream picks for each level of LZ4_LEVELS: the fast one
    // at 9, highCompressor(level) otherwise ("-" for inputs over 4 KiB); LZ4Factory.fastestInstance(), as Kafka.
    static String lz4(byte[] b) throws Exception {
        Class<?> factory = Class.forName("net.jpountz.lz4.LZ4Factory");
        Object f = factory.getMethod("fastestInstance").invoke(null);
        StringBuilder sb = new StringBuilder("ok");
        for (int level : LZ4_LEVELS) {
            Object c = level == 9 ? factory.getMethod("fastCompressor").invoke(f)
                : factory.getMethod("highCompressor", int.class).invoke(f, level);
            java.lang.reflect.Method compress = Class.forName("net.jpountz.lz4.LZ4Compressor").getMethod("compress", byte[].class, int.class, int.class, byte[].class, int.class, int.class);
            sb.append(' ');
            if (level != 9 && b.length > 4096) {  // HC on the short inputs only, to keep the table small
                sb.append('-');
                continue;
            }
            for (int off = 0; off == 0 || off < b.length; off += 65536) {
                int len = Math.min(65536, b.length - off);
                byte[] dest = new byte[len + len / 255 + 16];
                int n = (Integer) compress.invoke(c, b, off, len, dest, 0, dest.length);
                if (off > 0) sb.append(':');
                sb.append(hex(dest, n));
            }
        }
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            byte[] b = unhex(line.trim());
            String answer;
            try {
                switch (args[0]) {
                    case "utf8": answer = units(new String(b, StandardCharsets.UTF_8)); break;
                    case "epoch": answer = checkpoint(b, false); break;
                    case "offset": answer = checkpoint(b, true); break;
                    case "pm": answer = partitionMetadata(b); break;
                    case "snappy": answer = snappy(b); break;
                    case "snappy-write": answer = snappyWrite(b); break;
                    case "lz4": answer = lz4(b); break;
                    default: throw new IllegalArgumentException(args[0]);
                }
            } catch (Throwable e) {
                Throwable c = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
                answer = "error " + c.getClass().getSimpleName();
            }
            System.out.println(answer);
        }
    }
}
