// Licensed under the Apache License, Version 2.0, as the rest of Spool.
//
// Kafka's own serializers as a line-oriented process, for the byte-for-byte tests of
// libs/kafka-protocol: each command on standard input is answered by one line on standard output,
// made by the generated *Data classes of the kafka-clients jar that the tests pin, and their JSON
// converters (Kafka's own JSON form of a message).
//
//   encode <MessageName> <version> <json>  ->  ok <hex of the bytes Kafka writes>
//   decode <MessageName> <version> <hex>   ->  ok <Kafka's JSON of the message it reads>
//                                              (the hex of no bytes is -)
//   anything that fails                     ->  error <the exception, on one line>
//
// <MessageName> is the schema's name (ProduceRequest, RequestHeader, ConsumerProtocolAssignment).
// test/support/ensure-kafka-message-codec.sh compiles it with javac against the pinned jars.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public final class KafkaMessageCodec {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final Map<String, Codec> CODECS = new HashMap<>();

    /** A message class and its JSON converter's read and write methods. */
    private record Codec(Class<?> dataClass, Method readJson, Method writeJson) {}

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String answer;
            try {
                answer = "ok " + answer(line);
            } catch (Throwable error) {
                Throwable cause = error instanceof InvocationTargetException ? error.getCause() : error;
                answer = "error " + String.valueOf(cause).replace('\n', ' ');
            }
            out.println(answer);
            out.flush();
        }
    }

    private static String answer(String line) throws Exception {
        String[] parts = line.split(" ", 4);
        if (parts.length != 4) throw new IllegalArgumentException("expected: verb name version payload");
        Codec codec = codecOf(parts[1]);
        short version = Short.parseShort(parts[2]);
        switch (parts[0]) {
            case "encode": {
                JsonNode json = MAPPER.readTree(parts[3]);
                Message message = (Message) codec.readJson().invoke(null, json, version);
                ObjectSerializationCache cache = new ObjectSerializationCache();
                int size = message.size(cache, version);
                ByteBuffer buffer = ByteBuffer.allocate(size);
                message.write(new ByteBufferAccessor(buffer), cache, version);
                if (buffer.hasRemaining()) throw new IllegalStateException("size() disagrees with write()");
                return HEX.formatHex(buffer.array());
            }
            case "decode": {
                Message message = (Message) codec.dataClass().getConstructor().newInstance();
                byte[] bytes = parts[3].equals("-") ? new byte[0] : HEX.parseHex(parts[3]);
                ByteBuffer buffer = ByteBuffer.wrap(bytes);
                message.read(new ByteBufferAccessor(buffer), version);
                if (buffer.hasRemaining()) {
                    throw new IllegalStateException(buffer.remaining() + " bytes left after the message");
                }
                return MAPPER.writeValueAsString(codec.writeJson().invoke(null, message, version, true));
            }
            default:
                throw new IllegalArgumentException("unknown verb " + parts[0]);
        }
    }

    private static Codec codecOf(String name) throws Exception {
        Codec known = CODECS.get(name);
        if (known != null) return known;
        Class<?> dataClass;
        try {
            dataClass = Class.forName("org.apache.kafka.common.message." + name + "Data");
        } catch (ClassNotFoundException notData) {
            dataClass = Class.forName("org.apache.kafka.common.message." + name);
        }
        Class<?> converter = Class.forName(dataClass.getName() + "JsonConverter");
        Codec codec = new Codec(
            dataClass,
            converter.getMethod("read", JsonNode.class, short.class),
            converter.getMethod("write", dataClass, short.class, boolean.class));
        CODECS.put(name, codec);
        return codec;
    }
}
