package dev.offsetsdashboard.connectors;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * Appends each record's value to a file and the next offset of its partition to an offsets
 * file, then reports nothing to Connect: {@link #preCommit} returns an empty map, so the
 * worker never commits the group, and {@link #open} seeks to what the offsets file holds.
 */
public class ExternalOffsetsSinkTask extends SinkTask {
    private Path file;
    private Path offsetsFile;
    private final Map<TopicPartition, Long> next = new HashMap<>();

    @Override
    public String version() {
        return "1.0.0";
    }

    @Override
    public void start(Map<String, String> props) {
        file = Paths.get(props.get(ExternalOffsetsSinkConnector.FILE));
        offsetsFile = Paths.get(props.get(ExternalOffsetsSinkConnector.OFFSETS_FILE));
        next.putAll(readOffsets());
    }

    @Override
    public void open(Collection<TopicPartition> partitions) {
        Map<TopicPartition, Long> resume = new HashMap<>();
        for (TopicPartition partition : partitions) {
            Long offset = next.get(partition);
            if (offset != null) {
                resume.put(partition, offset);
            }
        }
        if (!resume.isEmpty()) {
            context.offset(resume);
        }
    }

    @Override
    public void put(Collection<SinkRecord> records) {
        if (records.isEmpty()) {
            return;
        }
        StringBuilder lines = new StringBuilder();
        for (SinkRecord record : records) {
            lines.append(record.value()).append('\n');
            next.put(new TopicPartition(record.topic(), record.kafkaPartition()), record.kafkaOffset() + 1);
        }
        try {
            Files.write(file, lines.toString().getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            writeOffsets();
        } catch (IOException e) {
            throw new ConnectException("Could not write " + file + " or " + offsetsFile, e);
        }
    }

    @Override
    public Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
        // The offsets live in offsetsFile; nothing is committed to the consumer group.
        return Collections.emptyMap();
    }

    @Override
    public void stop() {
    }

    private Map<TopicPartition, Long> readOffsets() {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        if (!Files.exists(offsetsFile)) {
            return offsets;
        }
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(offsetsFile, StandardCharsets.UTF_8)) {
            properties.load(reader);
        } catch (IOException e) {
            throw new ConnectException("Could not read " + offsetsFile, e);
        }
        for (String key : properties.stringPropertyNames()) {
            // Topic names hold no ':' (Kafka allows [a-zA-Z0-9._-]), so the last one splits.
            int colon = key.lastIndexOf(':');
            offsets.put(new TopicPartition(key.substring(0, colon), Integer.parseInt(key.substring(colon + 1))),
                Long.parseLong(properties.getProperty(key)));
        }
        return offsets;
    }

    private void writeOffsets() throws IOException {
        Properties properties = new Properties();
        for (Map.Entry<TopicPartition, Long> entry : next.entrySet()) {
            properties.setProperty(entry.getKey().topic() + ":" + entry.getKey().partition(),
                Long.toString(entry.getValue()));
        }
        // Written aside and renamed, so a crash leaves the old file or the new one, never half.
        Path partial = offsetsFile.resolveSibling(offsetsFile.getFileName() + ".partial");
        try (Writer writer = Files.newBufferedWriter(partial, StandardCharsets.UTF_8)) {
            properties.store(writer, null);
        }
        Files.move(partial, offsetsFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
