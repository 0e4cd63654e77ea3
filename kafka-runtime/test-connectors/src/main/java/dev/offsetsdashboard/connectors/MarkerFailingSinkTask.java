package dev.offsetsdashboard.connectors;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.Map;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * Appends each record's value to a file, one per line, and throws a (non-retriable)
 * ConnectException on a record whose value equals {@code fail.on.value}: the task fails
 * before writing anything of that batch, so its committed offset stays before the marker.
 */
public class MarkerFailingSinkTask extends SinkTask {
    private Path file;
    private String failOn;

    @Override
    public String version() {
        return "1.0.0";
    }

    @Override
    public void start(Map<String, String> props) {
        file = Paths.get(props.get(MarkerFailingSinkConnector.FILE));
        failOn = props.get(MarkerFailingSinkConnector.FAIL_ON_VALUE);
    }

    @Override
    public void put(Collection<SinkRecord> records) {
        StringBuilder lines = new StringBuilder();
        for (SinkRecord record : records) {
            String value = String.valueOf(record.value());
            if (value.equals(failOn)) {
                throw new ConnectException("Poison record at " + record.topic() + "-"
                    + record.kafkaPartition() + " offset " + record.kafkaOffset());
            }
            lines.append(value).append('\n');
        }
        if (lines.length() == 0) {
            return;
        }
        try {
            Files.write(file, lines.toString().getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new ConnectException("Could not write " + file, e);
        }
    }

    @Override
    public void stop() {
    }
}
